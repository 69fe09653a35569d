"""``LineEncoder`` is the one encoder of an envelope line (IMPL-STRUCT-2): an envelope's line,
a channel's line and the worker's start line are its bytes, and decode back to what was sent."""

from __future__ import annotations

import json
import subprocess
import sys

from air.ipc.protocol import LineEncoder, WorkerProtocol, make_envelope


def test_an_envelope_s_line_is_the_channel_encoder_s_line() -> None:
    env = make_envelope(
        "control",
        {"type": "agent.cancel", "reason": 'a "quoted" reason'},
        session_id="ses_1",
        agent_id="agt_1",
        correlation_id="msg_9",
    )
    line = WorkerProtocol.encode(env)
    channel = LineEncoder(session_id="ses_1", agent_id="agt_1")
    assert line == channel.line(
        "control", dict(env.payload), correlation_id="msg_9", id=env.id, ts=env.ts
    )
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert WorkerProtocol("worker").decode(line) == env


def test_a_given_timestamp_and_ids_are_escaped() -> None:
    odd = 'x"}\n{"v":2'
    line = LineEncoder(session_id=odd, agent_id=odd).line("log", {}, id=odd, ts=odd)
    assert line.count(b"\n") == 1
    data = json.loads(line)
    assert (data["ts"], data["id"], data["session_id"], data["agent_id"]) == (odd,) * 4


def test_the_worker_s_start_line_is_the_encoder_s() -> None:
    """``python -m air.roles`` answers a bad first line with a ``protocol.error`` line that the
    parent decodes."""
    done = subprocess.run(
        [sys.executable, "-m", "air.roles"],
        input=b'{"v":1,"kind":"control","session_id":"ses_1","agent_id":"agt_1",'
        b'"payload":{"type":"agent.start","version":99}}\n',
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 2
    msg = WorkerProtocol("parent").decode(done.stdout.splitlines()[0])
    assert (msg.kind, msg.session_id, msg.agent_id) == ("protocol.error", "ses_1", "agt_1")
    assert "protocol version 99" in msg.payload["error"]["message"]
