"""Misbehaving worker programs and file-backed sinks for worker-supervision tests and demos.

Owns: one module per misbehaviour (run as ``python -m air.testing.workers.<name>``; each speaks
just enough of the protocol, with the standard library only, to misbehave at the right moment),
``MISBEHAVIOURS`` (name → what the parent must record), and the ``harness`` sinks.
"""

from __future__ import annotations

__all__ = ["MISBEHAVIOURS", "command_for"]

MISBEHAVIOURS: dict[str, str] = {
    "garbage": "protocol_error",
    "huge_line": "protocol_error",
    "wrong_direction": "protocol_error",
    "bad_version": "protocol_error",
    "crash_in_tool": "crashed",
    "ignore_sigterm": "hard_timeout",
    "double_fork": "result",
    "stall": "stalled",
}


def command_for(name: str) -> list[str]:
    import sys

    return [sys.executable, "-m", f"air.testing.workers.{name}"]
