"""A worker may not emit the parent's C++ records: diagnostics, capability lifecycle, debug
records (the C++ evidence gate and the debug knowledge rest on them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from air.contracts.task import TaskType
from tests.workers.conftest import Env

FORGED = {
    "diagnostic.created": {
        "diagnostic_id": "dg_forged",
        "severity": "error",
        "message": "forged",
        "semantic_signature": "cppdiag1:forged",
    },
    "capability.state.changed": {
        "capability_id": "cpp",
        "version": "1",
        "trust": "built_in",
        "to_state": "active",
    },
    "debug.record.created": {"debug_record_id": "dbg_forged", "failure_signature": "x"},
}


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


@pytest.mark.parametrize("event_type", sorted(FORGED))
async def test_a_worker_cannot_emit_parent_owned_cpp_events(env: Env, event_type: str) -> None:
    script = (
        "import json, sys\n"
        "from air.testing.workers._proto import forever, handshake, send\n"
        "handshake()\n"
        "send('event', json.loads(sys.argv[1]))\n"
        "forever()\n"
    )
    body = json.dumps({"type": event_type, "version": 1, "payload": FORGED[event_type]})
    manager = env.manager(
        [],
        command=[sys.executable, "-c", script, body],
        kill_grace_s=0.5,
        exit_grace_s=1.0,
        handshake_timeout_s=20.0,
    )
    with trio.fail_after(30):
        outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
    assert outcome.kind == "protocol_error"
    assert outcome.error is not None
    assert "may not emit" in outcome.error.message
