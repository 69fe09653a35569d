"""A worker for the drops matrix (tests/remote/test_drops.py): after the handshake it puts itself
in the state ``DROP_STATE`` names, then hangs there (``DROP_END=hang``) or, a second later,
returns a result (``DROP_END=complete``).

States: ``turn`` (waiting on a ``provider.complete`` call the parent serves), ``tree`` (a child
that ignores SIGTERM and a ``setsid`` grandchild, both sleeping, left running even on
completion), ``shell`` (waiting on a ``shell.run`` of ``DROP_COMMAND``). Standard library only;
empty lines from the parent (lease renewals) are skipped.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from typing import Any

from air.testing.workers._proto import _state, handshake, send


def _read() -> dict[str, Any] | None:
    while True:
        while b"\n" not in _state["buf"]:
            chunk = os.read(0, 65536)
            if not chunk:
                return None
            _state["buf"] += chunk
        line, _, rest = _state["buf"].partition(b"\n")
        _state["buf"] = rest
        if line.strip():
            data = json.loads(line)
            return data if isinstance(data, dict) else None


def _call(name: str, input: dict[str, Any]) -> dict[str, Any] | None:
    """One tool call, answered (its ``tool.result`` payload) or ``None`` at stdin EOF."""
    call_id = "msg_" + uuid.uuid4().hex
    send("tool.call", {"name": name, "input": input}, id=call_id)
    while (msg := _read()) is not None:
        if msg.get("kind") == "tool.result" and msg.get("correlation_id") == call_id:
            return dict(msg["payload"])
    return None


def _tree() -> None:
    """A child ignoring SIGTERM and a setsid grandchild, both sleeping for an hour."""
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "3600"])
        while True:
            time.sleep(3600)


def _heartbeat_until_eof() -> None:
    """Hang: heartbeats, and end at stdin EOF (what a real worker does)."""
    import threading

    def watch() -> None:
        while _read() is not None:
            pass
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    while True:
        send(
            "event",
            {
                "type": "agent.heartbeat",
                "version": 1,
                "payload": {"state": "running", "turn": 0, "tokens": 0},
            },
        )
        time.sleep(0.5)


def main() -> int:
    start = handshake()
    state = os.environ.get("DROP_STATE", "tree")
    complete = os.environ.get("DROP_END", "hang") == "complete"
    if state == "turn":
        message = {"role": "user", "content": [{"type": "text", "text": "go"}]}
        if _call("provider.complete", {"messages": [message]}) is None:
            return 0
    elif state == "shell":
        command = os.environ.get("DROP_COMMAND", "sleep 600")
        if _call("shell.run", {"command": command, "timeout_s": 3600}) is None:
            return 0
    else:
        _tree()
        if complete:
            time.sleep(1.0)
    if not complete:
        _heartbeat_until_eof()
    send(
        "worker.result",
        {
            "task_id": start["task_spec"]["id"],
            "agent_id": _state["agent_id"],
            "agent_type": "reviewer",
            "status": "completed",
            "summary": f"{state} done",
            "result": {"verdict": "approved", "findings": []},
        },
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
