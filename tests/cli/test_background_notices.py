"""The console's notices of finished background runs (runner invariant 23, IMPL-DETACH-1): once
per run on the machine, failures at once, successes together after a short window, none for a
run ``air wait`` consumed; over real record files as the detached runtime writes them."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from air.cli import background
from air.cli.background import DETACHED_ENV, DetachedRun, Notifier, find_run, list_runs
from air.ipc.procs import read_identity
from tests.forked_air import air_cli


def _record(local: Path, sid: str, *, end: int | None, start: str | None = None) -> None:
    """What ``DetachedRun.adopt`` and ``finish`` leave (without moving this test's stdio), for
    this process (``start``: another start time, as if its pid were reused)."""
    ident = read_identity(os.getpid())
    run = DetachedRun(announce=sys.stderr, local_root=str(local), session_id=sid)
    (local / "background").mkdir(parents=True, exist_ok=True)
    record = {"session_id": sid, "pid": ident.pid, "pid_start_time": start or ident.start_time}
    (local / "background" / f"{sid}.json").write_text(json.dumps(record))
    if end is not None:
        assert run.finish({"code": end, "done": 1, "total": 2}) == end


def test_a_failure_at_once_successes_together_after_the_window_each_once(tmp_path: Path) -> None:
    _record(tmp_path, "ses_ok1", end=0)
    _record(tmp_path, "ses_bad", end=1)
    _record(tmp_path, "ses_live", end=None)  # this process: running
    notifier = Notifier(str(tmp_path), window_s=3.0)
    [failed] = notifier.poll(100.0)
    assert failed == "background session ses_bad failed (exit 1), 1/2 tasks done"
    _record(tmp_path, "ses_ok2", end=0)  # a second success within the window
    assert notifier.poll(102.0) == []
    [together] = notifier.poll(103.0)
    assert together == "2 background sessions completed: ses_ok1, ses_ok2"
    assert notifier.poll(200.0) == []
    # another console (another Notifier) announces none of them again
    assert Notifier(str(tmp_path), window_s=0.0).poll(0.0) == []
    assert [r.session_id for r in list_runs(str(tmp_path))] == [
        "ses_bad",
        "ses_live",
        "ses_ok1",
        "ses_ok2",
    ]


def test_a_run_wait_consumed_is_never_announced(tmp_path: Path) -> None:
    _record(tmp_path, "ses_a", end=2)
    run = find_run(str(tmp_path), "ses_a")
    assert run is not None
    assert run.state == "finished"
    run.consume()
    assert Notifier(str(tmp_path), window_s=0.0).poll(0.0) == []


def test_a_dead_runtime_without_an_end_is_lost(tmp_path: Path) -> None:
    _record(tmp_path, "ses_gone", end=None, start="1")  # this pid, another process's time
    run = find_run(str(tmp_path), "ses_gone")
    assert run is not None
    assert run.state == "lost"
    # a session id never names a file outside the records (`air cancel ../x` signals nothing)
    (tmp_path / "x.json").write_text((tmp_path / "background" / "ses_gone.json").read_text())
    assert find_run(str(tmp_path), "../x") is None


def test_the_detached_cue_is_read_once_and_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DETACHED_ENV, "1")
    assert DetachedRun.from_env(sys.stderr).active
    assert DETACHED_ENV not in os.environ  # nothing the runtime starts sees it
    assert not DetachedRun.from_env(sys.stderr).active


def test_a_poll_reads_only_the_runs_a_notice_may_be_due_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found: the console polls every second, and each poll read every detached run the
    project ever had (its record, end and markers): 1,000 finished runs cost 49 ms of the
    Trio thread each second, 10,000 about half a second."""
    for i in range(200):
        _record(tmp_path, f"ses_old{i:03d}", end=0)
    assert len(Notifier(str(tmp_path), window_s=0.0).poll(0.0)) == 1  # all settled at once
    loaded: list[str] = []
    real = background._load

    def load(directory: Path, sid: str) -> background.BackgroundRun | None:
        loaded.append(sid)
        return real(directory, sid)

    monkeypatch.setattr(background, "_load", load)
    _record(tmp_path, "ses_new", end=1)
    notifier = Notifier(str(tmp_path), window_s=0.0)
    assert notifier.poll(1.0) == ["background session ses_new failed (exit 1), 1/2 tasks done"]
    assert loaded == ["ses_new"]
    # a directory unchanged for a while is not even listed again
    listed: list[Path] = []
    real_names = background._names

    def names(directory: Path) -> object:
        listed.append(directory)
        return real_names(directory)

    monkeypatch.setattr(background, "_names", names)
    os.utime(tmp_path / "background", ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))
    assert notifier.poll(2.0) == []
    assert notifier.poll(3.0) == []
    assert len(listed) == 1  # the first poll saw the new mtime; the second listed nothing


def test_a_run_recorded_in_the_same_clock_tick_as_the_listing_is_not_missed(
    tmp_path: Path,
) -> None:
    # a directory's mtime is as coarse as the kernel's clock tick: a file made right after a
    # listing can leave it unchanged; a recent mtime is never taken as settled
    _record(tmp_path, "ses_a", end=0)
    notifier = Notifier(str(tmp_path), window_s=0.0)
    assert len(notifier.poll(0.0)) == 1
    assert notifier.poll(0.5) == []  # listed again: the announcement's marker changed it
    directory = tmp_path / "background"
    listed_at = directory.stat().st_mtime_ns
    _record(tmp_path, "ses_b", end=1)
    os.utime(directory, ns=(listed_at, listed_at))  # as if in the same tick
    assert notifier.poll(1.0) == ["background session ses_b failed (exit 1), 1/2 tasks done"]


def test_air_status_shows_what_is_going_on_and_the_newest_finished(tmp_path: Path) -> None:
    """`air status` listed every detached run the project ever had, opening each one's
    session database; it shows the runs without an end and the newest 10 finished, and says
    how to see the rest (`--all`)."""
    project, home = tmp_path / "p", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    assert air_cli(["init", str(project)], env=env).returncode == 0
    local = project / ".air" / "local"
    for i in range(14):
        _record(local, f"ses_{i:02d}", end=0)
    _record(local, "ses_00live", end=None)  # the oldest session, still running (this process)
    shown = air_cli(["status"], cwd=project, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == [
        "ses_00live",
        *(f"ses_{i:02d}" for i in range(4, 14)),
    ]
    assert "ses_00live  running" in lines[0]
    assert lines[-1] == "(4 older finished background sessions: `air status --all`)"
    every = air_cli(["status", "--all"], cwd=project, env=env)
    assert [line.split()[0] for line in every.stdout.splitlines()] == sorted(
        ["ses_00live", *(f"ses_{i:02d}" for i in range(14))]
    )
