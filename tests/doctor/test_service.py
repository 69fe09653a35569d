"""DoctorService pieces with real parts: the fix gate (a repair may write only air's own
state), read-only mode never repairs, provider reachability over real HTTP on 127.0.0.1,
C++ tools only for a C++ project, schema introspection with sqlite-utils."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.cli.doctor import build_checks, make_gate
from air.contracts.doctor_report import DoctorMode, DoctorRunInput
from air.contracts.provider import ModelsConfig
from air.doctor.database_check import DatabaseCheck
from air.doctor.provider_check import ProviderCheck
from air.doctor.service import DoctorService, Fix, Problem, issue
from tests.doctor.helpers import make_project, write_session


class _PlantedCheck:
    """A check whose single problem carries a repair writing ``target``."""

    name = "planted"

    def __init__(self, target: str) -> None:
        self.target = target
        self.applied = 0

    async def run(self) -> list[Problem]:
        async def apply() -> str:
            self.applied += 1
            return "done"

        found = issue(self.name, "warning", "planted", "nothing")
        return [Problem(found, Fix(f"write {self.target}", (self.target,), apply))]


@pytest.mark.parametrize(
    ("where", "allowed"),
    [
        (".air/local/state/runs", True),
        (".air/local/quarantine", True),
        ("src/main.py", False),
        ("HOME/.ssh/id_rsa", False),
        ("/etc/passwd", False),
        ("OUTSIDE/elsewhere", False),
    ],
)
async def test_fix_gate_allows_only_air_state(
    tmp_path: Path, where: str, allowed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home = make_project(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    target = (
        where.replace("HOME", str(home)).replace("OUTSIDE", str(tmp_path / "outside"))
        if not where.startswith(".air") and not where.startswith("src")
        else str(project / where)
    )
    check = _PlantedCheck(target)
    service = DoctorService(
        str(project), [check], authorize=make_gate(str(project)), home=str(home)
    )
    report = await service.run(DoctorRunInput(mode=DoctorMode.FIX))
    assert [f.status for f in report.fixes] == (["fixed"] if allowed else ["refused"])
    assert check.applied == (1 if allowed else 0)


async def test_read_only_mode_never_repairs(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    check = _PlantedCheck(str(project / ".air" / "local" / "state"))
    service = DoctorService(str(project), [check], authorize=lambda fix: None, home=str(home))
    report = await service.run(DoctorRunInput())
    assert check.applied == 0
    assert report.fixes == []
    assert [i.check for i in report.problems] == ["planted"]
    assert [i.check for i in report.to_output().issues] == ["planted"]


@pytest.fixture
def http_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_local_base_url_reachability(http_server: str) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    models = {"up": {"kind": "openai_compatible", "base_url": http_server, "models": {}}}
    models["down"] = {"kind": "openai_compatible", "base_url": dead, "models": {}}
    config = ModelsConfig.model_validate({"providers": models})
    check = ProviderCheck(lambda: config, {}, timeout_s=5)
    problems = await check.run()
    assert [p.issue.check for p in problems] == ["providers.down"]
    assert problems[0].issue.user_action
    assert check.facts["providers"]["up"]["reachable"] is True


RETIRED, FAILS = "was retired by its vendor on", ": every request to it fails"


async def test_a_retired_model_in_the_configuration_is_reported() -> None:
    """The default being one its vendor retired blocks every run (air run refuses it); a role's
    or a ladder rung's is a warning; a gateway's (its own base_url) is not air's to judge."""
    from air.llm.lifecycle import retired_refusal

    models: dict[str, dict[str, object]] = {
        "claude-opus-4-1": {},
        "claude-sonnet-4": {},
        "claude-opus-5-5": {},
    }
    config = ModelsConfig.model_validate(
        {
            "default": "a/claude-opus-4-1",
            "roles": {"reviewer": "a/claude-sonnet-4"},
            "escalation": ["a/claude-opus-5-5"],
            "providers": {"a": {"kind": "anthropic", "models": models}},
        }
    )
    problems = await ProviderCheck(lambda: config, {}, retired=retired_refusal).run()
    said = [(p.issue.check, p.issue.severity, p.issue.message) for p in problems]
    assert said == [
        ("providers.retired", "blocking", f"a/claude-opus-4-1 {RETIRED} 2026-08-05{FAILS}"),
        ("providers.retired", "warning", f"a/claude-sonnet-4 {RETIRED} 2026-06-15{FAILS}"),
    ]
    assert "claude-opus-5-5" in (problems[0].issue.user_action or "")
    url = "https://gateway.example/anthropic"
    gateway = ModelsConfig.model_validate(
        {
            **config.model_dump(exclude={"providers"}),
            "providers": {"a": {"kind": "anthropic", "base_url": url, "models": models}},
        }
    )
    assert await ProviderCheck(lambda: gateway, {}, retired=retired_refusal).run() == []


async def test_auth_ref_unset_is_reported_without_the_value() -> None:
    config = ModelsConfig.model_validate(
        {"providers": {"a": {"kind": "anthropic", "auth_ref": "AIR_T_K", "models": {}}}}
    )
    assert await ProviderCheck(lambda: config, {"AIR_T_K": "sk-ant-xyzxyzxyzxyz"}).run() == []
    problems = await ProviderCheck(lambda: config, {}).run()
    assert "AIR_T_K (auth_ref) is not set" in problems[0].issue.message
    gateway = ModelsConfig.model_validate(
        {"providers": {"g": {"kind": "anthropic", "header_refs": {"X-Gw": "AIR_T_GW"}}}}
    )
    problems = await ProviderCheck(lambda: gateway, {}).run()
    assert [p.issue.message for p in problems] == [
        "provider g: the variable AIR_T_GW (header_refs.X-Gw) is not set"
    ]
    assert await ProviderCheck(lambda: gateway, {"AIR_T_GW": "gw-1"}).run() == []


def test_cpp_tools_are_checked_only_for_a_cpp_project(tmp_path: Path) -> None:
    plain, _ = make_project(tmp_path)
    names = [c.name for c in build_checks(str(plain))]
    assert not [n for n in names if n.startswith("cpp.")]
    (plain / "CMakeLists.txt").write_text("project(x CXX)\n")
    names = [c.name for c in build_checks(str(plain))]
    assert {"cpp.compiler", "cpp.cmake", "cpp.cppcheck"} <= set(names)


async def test_database_check_introspects_with_sqlite_utils(tmp_path: Path) -> None:
    project, _ = make_project(tmp_path)
    write_session(project, "ses_ok")
    check = DatabaseCheck(str(project))
    assert await check.run() == []
    tables = check.facts["ses_ok"]["tables"]
    assert tables["events"]["rows"] >= 40
    assert tables["tasks"]["rows"] >= 1
    assert any(i.startswith("idx_") for t in tables.values() for i in t["indexes"])


async def test_a_missing_index_is_schema_drift(tmp_path: Path) -> None:
    import sqlite3

    project, _ = make_project(tmp_path)
    path = write_session(project, "ses_idx")
    conn = sqlite3.connect(path)
    name = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'idx_%' LIMIT 1"
    ).fetchone()[0]
    conn.execute(f"DROP INDEX {name}")
    conn.commit()
    conn.close()
    problems = await DatabaseCheck(str(project)).run()
    assert [p.issue.check for p in problems] == ["databases.session.ses_idx"]
    assert name in problems[0].issue.message
    assert problems[0].fix is not None
    await problems[0].fix.apply()
    assert await DatabaseCheck(str(project)).run() == []


def test_a_running_session_is_not_touched(tmp_path: Path) -> None:
    from air.supervision.runs import claim_session

    project, _ = make_project(tmp_path)
    path = write_session(project, "ses_live")
    with open(path, "r+b") as fh:
        fh.write(b"garbage" * 30)
    runs = project / ".air" / "local" / "state" / "runs"
    check = DatabaseCheck(str(project))
    assert [p.issue.severity for p in check.check_all()] == ["blocking"]
    claim_session(str(runs), "ses_live")  # this process now runs the session
    check = DatabaseCheck(str(project))
    assert check.check_all() == []
    assert check.facts["ses_live"] == {"skipped": "running now"}


def test_quarantine_takes_only_air_state(tmp_path: Path) -> None:
    from air.contracts.error import AirException
    from air.doctor.quarantine import quarantine

    project, _ = make_project(tmp_path)
    source = project / "README.md"
    with pytest.raises(AirException) as caught:
        quarantine(str(project), str(source))
    assert caught.value.user_action
    assert source.exists()
    stray = project / ".air" / "local" / "tmp" / "stray"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text("x")
    moved = Path(quarantine(str(project), str(stray)))
    assert moved.read_text() == "x"
    assert moved.is_relative_to(project / ".air" / "local" / "quarantine")


async def test_a_bad_models_file_is_blocking_with_what_to_do() -> None:
    from air.contracts.error import AirException

    def load() -> ModelsConfig:
        raise AirException.of(
            kind="config_error", message="models.yaml: default: bad", user_action="Fix it."
        )

    problems = await ProviderCheck(load, {}).run()
    assert [(p.issue.severity, p.issue.user_action) for p in problems] == [("blocking", "Fix it.")]


async def test_a_planted_link_in_workspaces_never_moves_what_it_points_to(tmp_path: Path) -> None:
    from air.cli.doctor_worktrees import WorktreeCheck

    project, home = make_project(tmp_path)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    workspaces = project / ".air" / "local" / "workspaces"
    workspaces.mkdir(parents=True, exist_ok=True)
    (workspaces / "ws_link").symlink_to(precious)
    check = WorktreeCheck(str(project))
    gate = make_gate(str(project))
    service = DoctorService(str(project), [check], authorize=gate, home=str(home))
    report = await service.run(DoctorRunInput(mode=DoctorMode.FIX))
    assert [f.status for f in report.fixes] == ["refused"]
    assert (precious / "thesis.tex").read_text() == "years of work\n"
