"""Standard-library protocol helpers for the misbehaving workers (no air imports: they must
start fast and behave exactly as scripted)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from typing import Any

__all__ = ["forever", "handshake", "read_line", "send"]

_state: dict[str, Any] = {"buf": b""}


def read_line() -> dict[str, Any] | None:
    while b"\n" not in _state["buf"]:
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        _state["buf"] += chunk
    line, _, rest = _state["buf"].partition(b"\n")
    _state["buf"] = rest
    data = json.loads(line)
    return data if isinstance(data, dict) else None


def send(
    kind: str,
    payload: dict[str, Any],
    *,
    correlation_id: str | None = None,
    id: str | None = None,
    raw: bytes | None = None,
) -> None:
    if raw is not None:
        os.write(1, raw)
        return
    env: dict[str, Any] = {
        "v": 1,
        "id": id or "msg_" + uuid.uuid4().hex,
        "kind": kind,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session_id": _state["session_id"],
        "agent_id": _state["agent_id"],
        "payload": payload,
    }
    if correlation_id:
        env["correlation_id"] = correlation_id
    data = json.dumps(env).encode() + b"\n"
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def handshake(protocol_version: int = 1) -> dict[str, Any]:
    start = read_line()
    assert start is not None
    _state["session_id"] = start["session_id"]
    _state["agent_id"] = start["agent_id"]
    _state["start"] = start["payload"]
    send(
        "event",
        {
            "type": "worker.ready",
            "version": 1,
            "payload": {"protocol_version": protocol_version, "worker_version": "misbehaving"},
        },
    )
    return dict(start["payload"])


def forever() -> None:
    while True:
        time.sleep(3600)


def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
