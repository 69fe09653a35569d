"""Background runs (``air run --headless --detach``): their records, states and notices.

Owns (IMPL-DETACH-1): the record of a detached run under ``.air/local/background/``, one set of
small files per session, each written once by one writer (so no file is ever read, changed
and written back by two processes):

- ``<sid>.json`` (the detached runtime, when its session opened): pid, start time, boot id,
  log path;
- ``<sid>.end.json`` (the runtime, when the batch ended): exit code, word, tasks done/total;
- ``<sid>.consumed`` (``air wait``, which delivered the result: no notice is due);
- ``<sid>.notified`` (a console that announced it; created exclusively, so once in all).

``DetachedRun`` is the runtime's side (adopt the session: record, then stdio to
``<session dir>/detached.log``; finish). ``BackgroundRun`` / ``list_runs`` / ``find_run`` are
the readers' (``running`` | ``finished`` | ``lost``: a runtime that died before its end is
``lost`` and ``air resume`` recovers it), ``Notifier`` decides the console's notices: once
per finished run, failures at once, successes together after a short window, and
``watch_background`` is the console's task that lists the runs once and then polls.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

__all__ = [
    "DETACHED_ENV",
    "SUCCESS_WINDOW_S",
    "BackgroundRun",
    "DetachedRun",
    "Notifier",
    "background_dir",
    "find_run",
    "list_runs",
    "recent_runs",
    "watch_background",
]

DETACHED_ENV = "AIR_DETACHED"
"""Set to ``1`` by ``air run --detach`` for the runtime it starts (the runtime's only cue)."""
SUCCESS_WINDOW_S = 3.0
"""Finished successes are announced together once the first has waited this long."""
_COARSE_S = 2.0
"""How recent a directory change is not taken as settled by its mtime (``Notifier``)."""


_WORDS = {0: "completed", 1: "failed", 2: "was refused", 130: "was cancelled", 143: "was cancelled"}


def background_dir(local_root: str) -> Path:
    return Path(local_root) / "background"


def _write_once(path: Path, data: dict[str, Any]) -> None:
    """Write ``path`` whole (temp file, fsync, rename): a reader sees it all or not at all."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _mark(path: Path) -> bool:
    """Create the marker ``path`` (durably); False when it exists already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


@dataclass(eq=False)
class DetachedRun:
    """The detached runtime's side of its record.

    Args:
        announce: where the session line goes before stdio moves to the log (the pipe that
            ``air run --detach`` reads).
    """

    announce: IO[str]
    active: bool = True
    """False: not a detached run (every method does nothing)."""
    local_root: str = ""
    session_id: str | None = None

    @classmethod
    def from_env(cls, announce: IO[str]) -> DetachedRun:
        """This process's run: active when ``air run --detach`` started it (the variable is
        removed, so nothing this process starts inherits it)."""
        return cls(announce, active=os.environ.pop(DETACHED_ENV, None) == "1")

    def adopt(self, local_root: str, session_id: str) -> None:
        """Record the run, move stdout/stderr to ``detached.log`` in the session's directory,
        then tell the starter the session id (one line) and close that channel. Not detached:
        only note a lost background run of this session, whose end this run then records."""
        from air.ipc.procs import read_identity

        if not self.active:
            # `air resume` of a background run whose runtime died: its end is this run's
            run = find_run(local_root, session_id)
            if run is not None and run.end is None:
                self.local_root, self.session_id = local_root, session_id
            return
        self.local_root, self.session_id = local_root, session_id
        log = os.path.join(local_root, "sessions", session_id, "detached.log")
        ident = read_identity(os.getpid())
        directory = background_dir(self.local_root)
        directory.mkdir(parents=True, exist_ok=True)
        record = {
            "session_id": session_id,
            "pid": ident.pid,
            "pid_start_time": ident.start_time,
            "boot_id": ident.boot_id,
            "log": log,
        }
        _write_once(directory / f"{session_id}.json", record)
        announce = os.dup(self.announce.fileno())
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for stream in (1, 2):
            os.dup2(fd, stream)
        os.close(fd)
        os.write(announce, f"air: detached session {session_id} log {log}\n".encode())
        os.close(announce)

    def finish(self, outcome: dict[str, int]) -> int:
        """Record how the batch ended: ``outcome`` holds its exit ``code`` and its task counts
        (``done``, ``failed``, ``total``). Returns the exit code."""
        code = int(outcome["code"])
        if self.session_id is None:
            return code  # not detached, or its session never opened (the starter relayed why)
        end = {**outcome, "exit_code": code, "word": _WORDS.get(code, "failed")}
        end.pop("code", None)
        _write_once(background_dir(self.local_root) / f"{self.session_id}.end.json", end)
        return code


@dataclass(eq=False)
class BackgroundRun:
    """One detached run as its files show it."""

    session_id: str
    record: dict[str, Any]
    end: dict[str, Any] | None
    consumed: bool
    notified: bool
    directory: Path

    @property
    def state(self) -> str:
        """``finished`` (its end is recorded), ``running`` (its runtime lives) or ``lost``."""
        if self.end is not None:
            return "finished"
        from air.ipc.procs import ProcessIdentity, is_same_process

        pid = self.record.get("pid")
        start = self.record.get("pid_start_time")
        ident = ProcessIdentity(pid=int(pid or 0), start_time=start and str(start))
        if pid and is_same_process(ident):
            return "running"
        # it may have written its end and exited since the end was read
        self.end = _read(self.directory / f"{self.session_id}.end.json")
        return "finished" if self.end is not None else "lost"

    @property
    def exit_code(self) -> int | None:
        return int(self.end["exit_code"]) if self.end is not None else None

    def consume(self) -> None:
        """``air wait`` delivered this run's result: no console announces it."""
        _mark(self.directory / f"{self.session_id}.consumed")
        self.consumed = True

    def claim_notice(self) -> bool:
        """True for exactly one caller on the machine: the one that announces this run."""
        self.notified = _mark(self.directory / f"{self.session_id}.notified") or self.notified
        return self.notified


def _load(directory: Path, session_id: str) -> BackgroundRun | None:
    record = _read(directory / f"{session_id}.json")
    if record is None:
        return None
    return BackgroundRun(
        session_id=session_id,
        record=record,
        end=_read(directory / f"{session_id}.end.json"),
        consumed=(directory / f"{session_id}.consumed").exists(),
        notified=(directory / f"{session_id}.notified").exists(),
        directory=directory,
    )


def find_run(local_root: str, session_id: str) -> BackgroundRun | None:
    """The detached run of ``session_id``, or None when that session was not detached."""
    if "/" in session_id or session_id.startswith("."):
        return None
    return _load(background_dir(local_root), session_id)


def list_runs(local_root: str) -> list[BackgroundRun]:
    """Every detached run of the project, oldest session first."""
    directory = background_dir(local_root)
    runs = [_load(directory, sid) for sid in sorted(_names(directory).records)]
    return [r for r in runs if r is not None]


def recent_runs(local_root: str, finished: int) -> tuple[list[BackgroundRun], int]:
    """The detached runs without an end (running or lost) and the newest ``finished`` finished
    ones, oldest session first; and how many older finished runs were left out (unread: a
    project's history of runs is not loaded to show what is going on)."""
    directory = background_dir(local_root)
    names = _names(directory)
    ended = sorted(names.records & names.ends)
    shown = ended[len(ended) - finished :] if finished > 0 else []
    runs = [_load(directory, sid) for sid in sorted((names.records - names.ends) | set(shown))]
    return [r for r in runs if r is not None], len(ended) - len(shown)


class _Names(NamedTuple):
    """The session ids the background directory's file names tell of, by kind of file."""

    records: set[str]
    ends: set[str]
    settled: set[str]
    """Consumed by ``air wait`` or announced: no notice is ever due for them."""


def _names(directory: Path) -> _Names:
    """One listing of ``directory``: which runs have a record, an end, a settled notice; no
    file is opened (a project's finished runs are read once, never at every poll)."""
    names = _Names(set(), set(), set())
    try:
        listed = os.listdir(directory)
    except OSError:
        return names
    for name in listed:
        if name.startswith("."):
            continue
        if name.endswith(".end.json"):
            names.ends.add(name[: -len(".end.json")])
        elif name.endswith(".json"):
            names.records.add(name[: -len(".json")])
        elif name.endswith((".consumed", ".notified")):
            names.settled.add(name.rpartition(".")[0])
    return names


@dataclass(eq=False)
class Notifier:
    """The console's notices of finished background runs: each run once (a run ``air wait``
    consumed, or that another console announced, never), a failed or lost run at once, the
    successes in one notice once the first has waited ``window_s``."""

    local_root: str
    window_s: float = SUCCESS_WINDOW_S
    _waiting: dict[str, float] = field(default_factory=dict)
    _listed: tuple[int, list[str]] | None = None
    """The directory's mtime at the last listing, and the runs then without a settled notice."""

    def _unsettled(self, directory: Path) -> list[str]:
        """The runs without a settled notice: listed again only when the directory changed
        (a new record, an end, a marker are each a new name in it), and whenever it changed
        within the last ``_COARSE_S`` (an mtime is as coarse as the kernel's clock tick: a
        file made in the same tick after the listing leaves it unchanged)."""
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            return []
        fresh = time.time_ns() - mtime < _COARSE_S * 1e9
        if self._listed is None or self._listed[0] != mtime or fresh:
            names = _names(directory)
            self._listed = (mtime, sorted(names.records - names.settled))
        return self._listed[1]

    def poll(self, now: float) -> list[str]:
        """The notices due at ``now`` (monotonic seconds); each is claimed durably."""
        notices: list[str] = []
        successes: list[BackgroundRun] = []
        directory = background_dir(self.local_root)
        for sid in self._unsettled(directory):  # only the runs a notice may be due for
            run = _load(directory, sid)
            if run is None or run.consumed or run.notified:
                continue
            state = run.state
            if state == "running":
                continue
            if state == "finished" and run.exit_code == 0:
                self._waiting.setdefault(run.session_id, now)
                successes.append(run)
                continue
            if run.claim_notice():
                notices.append(_failure_text(run, state))
        first = min((self._waiting[r.session_id] for r in successes), default=None)
        if first is not None and now - first >= self.window_s:
            claimed = [r for r in successes if r.claim_notice()]
            for r in successes:
                self._waiting.pop(r.session_id, None)
            if claimed:
                notices.append(_success_text(claimed))
        return notices


def _counts(run: BackgroundRun) -> str:
    end = run.end or {}
    return f"{end.get('done', '?')}/{end.get('total', '?')} tasks done"


def _failure_text(run: BackgroundRun, state: str) -> str:
    if state == "lost":
        return (
            f"background session {run.session_id} stopped without finishing: "
            f"`air resume --session {run.session_id}` finishes it"
        )
    word = (run.end or {}).get("word", "failed")
    return f"background session {run.session_id} {word} (exit {run.exit_code}), {_counts(run)}"


def _success_text(runs: list[BackgroundRun]) -> str:
    if len(runs) == 1:
        return f"background session {runs[0].session_id} completed, {_counts(runs[0])}"
    ids = ", ".join(r.session_id for r in runs)
    return f"{len(runs)} background sessions completed: {ids}"


def _listing(local_root: str) -> str | None:
    """How many background runs are running, finished or lost (None: there are none); only
    the runs without an end are read."""
    directory = background_dir(local_root)
    names = _names(directory)
    states = ["finished"] * len(names.records & names.ends)
    for sid in sorted(names.records - names.ends):
        run = _load(directory, sid)
        if run is not None:
            states.append(run.state)
    if not states:
        return None
    parts = [f"{states.count(s)} {s}" for s in ("running", "finished", "lost") if s in states]
    return f"background sessions: {', '.join(parts)} (`air status`)"


async def watch_background(
    local_root: str, say: Callable[[str], None], *, every_s: float = 1.0
) -> None:
    """The console's task: say which background runs there are (once, if any), then each
    notice as it falls due. Never returns; cancelled with the console."""
    import trio

    listing = _listing(local_root)
    if listing:
        say(listing)
    notifier = Notifier(local_root)
    while True:
        for text in notifier.poll(trio.current_time()):
            say(text)
        await trio.sleep(every_s)
