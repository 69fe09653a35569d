"""Evidence for a completed task, taken from what the parent recorded, never from the worker.

Owns ``collect_evidence``: when the Scheduler accepts a task as completed (COLLECTING_RESULTS,
SDD §20.2 "persist artifacts/evidence"), each verification command of the task that the
task's agent ran through ``shell.run`` and that exited 0 becomes ``test_output`` evidence
pointing at its ``command_runs`` row, and each diff artifact the agent's edits produced becomes
``diff`` evidence. Both come from the durable log (``command.*`` and ``artifact.created`` events
written by the ToolRegistry), so a worker cannot vouch for itself.

Also owns ``cpp_evidence_gate`` (IMPL-CPP-5): an executor's change to a CMake project is
accepted only when the parent's own records hold a passing ``cpp.build`` and, after it, a
passing unfiltered ``cpp.test`` of the same build directory, both run by the attempt's agent
after its last edit or shell command; ``collect_evidence`` then adds the ``build_output`` and
``test_output`` evidence of the latest passing runs. That build directory is one the cpp tools
made and no other command could write (``air.tools.build_dirs``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from air.contracts.error import AirError, ErrorKind, make_air_error
from air.contracts.event import EntityType, RuntimeEvent
from air.contracts.evidence import EvidenceKind
from air.contracts.evidence_records import EvidenceRef
from air.contracts.ids import new_id
from air.contracts.task import TaskSpec, TaskType

__all__ = ["CppRecords", "collect_evidence", "cpp_evidence_gate", "cpp_records"]

_CPP_BUILD = "cpp.build"
_CPP_TEST = "cpp.test"
_CHANGE_TYPES = frozenset({TaskType.EXECUTE, TaskType.DEBUG})


@dataclass
class CppRecords:
    """What the parent recorded about one agent's C++ builds and tests, in log order."""

    builds: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """(position, build_output evidence payload) for each cpp.build the agent ran."""
    tests: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    last_change: int = -1
    """Position of the agent's last edit (diff artifact) or non-cpp command."""
    changed: bool = False
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    """``diagnostic.created`` payloads of the agent's cpp commands."""


def cpp_records(agent_id: str, history: Sequence[RuntimeEvent]) -> CppRecords:
    """Fold the durable log into the agent's cpp build/test records."""
    tool_of: dict[str, str] = {}
    command_tool: dict[str, str] = {}
    mine: set[str] = set()
    out = CppRecords()
    for i, event in enumerate(history):
        p = event.payload
        if event.type == "tool.started":
            tool_of[str(p["tool_run_id"])] = str(p["tool_name"])
        elif event.type == "command.started" and p.get("agent_id") == agent_id:
            run = str(p["command_run_id"])
            mine.add(run)
            tool = tool_of.get(str(p.get("tool_run_id")), "")
            command_tool[run] = tool
            if not tool.startswith("cpp."):
                out.last_change, out.changed = i, True
        elif (
            event.type == "artifact.created"
            and p.get("type") == "diff"
            and p.get("agent_id") == agent_id
        ):
            out.last_change, out.changed = i, True
        elif event.type == "evidence.created" and p.get("entity_type") == "command_run":
            run = str(p.get("entity_id"))
            if run not in mine:
                continue
            if command_tool.get(run) == _CPP_BUILD and p.get("kind") == "build_output":
                out.builds.append((i, dict(p)))
            elif command_tool.get(run) == _CPP_TEST and p.get("kind") == "test_output":
                out.tests.append((i, dict(p)))
        elif event.type == "diagnostic.created" and p.get("command_run_id") in mine:
            out.diagnostics.append(dict(p))
    return out


def _loc(payload: dict[str, Any]) -> dict[str, Any]:
    loc = payload.get("location_json")
    return loc if isinstance(loc, dict) else {}


def _passing(records: CppRecords) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The latest passing (build, unfiltered test) pair after the last change, if any."""
    for ti, test in reversed(records.tests):
        tloc = _loc(test)
        if ti < records.last_change or not tloc.get("ok") or tloc.get("filtered"):
            continue
        for bi, build in reversed(records.builds):
            bloc = _loc(build)
            if (
                records.last_change < bi < ti
                and bloc.get("ok")
                and not bloc.get("target")
                and bloc.get("build_dir") == tloc.get("build_dir")
            ):
                return build, test
    return None


def cpp_evidence_gate(
    spec: TaskSpec, agent_id: str, history: Sequence[RuntimeEvent], workspace_root: str
) -> AirError | None:
    """Why a completed C++ change may not be accepted (None: it may).

    Applies to execute/debug tasks in a CMake workspace whose agent changed something. The
    error is ``verification_failed`` and carries the semantic signature of the latest failing
    build (its first error) or ctest run (its failing test names), with the parsed diagnostics
    in its metadata, so that the RetryPlanner can route it to a debugger.
    """
    if spec.type not in _CHANGE_TYPES:
        return None
    if not os.path.isfile(os.path.join(workspace_root, "CMakeLists.txt")):
        return None
    records = cpp_records(agent_id, history)
    if not records.changed or _passing(records) is not None:
        return None
    builds = [b for i, b in records.builds if i > records.last_change]
    tests = [t for i, t in records.tests if i > records.last_change]
    failing_build = next((b for b in reversed(builds) if not _loc(b).get("ok")), None)
    failing_test = next((t for t in reversed(tests) if not _loc(t).get("ok")), None)
    signature = None
    failure = "missing_evidence"
    if failing_build is not None and (not builds or builds[-1] is failing_build):
        failure, signature = "build_error", _loc(failing_build).get("signature")
    elif failing_test is not None:
        failed = sorted(_loc(failing_test).get("failed") or [])
        failure, signature = "test_failure", "ctest:" + ",".join(failed)
    message = {
        "build_error": "the C++ build fails",
        "test_failure": "ctest fails",
        "missing_evidence": "no passing cpp.build and cpp.test were recorded after the change",
    }[failure]
    errors = [d for d in records.diagnostics if d.get("severity") == "error"]
    return make_air_error(
        kind=ErrorKind.VERIFICATION_FAILED,
        message=f"{message}: a C++ change is completed only with a passing build and ctest run",
        semantic_signature=signature,
        retryability="after_change",
        user_action="Build with cpp.build and run cpp.test (unfiltered) after the last edit; "
        "both must pass.",
        metadata={
            "cpp_failure": failure,
            "diagnostics": [
                {k: d.get(k) for k in ("file", "line", "column", "message", "semantic_signature")}
                for d in errors[-20:]
            ],
            "failed_tests": sorted(_loc(failing_test).get("failed") or []) if failing_test else [],
        },
    )


def collect_evidence(
    spec: TaskSpec, agent_id: str, history: Sequence[RuntimeEvent]
) -> list[tuple[EvidenceRef, dict[str, object]]]:
    """Evidence refs (with their ``evidence.created`` payloads) for one completed attempt.

    Args:
        spec: the task; its ``verification.commands`` are what must be proven.
        agent_id: the agent of the attempt being accepted (older attempts do not count).
        history: the session's durable events, oldest first.

    Returns:
        ``(ref, payload)`` pairs, verification commands first, in the spec's order.
    """
    commands: dict[str, str] = {}
    exits: dict[str, int] = {}
    diffs: list[RuntimeEvent] = []
    for event in history:
        p = event.payload
        if event.type == "command.completed":
            exits[str(p["command_run_id"])] = int(p["exit_code"])
        elif p.get("agent_id") != agent_id:
            continue
        elif event.type == "command.started" and p.get("task_id") == spec.id:
            commands[str(p["command_run_id"])] = str(p["command"])
        elif event.type == "artifact.created" and p.get("type") == "diff":
            diffs.append(event)
    out: list[tuple[EvidenceRef, dict[str, object]]] = []
    for wanted in spec.verification.commands or []:
        passing = [run for run, cmd in commands.items() if cmd == wanted and exits.get(run) == 0]
        if passing:
            out.append(
                _make(
                    EvidenceKind.TEST_OUTPUT,
                    passing[-1],
                    f"`{wanted}` exited 0",
                    spec.id,
                    {"command": wanted},
                )
            )
    cpp_pair = _passing(cpp_records(agent_id, history))
    if cpp_pair is not None:
        for kind, payload in zip(
            (EvidenceKind.BUILD_OUTPUT, EvidenceKind.TEST_OUTPUT), cpp_pair, strict=True
        ):
            loc = _loc(payload)
            out.append(
                _make(
                    kind,
                    str(payload["ref"]),
                    str(payload["claim"]),
                    spec.id,
                    {**loc, "evidence_ref_id": payload["evidence_ref_id"]},
                )
            )
    for diff in diffs:
        p = diff.payload
        out.append(
            _make(
                EvidenceKind.DIFF,
                str(p["uri"]),
                f"the change as applied: {p.get('slug')}",
                spec.id,
                {"artifact_id": p["artifact_id"], "sha256": p.get("sha256")},
            )
        )
    return out


def _make(
    kind: EvidenceKind, ref: str, claim: str, task_id: str, location: dict[str, object]
) -> tuple[EvidenceRef, dict[str, object]]:
    evidence = EvidenceRef(
        evidence_ref_id=new_id("ev"), kind=kind, ref=ref, claim=claim, location_json=location
    )
    payload: dict[str, object] = {
        **evidence.model_dump(mode="json"),
        "entity_type": EntityType.TASK.value,
        "entity_id": task_id,
    }
    return evidence, payload
