"""Reading a long session: what each read path costs at 1k / 10k / 100k events (issue 28).

Builds a real project (``git init`` + ``air init``) and writes sessions of each size through the
EventStore from ``air.testing.sequences.realistic_sequence`` (the generator the tests use: a
working day of tool calls, commands, artifacts and a conversation, a few hundred tasks). Then,
per size, it measures the real commands as a person runs them:

* console reopen: ``air --session SID --cassette DIR`` in a private tmux, seconds until the
  ready console (``· IDLE ·``) is on screen, and the console process's peak RSS then; twice
  (the session is written as a headless run records it, so the first reopen already starts
  from the view the runtime stored, IMPL-READ-7; the second from the one it stored again);
* ``--replay``: ``air --session SID --replay``, seconds until its first frame (``REPLAY``);
* render p99 while scrolling: in-process, the console (``TuiApp``) over the session's
  projection, the conversation scrolled a page at a time up and then down, each step rendered
  at 140x45; the 99th percentile of the render time;
* ``air history``: seconds to its first line and to its end (it prints the newest 500 events);
  and to the end of ``air history --all`` (every event: linear in the session, for context);
* ``air session list`` over 20 sessions of that size (copies of its database);
* ``air report --html``: seconds to the page;
* ``air --version``, the baseline of a bare command.

Goals (issue 28): at 100k reopen <= 2 s and RSS <= 150 MB; the 100k / 1k ratio <= 3x for every
figure; render p99 <= 50 ms at every size.

Usage: ``python bench/sessions.py [--sizes 1000,10000,100000] [--skip-console] [--only report]
[--tree PATH]``: ``--only report`` measures ``air report --html`` alone (3 runs, median), ``--tree``
measures another checkout of air (its sessions written and its commands run by that tree: a
before/after in one run). The load average is printed with each size.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).parents[1]
sys.path.insert(0, str(REPO))
TREE = REPO
"""The checkout of air measured (``--tree``): first on sys.path and the commands' PYTHONPATH."""

from bench.console import _Tmux  # noqa: E402  (the tmux harness of bench/console.py)

SIZE_LABEL = {1000: "1k", 10000: "10k", 100000: "100k"}
LIST_SESSIONS = 20


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "TMUX"))}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(TREE)
    return env


def _air(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "air", *args],
        cwd=project, env=_env(home), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"air {' '.join(args)} failed: {done.stderr}")
    return done


def make_project(tmp: Path) -> tuple[Path, Path, str]:
    """A git repository made an air project; its HOME and project id."""
    from air.session.project import ProjectStore

    home = tmp / "home"
    home.mkdir(parents=True)
    project = tmp / "proj"
    project.mkdir()
    for argv in (["init", "-q", "-b", "main"], ["config", "user.email", "b@e"],
                 ["config", "user.name", "b"]):  # fmt: skip
        subprocess.run(["git", *argv], cwd=project, check=True)
    (project / "README.md").write_text("bench\n")
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=project, check=True)
    _air(project, home, "init", ".")
    located = ProjectStore().locate(str(project))
    if located is None:
        raise SystemExit("air init made no project")
    (project / "cassettes").mkdir()
    (project / "cassettes" / "main.jsonl").write_text("")
    return project, home, located.project_id


def session_id(size: int, copy: int = 0) -> str:
    return f"ses_01BENCH{size:08d}{copy:02d}000000"[:30]


def write_session(project: Path, project_id: str, sid: str, size: int) -> Path:
    """A session database of ``size`` realistic events, appended in batches as a headless run
    records them: its ledger folds each batch (the scheduler reads the fold), stores the fold's
    snapshot every ``SNAPSHOT_EVERY`` events and with it the console's view (the runtime's
    ``on_snapshot``, IMPL-READ-7)."""
    from air.events.store import EventStore
    from air.nursery.ledger import SessionLedger
    from air.projection.view_snapshot import ViewKeeper
    from air.store.session_db import open_session_database
    from air.testing.sequences import realistic_sequence

    events = realistic_sequence(sid, project_id, size, seed=size)
    path = project / ".air" / "local" / "sessions" / sid / "session.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_session_database(path)
    try:
        store = EventStore(db)
        ledger = SessionLedger(store, session_id=sid, project_id=project_id, snapshots=db)
        keepers: list[Callable[[], None]] = [ViewKeeper(store, sid, path.parent / "artifacts")]
        try:  # the report's fold too (IMPL-READ-8), in a tree that has it
            from air.cli.report_snapshot import ReportKeeper

            keepers.append(ReportKeeper(db, sid))
        except ImportError:
            pass

        def keep_all() -> None:
            for keep in keepers:
                keep()

        ledger.on_snapshot = keep_all
        for start in range(0, len(events), 500):
            store.append_many(events[start : start + 500])
            ledger.state()
    finally:
        db.close()
    return path


def _pid_of_pane(tmux: _Tmux) -> int | None:
    shell = tmux.run("list-panes", "-t", "b", "-F", "#{pane_pid}").strip()
    if not shell:
        return None
    for task in Path(f"/proc/{shell}/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return None


def _peak_rss_mib(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def screen_time(
    argv: list[str], marker: str, project: Path, home: Path, tmp: Path
) -> tuple[float, float]:
    """Seconds until ``marker`` is on screen, and the process's peak RSS (MiB) then."""
    tmux = _Tmux()
    done = tmp / f"{tmux.socket}.done"
    env_prefix = ["env", f"HOME={home}"]
    try:
        started = tmux.start([*env_prefix, *argv], done, cwd=project)
        seen = tmux.wait_for(marker, timeout=600) - started
        rss = _peak_rss_mib(_pid_of_pane(tmux))
        # the console's own way out (a replay quits on q; a typed q is text in the console)
        if marker == "REPLAY":
            tmux.run("send-keys", "-t", "b", "q")
        else:
            tmux.run("send-keys", "-t", "b", "-l", "/quit")
            tmux.run("send-keys", "-t", "b", "Enter")
        deadline = time.monotonic() + 120  # the next measurement needs the session released
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return seen, rss
    finally:
        tmux.close()


def render_p99_ms(project: Path, sid: str) -> float:
    """The console over the session's projection, scrolled a page at a time (up, then down):
    the 99th percentile of one render at 140x45, in ms."""
    from air.events.store import EventStore
    from air.projection import InProcessProjectionClient
    from air.projection.view_snapshot import open_projection
    from air.store.session_db import open_session_database
    from air.ui_urwid.app import TuiApp

    db = open_session_database(project / ".air/local/sessions" / sid / "session.db")
    store = open_projection(EventStore(db), sid)  # as the console opens it (IMPL-READ-2)
    db.close()
    gc.freeze()  # as the console does after its hydration (air/cli/console.py)
    app = TuiApp(InProcessProjectionClient(store), _NoCommands(), replay=True)
    size = (140, 45)
    app.render_text(size)
    app.layout.focus("conversation")
    times: list[float] = []
    for key in ["page up"] * 60 + ["page down"] * 60:
        app.root.keypress(size, key)
        started = time.perf_counter()
        app.render_text(size)
        times.append(time.perf_counter() - started)
    times.sort()
    return times[min(len(times) - 1, int(0.99 * len(times)))] * 1000


class _NoCommands:
    async def send(self, command: Any) -> None:
        raise RuntimeError("the bench sends no command")


def history_times(project: Path, home: Path, sid: str, *flags: str) -> tuple[float, float]:
    """Seconds to the first line of ``air history`` (with ``flags``) and to its end."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "air", "history", "--session", sid, *flags],
        cwd=project, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.monotonic() - started
    for _ in iter(lambda: proc.stdout.read(1 << 16), b""):  # type: ignore[union-attr]
        pass
    proc.wait()
    return first, time.monotonic() - started


def timed(project: Path, home: Path, *args: str, repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        started = time.monotonic()
        _air(project, home, *args)
        runs.append(time.monotonic() - started)
    return statistics.median(runs)


def list_project(tmp: Path, db: Path, size: int) -> tuple[Path, Path]:
    """A project holding ``LIST_SESSIONS`` copies of one session database."""
    project, home, _ = make_project(tmp / f"list{size}")
    for copy in range(LIST_SESSIONS):
        sid = session_id(size, copy + 1)
        target = project / ".air" / "local" / "sessions" / sid
        target.mkdir(parents=True)
        shutil.copyfile(db, target / "session.db")
        with sqlite3.connect(target / "session.db") as conn:  # the copy is session ``sid``
            for table in ("events", "tasks", "session_summary"):
                try:
                    conn.execute(f"UPDATE {table} SET session_id = ?", (sid,))
                except sqlite3.OperationalError:
                    pass  # a tree from before the summary row
    return project, home


def measure(size: int, tmp: Path, *, console: bool, only: str | None) -> dict[str, float]:
    project, home, project_id = make_project(tmp / f"s{size}")
    sid = session_id(size)
    started = time.monotonic()
    db = write_session(project, project_id, sid, size)
    wrote = time.monotonic() - started
    print(f"  {SIZE_LABEL.get(size, size)}: wrote in {wrote:.1f} s", flush=True)
    out: dict[str, float] = {"load_1min": os.getloadavg()[0]}
    out["version_s"] = timed(project, home, "--version")
    if only == "report":
        out["report_s"] = timed(project, home, "report", "--html", str(tmp / "r.html"),
                                "--session", sid)  # fmt: skip
        out["load_1min_after"] = os.getloadavg()[0]
        return out
    if console:
        cassette = str(project / "cassettes")
        argv = [sys.executable, "-m", "air", "--session", sid, "--cassette", cassette]
        # the runtime stored the view as the session grew: the first reopen starts there too
        out["reopen_first_s"], _ = screen_time(argv, "· IDLE ·", project, home, tmp)
        out["reopen_s"], out["reopen_rss_mib"] = screen_time(argv, "· IDLE ·", project, home, tmp)
        replay = [sys.executable, "-m", "air", "--session", sid, "--replay"]
        out["replay_first_frame_s"], out["replay_rss_mib"] = screen_time(
            replay, "REPLAY", project, home, tmp
        )
    out["render_p99_ms"] = render_p99_ms(project, sid)
    out["history_first_line_s"], out["history_total_s"] = history_times(project, home, sid)
    if TREE == REPO:  # a tree from before ``--all`` printed every event by default
        out["history_all_total_s"] = history_times(project, home, sid, "--all")[1]
    out["report_s"] = timed(project, home, "report", "--html", str(tmp / "r.html"), "--session",
                            sid, repeat=1)  # fmt: skip
    many, many_home = list_project(tmp, db, size)
    out["session_list_20_s"] = timed(many, many_home, "session", "list", repeat=1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--skip-console", action="store_true")
    parser.add_argument("--only", choices=["report"])
    parser.add_argument("--tree", type=Path, help="the checkout of air to measure")
    args = parser.parse_args()
    if args.tree is not None:
        global TREE
        TREE = args.tree.resolve()
        sys.path.insert(0, str(TREE))
        import air

        print(f"  measuring the tree {TREE}: {air.__file__}", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="air-bench-sessions-") as tmp:
        for size in sizes:
            results[size] = measure(size, Path(tmp), console=not args.skip_console, only=args.only)
            print(f"  {SIZE_LABEL.get(size, size)}: " + ", ".join(
                f"{k}={v:.3f}" for k, v in results[size].items()), flush=True)  # fmt: skip
    keys = list(results[sizes[0]])
    print("| figure | " + " | ".join(SIZE_LABEL.get(s, str(s)) for s in sizes) + " | ratio |")
    print("|---|" + "---|" * (len(sizes) + 1))
    for key in keys:
        values = [results[s][key] for s in sizes]
        ratio = values[-1] / values[0] if values[0] else float("nan")
        cells = " | ".join(f"{v:.3f}" for v in values)
        print(f"| {key} | {cells} | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
