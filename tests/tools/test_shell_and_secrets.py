"""shell.run in bubblewrap, its refusal without bubblewrap, cancellation, and the canary secret."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio

from air.contracts.tool_runs import ToolEvent, ToolResultEnvelope
from air.tools import SandboxRunner
from tests.tools.conftest import Env, assert_payloads_valid

CANARY = "sk-ant-CANARY0123456789abcdefXYZ"


async def _run(env: Env, command: str, **kw: object) -> dict[str, object]:
    # The engine would ask; here the sandbox itself is under test, so let headless asks run.
    env.engine.headless_allow_ask = True
    res = await env.registry.call("shell.run", {"command": command, **kw}, env.ctx(headless=True))
    assert res.status == "ok", (command, res.error)
    assert isinstance(res.output, dict)
    return res.output


async def test_sandbox_blocks_outside_writes_hooks_and_network(env: Env) -> None:
    assert shutil.which("bwrap") is not None
    (env.root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    out = await _run(env, f"touch src/ok.txt; cp src/ok.txt {env.outside}/x 2>&1; echo rc=$?")
    assert (env.root / "src" / "ok.txt").exists()
    assert not (env.outside / "x").exists()
    assert "rc=1" in str(out["stdout"])
    out = await _run(
        env, "cp src/ok.txt .git/hooks/pre-commit 2>&1; echo rc=$?; cat .git/hooks/pre-commit"
    )
    assert "rc=1" in str(out["stdout"])
    assert (env.root / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"
    out = await _run(env, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert str(out["stdout"]).split() == ["lo"]


async def test_background_and_setsid_grandchildren_do_not_survive(env: Env) -> None:
    marker = env.root / "alive"
    out = await _run(
        env, f"(sleep 2; touch {marker}) & setsid sh -c 'sleep 2; touch {marker}2' & echo started"
    )
    assert "started" in str(out["stdout"])
    await trio.sleep(3)
    assert not await trio.Path(marker).exists()
    assert not await trio.Path(f"{marker}2").exists()


async def test_timeout_kills_the_group(env: Env) -> None:
    res = await env.registry.call(
        "shell.run", {"command": "sleep 30", "timeout_s": 0.5}, env.ctx(headless=True)
    )
    assert res.status == "error"
    assert res.error is not None
    assert res.error.kind == "timeout"
    assert "command.failed" in env.types()
    (row,) = env.rows("command_runs")
    assert row["tool_run_id"] == res.tool_run_id
    assert row["command"] == "sleep 30"
    assert row["exit_code"] is None
    assert row["completed_at"] is not None or row["cancelled_at"] is not None


async def test_caller_cancellation_records_tool_cancelled(env: Env) -> None:
    with trio.move_on_after(0.5) as scope:
        await env.registry.call("shell.run", {"command": "sleep 30"}, env.ctx(headless=True))
    assert scope.cancelled_caught
    types = env.types()
    assert types[-1] == "tool.cancelled"
    assert "command.failed" in types
    (tool_row,) = env.rows("tool_runs")
    assert tool_row["status"] == "cancelled"
    failed = env.payloads("command.failed")
    assert failed[-1]["cancelled"] is True
    assert_payloads_valid(env.events())


async def test_streaming_yields_deltas_then_one_envelope(env: Env) -> None:
    env.engine.headless_allow_ask = True
    items: list[object] = []
    async with env.registry.call_streaming(
        "shell.run", {"command": "echo one; echo two >&2; echo three"}, env.ctx(headless=True)
    ) as stream:
        async for item in stream:
            items.append(item)
    envelopes = [i for i in items if isinstance(i, ToolResultEnvelope)]
    assert len(envelopes) == 1
    assert items[-1] is envelopes[0]
    progress = [i for i in items if isinstance(i, ToolEvent)]
    assert "".join(str(e.data) for e in progress if e.kind == "stdout") == "one\nthree\n"
    assert "".join(str(e.data) for e in progress if e.kind == "stderr") == "two\n"
    published = await env.published()
    deltas = [e for e in published if e.type == "command.stdout.delta"]
    assert "".join(str(e.payload["data"]) for e in deltas) == "one\nthree\n"
    assert not [e for e in env.events() if e.type.endswith(".delta")]  # ephemeral: not stored
    assert_payloads_valid(published)
    (row,) = env.rows("command_runs")
    assert row["exit_code"] == 0
    assert row["stdout_artifact_id"] is not None
    log = env.session.artifacts.read(row["stdout_artifact_id"])
    assert log.content == b"one\nthree\n"


async def test_without_bubblewrap_every_command_is_refused(tmp_path: Path) -> None:
    env = Env(tmp_path, runner=SandboxRunner(bwrap_path=None))
    try:
        await _refusal_checks(env)
    finally:
        env.close()


async def _refusal_checks(env: Env) -> None:
    env.engine.headless_allow_ask = True
    for command in ("ls src", "touch src/new"):
        res = await env.registry.call("shell.run", {"command": command}, env.ctx(headless=True))
        assert res.status == "error"
        assert res.error is not None
        assert res.error.kind == "environment_error"
        assert "bubblewrap" in str(res.error.user_action)
    assert not await trio.Path(env.root / "src" / "new").exists()
    assert "command.started" not in env.types()


async def test_canary_secret_never_recorded(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", CANARY)
    env.redactor.register_environment(os.environ)
    (env.root / "config.txt").write_text(f"endpoint=x\nkey={CANARY}\n")
    ctx = env.ctx(headless=True)
    await env.registry.call("fs.read", {"path": "config.txt"}, ctx)
    await env.registry.call("fs.search", {"pattern": "key"}, ctx)
    await env.registry.call(
        "fs.edit",
        {"path": "config.txt", "old_string": "endpoint=x", "new_string": "endpoint=y"},
        ctx,
    )
    await env.registry.call(
        "shell.run", {"command": "cat config.txt; echo $MY_SERVICE_API_KEY; env"}, ctx
    )
    await env.registry.call("fs.write", {"path": "leak.txt", "content": f"token {CANARY}"}, ctx)
    await trio.run_process(["git", "-C", str(env.root), "add", "-A"])
    await env.registry.call("git.diff", {"staged": True}, ctx)
    await env.registry.call("git.commit", {"message": f"commit {CANARY}"}, ctx)
    assert len(env.events()) > 10
    published = await env.published()
    assert any(e.type == "command.stdout.delta" for e in published)
    for event in published:
        assert CANARY not in event.model_dump_json()
    files = [p for p in await trio.Path(env.root / ".air").rglob("*") if await p.is_file()]
    assert any(p.name == "session.db" for p in files)
    assert any(p.suffix == ".diff" for p in files)
    for path in files:
        data = await path.read_bytes()
        assert CANARY.encode() not in data, path
