"""A real worker subprocess, driven by the real ProviderManager replaying a cassette, reads a
file, edits it, runs its verification command through the real ToolRegistry and completes."""

from __future__ import annotations

import json

from air.contracts.worker_result import WorkerStatus
from air.supervision.runs import RunRecordStore
from tests.workers.conftest import (
    Env,
    read_text,
    result_text,
    survivors,
    text_turn,
    tool_turn,
)

VERIFY = "grep -q 'VALUE = 2' src/app.py"


async def test_executor_reads_edits_verifies_and_completes(env: Env) -> None:
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}, "Reading the file."),
        tool_turn(
            "fs.edit", {"path": "src/app.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
        ),
        tool_turn("shell.run", {"command": VERIFY}),
        text_turn(result_text("completed", "VALUE is now 2.", {"changes_made": True})),
    ]
    manager = env.manager(turns)
    request = env.request(commands=[VERIFY])
    outcome = await manager.supervise(request)

    assert outcome.kind == "result", outcome
    assert outcome.exit_code == 0
    result = outcome.result
    assert result is not None
    assert result.status == WorkerStatus.COMPLETED, result
    assert result.result == {"changes_made": True, "notes": None, "blocker": None}
    assert result.changed_files == ["src/app.py"]
    assert [v.status for v in result.verification] == ["passed"]
    assert (env.root / "src" / "app.py").read_text() == "VALUE = 2\n"

    types = env.events.types()
    assert types[0] == "agent.started"
    assert types[-1] == "agent.completed"
    for needed in (
        "tool.started",
        "tool.completed",
        "command.started",
        "command.completed",
        "artifact.created" if "artifact.created" in types else "tool.completed",
    ):
        assert needed in types, (needed, types)
    started = env.events.of_type("agent.started")[0]
    assert started["status"] == "running"
    assert started["pid"] > 0
    assert started["pid_start_time"]
    assert started["boot_id"]
    # the durable trail is also in the JSONL file, in order
    lines = [json.loads(x) for x in read_text(env.events.path or "").splitlines()]
    assert [x["type"] for x in lines if x["durable"]] == types
    record = RunRecordStore(env.state_dir).read(request.agent_id)
    assert record is not None
    assert record["terminal_state"] == "completed"
    assert survivors(started["pid"], record["marker"]) == []


async def test_completed_claim_without_verification_is_refused(env: Env) -> None:
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}),
        tool_turn(
            "fs.edit", {"path": "src/app.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
        ),
        text_turn(result_text("completed", "done, trust me", {"changes_made": True})),
    ]
    outcome = await env.manager(turns).supervise(env.request(commands=[VERIFY]))
    assert outcome.kind == "result"
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.FAILED
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "verification_failed"
    assert outcome.result.error.message == f"verification never ran: {VERIFY}"


async def test_skipped_verification_with_fallback_and_reason_is_accepted(env: Env) -> None:
    block = json.dumps(
        {
            "status": "completed",
            "summary": "edited; no toolchain",
            "result": {"changes_made": True},
            "verification_skipped_reason": "python3 is missing in this sandbox",
        }
    )
    turns = [
        tool_turn("fs.read", {"path": "src/app.py"}),
        tool_turn(
            "fs.edit", {"path": "src/app.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
        ),
        text_turn(f"```json:result\n{block}\n```"),
    ]
    outcome = await env.manager(turns).supervise(env.request(commands=[VERIFY], fallback=True))
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED
    assert [v.status for v in outcome.result.verification] == ["skipped"]
    assert outcome.result.risks
    assert "skipped" in outcome.result.risks[0].summary
