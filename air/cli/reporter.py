"""The headless reporter: human progress on stderr and the ``--json`` event stream on stdout.

Owns: ``Progress`` (one line per task end, the summary counts, the JSONL stream that stops
quietly when its reader goes away, IMPL-CLI-4) and ``_silence_stdout``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

__all__ = ["Progress"]


class Progress:
    """Human progress on stderr: one line per task end, and a summary."""

    def __init__(self, stream: IO[str], json_out: IO[str] | None) -> None:
        self.stream = stream
        self.json_out = json_out
        self.started = time.monotonic()
        self.status: dict[str, str] = {}

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:6.1f}s"

    def counts(self) -> tuple[int, int, int, int]:
        values = list(self.status.values())
        done = values.count("completed")
        running = values.count("running")
        failed = sum(values.count(s) for s in ("failed", "blocked"))
        return done, running, failed, len(values)

    def stream_line(self, line: str) -> None:
        """Write one JSON line; when the reader has gone (``air run --json | head -1``) stop
        the stream for good, point stdout at /dev/null (so no later flush fails) and say so
        once on stderr. The run itself goes on."""
        assert self.json_out is not None
        try:
            self.json_out.write(line)
            self.json_out.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.json_out = None
            _silence_stdout()
            print(
                "air: stdout closed: the --json stream stops, the run goes on "
                "(`air history` shows every event)",
                file=self.stream,
                flush=True,
            )

    def replay(self, history: list[Any]) -> None:
        """Take the statuses of a resumed session from its log (printing nothing)."""
        for event in history:
            if event.type == "task.created":
                self.status[event.payload["task_spec"]["id"]] = "pending"
            elif event.type.startswith("task.") and "task_id" in event.payload:
                kind = event.type.split(".", 1)[1]
                self.status[event.payload["task_id"]] = {
                    "started": "running",
                    "interrupted": "pending",
                }.get(kind, kind)

    def on_event(self, event: Any) -> None:
        if self.json_out is not None:
            self.stream_line(event.model_dump_json() + "\n")
        kind: str = event.type
        payload = event.payload
        if kind == "task.created":
            self.status[payload["task_spec"]["id"]] = "pending"
            return
        if kind == "assistant.message.failed":
            meta = (payload.get("error") or {}).get("metadata") or {}
            if meta.get("will_retry"):
                print(
                    f"air [{self.elapsed()}] {meta.get('task_id', '?')} model turn retried "
                    f"(attempt {meta.get('attempt')} failed, next in {meta.get('wait_s')}s): "
                    f"{meta.get('reason')}",
                    file=self.stream,
                    flush=True,
                )
            return
        if not kind.startswith("task.") or kind == "task.progress":
            return
        task_id = payload.get("task_id", "?")
        new = kind.split(".", 1)[1]
        self.status[task_id] = {"started": "running", "interrupted": "pending"}.get(new, new)
        if new == "started":
            return
        done, running, failed, total = self.counts()
        detail = ""
        if new == "failed" and payload.get("error"):
            detail = f": {payload['error'].get('message', '')}"
        elif payload.get("reason") and new != "completed":
            detail = f": {payload['reason']}"
        print(
            f"air [{self.elapsed()}] {task_id} {new}{detail} "
            f"(done {done}/{total}, running {running}, failed {failed})",
            file=self.stream,
            flush=True,
        )


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null (its reader is gone)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
