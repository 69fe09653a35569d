"""A scripted runtime behind the real console, for tmux tests, the storm and ``bench/console``.

Run ``python -m air.testing.console_driver --log FILE [options]``. It builds a real
``ProjectionStore`` (optionally writing every durable event to a real session DB with the real
``EventStore``) and a real ``TuiApp`` (or ``PlainConsole``, or a ``ReplayPlayer``) on the
terminal it runs in, and plays the runtime's part with ``ScriptedRuntime``, a
``UiCommandChannel``: every UiCommand is appended to the log as one JSON line; a chat message
gets a streamed answer; a message asking for a change (``fix`` / ``change``) creates two
tasks that run with tool, command output and a permission prompt; ``cancel_task`` ends exactly
that task cancelled; ``cancel_run`` cancels every running task; Esc (``interrupt``) ends only
the streaming answer; ``quit`` ends the process. ``--storm-rate`` / ``--storm-seconds`` push
ephemeral events at that rate into the store while the console runs, then write frame and
memory statistics (``--stats``) and quit. This is a test harness, not a user command.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import trio

from air.contracts.event import EventFilter, RuntimeEvent
from air.contracts.ui import UiCommand
from air.events.payloads import EPHEMERAL_TYPES
from air.events.store import EventStore
from air.projection import InProcessProjectionClient, ProjectionStore, ReplayPlayer
from air.store.db import DatabaseManager
from air.store.session_db import open_session_database
from air.testing.console_script import ConsoleEvents
from air.ui_urwid.app import PROMPT_GUARD_S, TuiApp
from air.ui_urwid.plain import PlainConsole

__all__ = ["ScriptedRuntime", "main", "rss_kib"]

_TERMINAL = ("completed", "failed", "blocked", "cancelled", "interrupted")


def rss_kib() -> int:
    """This process's resident set size in KiB (``/proc/self/statm``)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


class ScriptedRuntime:
    """Plays the runtime: applies events to the store (and the DB), reacts to UiCommands."""

    def __init__(
        self,
        store: ProjectionStore,
        log_path: Path,
        *,
        events: EventStore | None = None,
        step_s: float = 0.05,
        session_id: str = "ses_console",
    ) -> None:
        self.store = store
        self.events = events
        self.log_path = log_path
        self.step_s = step_s
        self.ev = ConsoleEvents(session_id, real_time=True)
        self.quit = trio.Event()
        self.nursery: trio.Nursery | None = None
        self._answer_scope: trio.CancelScope | None = None
        self._answer_id: str | None = None
        self._prompts: dict[str, trio.Event] = {}
        self._task_scopes: dict[str, trio.CancelScope] = {}
        self._cancel_reasons: dict[str, str] = {}
        self._rounds = 0

    def emit(self, events: list[RuntimeEvent]) -> None:
        for event in events:
            if self.events is not None and event.type not in EPHEMERAL_TYPES:
                self.events.append(event)
            self.store.apply(event)

    def status(self, task_id: str) -> str:
        task = next((t for t in self.store.snapshot().tasks if t.task_id == task_id), None)
        return task.status if task else "unknown"

    async def send(self, command: UiCommand) -> None:
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(command.model_dump_json(exclude_defaults=True) + "\n")
        assert self.nursery is not None
        if command.kind == "user_message" and command.text is not None:
            self.emit(self.ev.user_message(command.text))
            if any(word in command.text.lower() for word in ("fix", "change")):
                self.nursery.start_soon(self._tasks)
            else:
                self.nursery.start_soon(self._answer, command.text)
        elif command.kind == "interrupt" and self._answer_scope is not None:
            self._answer_scope.cancel(reason="Esc")
        elif command.kind == "cancel_task" and command.task_id in self._task_scopes:
            self._cancel_reasons[command.task_id] = "cancel_task"
            self._task_scopes[command.task_id].cancel(reason="cancel_task")
        elif command.kind == "cancel_run":
            for task_id, scope in self._task_scopes.items():
                self._cancel_reasons[task_id] = "kill" if command.force else "cancel_run"
                scope.cancel(reason="cancel_run")
        elif command.kind == "permission_response" and command.prompt_id in self._prompts:
            self.emit(self.ev.prompt_resolved(command.prompt_id, command.decision or "deny"))
            self._prompts.pop(command.prompt_id).set()
        elif command.kind == "quit":
            self.quit.set()

    async def _answer(self, question: str) -> None:
        text = f"Scripted answer to: {question}\n```sh\nmake test\n```\nThat is all."
        mid, started = self.ev.assistant_start()
        self.emit(started)
        with trio.CancelScope() as self._answer_scope:
            for i in range(0, len(text), 6):
                self.emit([self.ev.assistant_delta(mid, text[i : i + 6])])
                await trio.sleep(self.step_s)
            self.emit(self.ev.assistant_done(mid, text))
            return
        self.emit(self.ev.assistant_failed(mid, "interrupted by Esc"))

    async def _tasks(self) -> None:
        self._rounds += 1
        n = self._rounds
        a, b = f"task_{n}a", f"task_{n}b"
        mid, started = self.ev.assistant_start()
        self.emit(started + self.ev.assistant_done(mid, "Planned two tasks."))
        self.emit(self.ev.task(a, f"edit calc round {n}") + self.ev.task(b, f"docs round {n}"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_task, a, n == 1)  # only the first round asks
            nursery.start_soon(self._run_task, b, False)

    async def _run_task(self, task_id: str, asks: bool) -> None:
        self.emit(self.ev.start(task_id))
        scope = self._task_scopes[task_id] = trio.CancelScope()
        open_runs: dict[str, str] = {}
        with scope:
            tool, events = self.ev.tool(task_id, "shell.run", {"command": "make test"})
            cmd, more = self.ev.command(task_id, "make test", tool)
            open_runs.update(tool=tool, cmd=cmd)
            self.emit(events + more)
            for i in range(8):
                self.emit([self.ev.output(cmd, f"step {i} of {task_id}\n")])
                self.emit([self.ev.heartbeat(task_id, i + 1, 100 * (i + 1))])
                await trio.sleep(self.step_s * 2)
            self.emit(self.ev.command_done(cmd, 0) + self.ev.tool_done(tool))
            open_runs.clear()
            if asks:
                prompt, events = self.ev.prompt(task_id, "git commit -am fix", risk="medium")
                answered = self._prompts[prompt] = trio.Event()
                open_runs["prompt"] = prompt
                self.emit(events)
                await answered.wait()
                open_runs.clear()
            else:
                await trio.sleep(self.step_s * 400)  # long enough to be cancelled
            self.emit(self.ev.complete(task_id, f"{task_id} done"))
        self._task_scopes.pop(task_id, None)
        if scope.cancelled_caught and self.status(task_id) not in _TERMINAL:
            if "cmd" in open_runs:
                self.emit(self.ev.command_cancelled(open_runs["cmd"]))
                self.emit(self.ev.tool_cancelled(open_runs["tool"]))
            if "prompt" in open_runs:
                self._prompts.pop(open_runs["prompt"], None)
                self.emit(self.ev.prompt_resolved(open_runs["prompt"], "deny", "policy"))
            reason = self._cancel_reasons.pop(task_id, "cancel")
            self.emit(self.ev.cancel(task_id, f"cancelled by the person ({reason})"))

    async def storm(self, rate: int, seconds: float, stats: dict[str, Any]) -> None:
        """``rate * seconds`` ephemeral events, paced at ``rate`` per second (as fast as the
        machine allows when it falls behind), into the store."""
        self.emit(self.ev.task("storm", "storm task") + self.ev.start("storm"))
        cmd, events = self.ev.command("storm", "yes")
        mid, started = self.ev.assistant_start()
        self.emit(events + started)
        tick = 0.01
        per_tick = max(1, int(rate * tick))
        start = trio.current_time()
        stats["storm_start"] = time.perf_counter()
        sent = 0
        samples: list[tuple[float, int]] = []
        next_sample = start
        total = int(rate * seconds)
        while sent < total:
            now = trio.current_time()
            batch = []
            for i in range(min(per_tick, total - sent)):
                k = (sent + i) % 4
                if k == 0:
                    batch.append(self.ev.output(cmd, f"line {sent + i}\n"))
                elif k == 1:
                    batch.append(self.ev.heartbeat("storm", sent + i, sent + i))
                elif k == 2:
                    batch.append(self.ev.progress("storm", f"progress {sent + i}"))
                else:
                    batch.append(self.ev.assistant_delta(mid, "."))
            self.emit(batch)
            sent += len(batch)
            if now >= next_sample:
                samples.append((now - start, rss_kib()))
                next_sample += 0.25
            await trio.sleep_until(start + (sent / rate))
        stats["storm_end"] = time.perf_counter()
        stats["storm_events"] = sent
        stats["storm_seconds"] = trio.current_time() - start
        stats["rss_samples_kib"] = samples


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(args: argparse.Namespace, stats: dict[str, Any]) -> int:
    log = Path(args.log)
    db: DatabaseManager | None = None
    events: EventStore | None = None
    if args.replay:
        db = DatabaseManager.open(args.replay, must_exist=True)
        source = EventStore(db).query(EventFilter(session_id=args.session))
        store = ProjectionStore()
        player = ReplayPlayer(source, store, speed=args.speed)
        app = TuiApp(
            InProcessProjectionClient(store),
            _LoggingChannel(player, log),
            replay=True,
            hud_extra=player.hud_text,
        )
        await player.play_while(app.run)
        db.close()
        return 0
    if args.db:
        db = open_session_database(args.db)
        events = EventStore(db)
    store = ProjectionStore()
    runtime = ScriptedRuntime(store, log, events=events, step_s=args.step)
    runtime.emit(runtime.ev.session())
    stats["started_rss_kib"] = rss_kib()
    async with trio.open_nursery() as nursery:
        runtime.nursery = nursery
        if args.plain:
            console = PlainConsole(
                InProcessProjectionClient(store), runtime, lambda s: print(s, flush=True)
            )
            stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            nursery.start_soon(console.run, stdin)
            await runtime.quit.wait()
            nursery.cancel_scope.cancel(reason="quit")
            return 0
        app = TuiApp(
            InProcessProjectionClient(store),
            runtime,
            copy_file=args.copy,
            prompt_guard_s=args.prompt_guard,
        )

        async def quit_when_asked() -> None:
            await runtime.quit.wait()
            app.stop()

        async def storm() -> None:
            await trio.sleep(0.5)
            await runtime.storm(args.storm_rate, args.storm_seconds, stats)
            app.stop()

        nursery.start_soon(quit_when_asked)
        if args.storm_rate:
            nursery.start_soon(storm)
        await app.run()
        nursery.cancel_scope.cancel(reason="console closed")
    if args.stats:
        lo, hi = stats.get("storm_start", 0.0), stats.get("storm_end", float("inf"))
        frames = [t for t in app.frame_times if lo <= t <= hi]
        intervals = [b - a for a, b in itertools.pairwise(frames)]
        stats.update(
            first_frame_cpu_s=app.first_frame_cpu_s,
            frames=app.frames,
            redraw_interval_p50_ms=_percentile(intervals, 0.5) * 1000,
            redraw_interval_p99_ms=_percentile(intervals, 0.99) * 1000,
            render_p99_ms=_percentile(list(app.render_times), 0.99) * 1000,
            peak_rss_kib=max([s[1] for s in stats.get("rss_samples_kib", [])] + [rss_kib()]),
        )
    if db is not None:
        db.close()
    return 0


class _LoggingChannel:
    """Logs each command, then hands it to the wrapped channel (the replay player)."""

    def __init__(self, inner: ReplayPlayer, log: Path) -> None:
        self.inner = inner
        self.log = log

    @property
    def speed(self) -> float:
        return self.inner.speed

    async def send(self, command: UiCommand) -> None:
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(command.model_dump_json(exclude_defaults=True) + "\n")
        await self.inner.send(command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m air.testing.console_driver")
    parser.add_argument("--log", required=True, help="append every UiCommand here (JSON lines)")
    parser.add_argument("--db", help="also store durable events in this session DB")
    parser.add_argument("--copy", help="the console's copy file")
    parser.add_argument("--plain", action="store_true", help="the line-oriented console")
    parser.add_argument("--replay", help="replay the session in this DB (read-only)")
    parser.add_argument("--session", default="ses_console")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--step", type=float, default=0.05, help="seconds per scripted step")
    parser.add_argument("--storm-rate", type=int, default=0)
    parser.add_argument("--storm-seconds", type=float, default=10.0)
    parser.add_argument("--stats", help="write frame and memory statistics here (JSON)")
    parser.add_argument(
        "--prompt-guard",
        type=float,
        default=PROMPT_GUARD_S,
        help="seconds a new permission prompt ignores keys (a test of the guard under load "
        "widens it: its key must land inside the window however slowly tmux answers)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    stats: dict[str, Any] = {}
    rc = trio.run(_run, args, stats)
    stats["seconds"] = time.monotonic() - started
    if args.stats:
        Path(args.stats).write_text(json.dumps(stats), encoding="utf-8")
    return rc


if __name__ == "__main__":
    sys.exit(main())
