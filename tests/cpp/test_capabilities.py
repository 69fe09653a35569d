"""CapabilityRegistry: manifests validated, the lifecycle recorded durably, trust only changes
defaults (real session database, real ToolRegistry and PermissionEngine)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from air.capabilities import (
    CPP_CAPABILITY,
    CapabilityManifestValidator,
    CapabilityRegistry,
    builtin_capabilities,
    load_capabilities,
)
from air.contracts.capability import CapabilityState
from air.contracts.error import AirException
from tests.tools.conftest import Env

EXAMPLE = Path(__file__).parents[2] / "examples" / "cpp-stats"
_ORDER = ["discovered", "validated", "doctor_checked", "enabled", "registered", "active"]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    yield made
    made.close()


def _registry(env: Env, **kw: Any) -> CapabilityRegistry:
    return CapabilityRegistry(
        record=env.session.ingestor.ingest_sync,
        session_id=env.session_id,
        builtins=builtin_capabilities(env.runner),
        project_root=str(env.root),
        user_dir=str(env.tmp / "user-caps"),
        **kw,
    )


def _transitions(env: Env, cid: str) -> list[str]:
    return [
        p["to_state"] for p in env.payloads("capability.state.changed") if p["capability_id"] == cid
    ]


def _write_manifest(env: Env, name: str, body: dict[str, Any]) -> None:
    folder = env.root / ".air" / "shared" / "capabilities"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(body))


def test_builtin_cpp_capability_goes_through_the_whole_lifecycle(env: Env) -> None:
    records = load_capabilities(
        env.registry,
        record=env.session.ingestor.ingest_sync,
        session_id=env.session_id,
        project_root=str(env.root),
        sandbox=env.runner,
        user_dir=str(env.tmp / "none"),
    )
    assert records["cpp"].state == CapabilityState.ACTIVE
    assert _transitions(env, "cpp") == _ORDER
    names = {d.name for d in env.registry.list()}
    assert {"cpp.detect", "cpp.configure", "cpp.build", "cpp.test", "cpp.cppcheck"} <= names
    assert records["cpp"].prompt_posture == "auto"


def test_a_tool_whose_program_is_missing_is_left_out(env: Env) -> None:
    reg = _registry(env, which=lambda n: None if n == "cppcheck" else shutil.which(n))
    reg.load(env.registry)
    names = {d.name for d in env.registry.list()}
    assert "cpp.build" in names
    assert "cpp.cppcheck" not in names
    assert "cpp.cppcheck" in reg.records["cpp"].skipped_tools


def test_missing_dependency_fails_the_doctor_check(env: Env) -> None:
    manifest = CPP_CAPABILITY.model_copy(update={"dependencies": ["no-such-program-air"]})
    reg = CapabilityRegistry(
        record=env.session.ingestor.ingest_sync,
        session_id=env.session_id,
        builtins=[(manifest, builtin_capabilities(env.runner)[0][1])],
        user_dir=str(env.tmp / "none"),
    )
    reg.load(env.registry)
    assert reg.state("cpp") == CapabilityState.FAILED
    assert _transitions(env, "cpp") == ["discovered", "validated", "failed"]
    assert not [d for d in env.registry.list() if d.name.startswith("cpp.")]


def test_project_local_manifest_waits_for_approval_and_cannot_claim_more_trust(env: Env) -> None:
    _write_manifest(
        env,
        "lint.json",
        {
            "capability_id": "lint",
            "name": "project lint",
            "version": "0.1",
            "trust": "built_in",
            "tools": [
                {
                    "name": "lint.run",
                    "description": "lint",
                    "category": "static_analysis",
                    "input_schema": {"type": "object", "properties": {}},
                    "command": "true",
                }
            ],
        },
    )
    reg = _registry(env)
    reg.load(env.registry)
    rec = reg.records["lint"]
    assert rec.manifest.trust.value == "project_local"  # where it was found, not what it says
    assert rec.state == CapabilityState.DOCTOR_CHECKED  # not enabled by default
    assert rec.prompt_posture == "ask"
    with pytest.raises(AirException) as caught:
        reg.enable("lint")
    assert caught.value.kind == "permission_denied"
    assert caught.value.user_action
    reg.enable("lint", approved=True)
    reg.register_tools(env.registry)
    # a registry given no command registrar (IMPL-CAP-1) has no implementation to register
    assert reg.state("lint") == CapabilityState.FAILED
    assert "lint.run" not in {d.name for d in env.registry.list()}
    assert _transitions(env, "lint") == [*_ORDER[:4], "failed"]


def test_a_manifest_cannot_impersonate_a_builtin_or_take_builtin_names(env: Env) -> None:
    _write_manifest(
        env,
        "cpp.json",
        {"capability_id": "cpp", "name": "evil", "version": "9", "tools": []},
    )
    reg = _registry(env)
    reg.load(env.registry)
    assert reg.records["cpp"].source == "builtin"
    assert reg.state("cpp") == CapabilityState.ACTIVE
    failed = [p for p in env.payloads("capability.state.changed") if p["to_state"] == "failed"]
    assert any("already provided by builtin" in (p["reason"] or "") for p in failed)


def test_validator_rejects_bad_manifests() -> None:
    v = CapabilityManifestValidator(frozenset({"cpp"}))
    tool = {"description": "x", "category": "shell", "input_schema": {"type": "object"}}
    cases: dict[str, dict[str, Any]] = {
        "schema_version": {"schema_version": 2, "capability_id": "a1", "name": "a", "version": "1"},
        "belongs to air": {
            "capability_id": "fs",
            "name": "a",
            "version": "1",
            "tools": [{**tool, "name": "fs.write"}],
        },
        "declared twice": {
            "capability_id": "a1",
            "name": "a",
            "version": "1",
            "tools": [{**tool, "name": "a1.x"}, {**tool, "name": "a1.x"}],
        },
        "namespace": {
            "capability_id": "a1",
            "name": "a",
            "version": "1",
            "tools": [{**tool, "name": "other.x"}],
        },
        "object schema": {
            "capability_id": "a1",
            "name": "a",
            "version": "1",
            "tools": [{**tool, "name": "a1.x", "input_schema": {"type": "string"}}],
        },
        "untrusted": {
            "capability_id": "a1",
            "name": "a",
            "version": "1",
            "trust": "untrusted",
            "tools": [{**tool, "name": "a1.x", "permissions": {"network": True}}],
        },
        "reserved by a built-in": {
            "capability_id": "cpp",
            "name": "a",
            "version": "1",
            "trust": "user_installed",
        },
        "only air's own": {"capability_id": "a1", "name": "a", "version": "1", "trust": "built_in"},
    }
    for expected, manifest in cases.items():
        result = v.validate(manifest)
        assert not result.ok, expected
        assert any(
            expected in e or (expected == "schema_version" and "schema_version" in e)
            for e in result.errors
        ), (expected, result.errors)
    assert v.validate(CPP_CAPABILITY).ok


def test_lifecycle_order_is_enforced(env: Env) -> None:
    reg = _registry(env)
    reg.discover()
    with pytest.raises(AirException) as caught:
        reg.enable("cpp")
    assert caught.value.kind == "validation_error"


async def test_trust_never_bypasses_the_permission_engine(env: Env) -> None:
    shutil.copytree(EXAMPLE, env.root, dirs_exist_ok=True)
    _registry(env).load(env.registry)
    ctx = env.ctx(agent_id="ag_1", denied_paths=["summary"])
    result = await env.registry.call("cpp.build", {"source_dir": "summary"}, ctx)
    assert result.status in ("error", "denied")
    assert result.decision is not None
    assert result.decision.action == "deny"
    assert not (env.root / "build").exists()
    assert not [r for r in env.rows("command_runs") if r["command"].startswith("cmake")]


def test_the_runs_capability_events_commit_in_one_transaction(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # air run's loader (air.cli.factory): every lifecycle event of every capability, one COMMIT
    from air.cli.factory import _load_capabilities

    monkeypatch.setenv("HOME", str(env.tmp / "home"))
    statements: list[str] = []
    env.session.db.conn.set_trace_callback(statements.append)
    try:
        _load_capabilities(env.registry, env.session, env.runner)
    finally:
        env.session.db.conn.set_trace_callback(None)
    assert _transitions(env, "cpp") == _ORDER
    assert [s for s in statements if s.strip().upper() == "COMMIT"] == ["COMMIT"]
