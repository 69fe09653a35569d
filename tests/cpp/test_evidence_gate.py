"""cpp_evidence_gate: which of the parent's records make a C++ change acceptable (pure fold)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from air.artifacts.evidence import collect_evidence, cpp_evidence_gate
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.task import TaskSpec

AGENT = "ag_1"


class Log:
    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []
        self.n = 0

    def add(self, type: str, payload: dict[str, Any]) -> None:
        self.events.append(
            new_event(type, payload, session_id="ses_1", source=EventSource(kind="tool"))
        )

    def edit(self, agent: str = AGENT) -> None:
        self.n += 1
        self.add(
            "artifact.created",
            {"artifact_id": f"a{self.n}", "type": "diff", "agent_id": agent, "uri": "u"},
        )

    def shell(self) -> None:
        self.n += 1
        self.add("tool.started", {"tool_run_id": f"s{self.n}", "tool_name": "shell.run"})
        self.add(
            "command.started",
            {"command_run_id": f"sc{self.n}", "agent_id": AGENT, "tool_run_id": f"s{self.n}"},
        )

    def cpp(self, tool: str, ok: bool, agent: str = AGENT, **loc: Any) -> None:
        self.n += 1
        run, cr = f"t{self.n}", f"cr{self.n}"
        kind = "build_output" if tool == "cpp.build" else "test_output"
        self.add("tool.started", {"tool_run_id": run, "tool_name": tool})
        self.add("command.started", {"command_run_id": cr, "agent_id": agent, "tool_run_id": run})
        location = {"command_run_id": cr, "ok": ok, "build_dir": "build", **loc}
        if tool == "cpp.test":
            location.setdefault("filtered", False)
            location.setdefault("failed", [] if ok else ["t.one"])
        self.add(
            "evidence.created",
            {
                "evidence_ref_id": f"ev{self.n}",
                "kind": kind,
                "ref": f"artifact://{cr}",
                "claim": "c",
                "location_json": location,
                "entity_type": "command_run",
                "entity_id": cr,
            },
        )


def _spec() -> TaskSpec:
    return TaskSpec.model_validate({"id": "t", "type": "execute", "title": "t", "description": "d"})


def _gate(log: Log, ws: Path) -> Any:
    (ws / "CMakeLists.txt").write_text("project(x)\n")
    return cpp_evidence_gate(_spec(), AGENT, log.events, str(ws))


def test_build_then_unfiltered_test_after_the_last_edit_passes(tmp_path: Path) -> None:
    log = Log()
    log.edit()
    log.cpp("cpp.build", True)
    log.cpp("cpp.test", True)
    assert _gate(log, tmp_path) is None
    kinds = [ref.kind.value for ref, _ in collect_evidence(_spec(), AGENT, log.events)]
    assert kinds == ["build_output", "test_output", "diff"]


def test_an_edit_or_shell_command_after_the_test_needs_new_evidence(tmp_path: Path) -> None:
    for change in ("edit", "shell"):
        log = Log()
        log.edit()
        log.cpp("cpp.build", True)
        log.cpp("cpp.test", True)
        getattr(log, change)()
        error = _gate(log, tmp_path)
        assert error is not None, change
        assert error.metadata["cpp_failure"] == "missing_evidence"


def test_filtered_tests_targets_other_dirs_and_other_agents_do_not_count(tmp_path: Path) -> None:
    cases = [
        (("cpp.build", True, {}), ("cpp.test", True, {"filtered": True})),
        (("cpp.build", True, {"target": "lib"}), ("cpp.test", True, {})),
        (("cpp.build", True, {"build_dir": "b2"}), ("cpp.test", True, {})),
        (("cpp.test", True, {}), ("cpp.build", True, {})),  # test before the build
    ]
    for first, second in cases:
        log = Log()
        log.edit()
        for tool, ok, loc in (first, second):
            log.cpp(tool, ok, **loc)
        assert _gate(log, tmp_path) is not None, (first, second)
    log = Log()
    log.edit()
    log.cpp("cpp.build", True, agent="ag_other")
    log.cpp("cpp.test", True, agent="ag_other")
    assert _gate(log, tmp_path) is not None


def test_failures_carry_the_build_or_test_signature(tmp_path: Path) -> None:
    log = Log()
    log.edit()
    log.cpp("cpp.build", False, signature="cppdiag1:abc")
    error = _gate(log, tmp_path)
    assert error.kind == "verification_failed"
    assert error.metadata["cpp_failure"] == "build_error"
    assert error.semantic_signature == "cppdiag1:abc"
    log.cpp("cpp.build", True)
    log.cpp("cpp.test", False)
    error = _gate(log, tmp_path)
    assert error.metadata["cpp_failure"] == "test_failure"
    assert error.semantic_signature == "ctest:t.one"


def test_no_change_or_no_cmake_project_needs_nothing(tmp_path: Path) -> None:
    log = Log()
    log.cpp("cpp.test", False)
    assert _gate(log, tmp_path) is None  # nothing changed
    log.edit()
    assert cpp_evidence_gate(_spec(), AGENT, log.events, str(tmp_path / "none")) is None
