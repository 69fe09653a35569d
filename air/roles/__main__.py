"""``python -m air.roles``: the worker entry point.

Owns the start of a worker: import the runtime and the roles first (before stdin is read, so a
spare worker started ahead of its task does this while the parent is still loading; IMPL-START-2),
then read the ``agent.start`` line, check its envelope and protocol version with the standard
library, validate it and build the role, and only then answer ``worker.ready``: ready means the
worker can serve its task. End-of-file before any byte (a spare whose parent went away) exits 0
quietly. Exit codes per ARCHITECTURE §3.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

PROTOCOL_VERSION = 1
WORKER_VERSION = "air-worker/1"
MAX_START_BYTES = 64 * 1024 * 1024


def _read_first_line() -> tuple[bytes, bytes]:
    buf = bytearray()
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            return bytes(buf), b""
        nl = chunk.find(b"\n")
        if nl >= 0:
            buf += chunk[:nl]
            return bytes(buf), chunk[nl + 1 :]
        buf += chunk
        if len(buf) > MAX_START_BYTES:
            return b"", b""


def _line(kind: str, payload: dict[str, object], session_id: str, agent_id: str) -> bytes:
    from air.ipc.protocol import LineEncoder  # loaded with the runtime, before stdin is read

    return LineEncoder(session_id=session_id, agent_id=agent_id).line(kind, payload)


def _fail(message: str, session_id: str = "", agent_id: str = "") -> int:
    error = {
        "error_id": str(uuid.uuid4()),
        "kind": "protocol_error",
        "severity": "error",
        "message": message,
        "retryability": "never",
        "semantic_signature": "protocol_error:handshake",
    }
    os.write(1, _line("protocol.error", {"error": error}, session_id, agent_id))
    sys.stderr.write(f"air worker: {message}\n")
    return 2


def main() -> int:
    from air.ipc.startup import hold_gc, release_gc, skip_ldconfig_probe, skip_pydantic_plugins

    hold_gc()
    skip_pydantic_plugins()
    skip_ldconfig_probe()
    from air.roles.main import prepare_worker, run_worker, warm_models

    warm_models()
    first, rest = _read_first_line()
    if not first and not rest:
        return 0
    try:
        msg = json.loads(first)
        payload = msg["payload"]
        session_id, agent_id = str(msg["session_id"]), str(msg["agent_id"])
    except (ValueError, KeyError, TypeError):
        return _fail("the first line is not an agent.start envelope")
    if msg.get("kind") != "control" or payload.get("type") != "agent.start":
        return _fail("the first message is not agent.start", session_id, agent_id)
    if payload.get("version") != PROTOCOL_VERSION:
        return _fail(
            f"protocol version {payload.get('version')!r} is not {PROTOCOL_VERSION}",
            session_id,
            agent_id,
        )
    prepared = prepare_worker(payload)
    if isinstance(prepared, str):
        return _fail(prepared, session_id, agent_id)
    release_gc()
    ready = {
        "type": "worker.ready",
        "version": 1,
        "payload": {"protocol_version": PROTOCOL_VERSION, "worker_version": WORKER_VERSION},
    }
    os.write(1, _line("event", ready, session_id, agent_id))
    return run_worker(prepared, session_id, agent_id, rest)


if __name__ == "__main__":
    sys.exit(main())
