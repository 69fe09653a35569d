"""A hostile worker for the parent-side guard tests: it speaks the protocol correctly but lies.

Run as ``python tests/workers/scripted_worker.py``. After the handshake it follows the steps
written as JSON in its task's description, in order, then waits for the parent to close its
stdin. A step is one of:

- ``{"call": name, "input": {...}}``: a ``tool.call``; the worker waits for its ``tool.result``
  (with ``"expect": status``, another status makes it exit 1 without a result; ``"!ok"``
  expects anything but ``ok``).
- ``{"event": type, "payload": {...}}``: an ``event`` message of that type (``"version"``:
  1 unless the step names one; ``null`` leaves the field out).
- ``{"protocol_error": text}``: a ``protocol.error`` message (its error is not an AirError).
- ``{"checkpoint": {...}}``: a ``worker.checkpoint`` message with that payload.
- ``{"log": text}``: a ``log`` message (``"times": n``: n of them); ``{"exit": code}``: exit
  now, without a result; ``{"send_call": name, "input": {...}}``: a ``tool.call`` not waited on.
- ``{"as_agent": id}``: every later message's envelope names agent ``id`` (a worker posing
  as another agent).
- ``{"result": {...}}``: a ``worker.result``; ``task_id``, ``agent_id`` and ``agent_type`` are
  the start message's unless the step names them, every other field is the step's.

It bypasses the real worker's own gates (``air.roles``): what it claims is whatever the test
wrote, so only the parent's checks stand between it and the record. Standard library and
``air.testing.workers._proto`` only.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from air.testing.workers import _proto
from air.testing.workers._proto import handshake, read_line, send


def _call(name: str, input: dict[str, Any], expect: str | None) -> None:
    call_id = "msg_" + uuid.uuid4().hex
    send("tool.call", {"name": name, "input": input}, id=call_id)
    while True:
        msg = read_line()
        if msg is None:
            raise SystemExit(0)
        if msg.get("kind") == "tool.result" and msg.get("correlation_id") == call_id:
            status = msg["payload"].get("status")
            refused = expect is not None and expect.startswith("!") and status == expect[1:]
            if refused or (expect is not None and not expect.startswith("!") and status != expect):
                raise SystemExit(f"{name} ended {status}, expected {expect}: {msg['payload']}")
            return


def main() -> None:
    start = handshake()
    spec = start["task_spec"]
    runtime = start["runtime"]
    agent_type = {"execute": "executor", "review": "reviewer", "debug": "debugger"}.get(
        spec["type"], "executor"
    )
    for step in json.loads(spec["description"]):
        if "call" in step:
            _call(step["call"], step.get("input") or {}, step.get("expect"))
        elif "event" in step:
            event = {"type": step["event"], "version": step.get("version", 1)}
            if event["version"] is None:
                del event["version"]
            send("event", {**event, "payload": step.get("payload") or {}})
        elif "as_agent" in step:
            _proto._state["agent_id"] = step["as_agent"]
        elif "checkpoint" in step:
            send("worker.checkpoint", step["checkpoint"])
        elif "log" in step:
            for _ in range(step.get("times", 1)):
                send("log", {"level": "info", "message": step["log"]})
        elif "send_call" in step:
            send("tool.call", {"name": step["send_call"], "input": step.get("input") or {}})
        elif "protocol_error" in step:
            send("protocol.error", {"error": {"message": step["protocol_error"]}})
        elif "exit" in step:
            raise SystemExit(step["exit"])
        elif "result" in step:
            result = {
                "task_id": spec["id"],
                "agent_id": runtime["agent_id"],
                "agent_type": agent_type,
                **step["result"],
            }
            send("worker.result", result)
    while read_line() is not None:
        pass


if __name__ == "__main__":
    main()
