"""Evidence for a completed task, taken from what the parent recorded, never from the worker.

Owns ``collect_evidence``: when the Scheduler accepts a task as completed (COLLECTING_RESULTS,
SDD §20.2 "persist artifacts/evidence"), each verification command of the task that the
task's agent ran through ``shell.run`` and that exited 0 becomes ``test_output`` evidence
pointing at its ``command_runs`` row, and each diff artifact the agent's edits produced becomes
``diff`` evidence. Both come from the durable log (``command.*`` and ``artifact.created`` events
written by the ToolRegistry), so a worker cannot vouch for itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from air.contracts import (
    EntityType,
    EvidenceKind,
    EvidenceRef,
    RuntimeEvent,
    TaskSpec,
    new_id,
)

__all__ = ["collect_evidence"]


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
