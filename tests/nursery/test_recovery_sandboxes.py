"""Recovery kills the sandboxed commands a dead runtime left in the session's workspaces
(IMPL-SBX-7): bwrap's parent-death signal misses a runtime killed between forking bwrap and
bwrap's own ``prctl``, so such a command would otherwise outlive it. Real bwrap, real /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from air.nursery.recovery import recover_session
from air.tools.sandbox import SandboxRunner
from tests.nursery.conftest import open_session_db

_ORPHAN = """
import subprocess, sys
child = subprocess.Popen(sys.argv[1:], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
"""


def _orphan_sandbox(workspace: Path, command: str) -> int:
    """A bwrap running ``command`` in ``workspace`` whose parent is gone: the sandbox's own argv
    without ``--die-with-parent`` (a bwrap that never armed it), started by a process that
    exits at once."""
    argv = SandboxRunner().argv(
        command, workspace=str(workspace), cwd=str(workspace), network=False, pinned={}
    )
    argv = [a for a in argv if a != "--die-with-parent"]
    out = subprocess.run(
        [sys.executable, "-c", _ORPHAN, *argv], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def _with(path: Path) -> list[int]:
    """Live processes whose command line names ``path`` (the outer bwrap, its init, the command)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if str(path).encode() in fh.read() and _alive(int(name)):
                    found.append(int(name))
        except (OSError, ValueError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


def _none_with(path: Path, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while _with(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _with(path)


async def test_a_sandbox_that_outlived_its_runtime_is_killed_and_another_is_not(
    tmp_path: Path,
) -> None:
    mine, other = tmp_path / "ws_mine", tmp_path / "ws_other"
    mine.mkdir()
    other.mkdir()
    orphan = _orphan_sandbox(mine, "sleep 41")
    stranger = _orphan_sandbox(other, "sleep 42")
    sdb = open_session_db(str(tmp_path / "session"))
    try:
        assert _alive(orphan)
        assert _alive(stranger)
        await sdb.ledger.record(
            "workspace.created",
            {"workspace_id": "ws_mine", "task_id": None, "strategy": "worktree", "path": str(mine)},
        )
        report = await recover_session(sdb.ledger)
        assert orphan in report.reaped_commands
        assert _gone(orphan)
        assert _none_with(mine) == []  # the sandbox's init and `sleep 41` went with it
        assert _alive(stranger)  # not a workspace of this session
        again = await recover_session(sdb.ledger)
        assert again.reaped_commands == []
    finally:
        sdb.db.close()
        for pid in _with(mine) + _with(other):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


_SETTING_UP = """
import os, signal, subprocess, sys, time
workspace, role = sys.argv[1], sys.argv[2]
if role == "outer":  # a sandbox's outer bwrap: leads its session, forks the inner one
    os.setsid()
    inner = subprocess.Popen(
        [sys.orig_argv[0], __file__, workspace, "inner"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    print(os.getpid(), inner.pid, flush=True)
else:  # the inner bwrap, still setting up: it leads its own session once told to
    def lead(*_: object) -> None:
        os.setsid()
        open(os.path.join(workspace, "leads"), "w").close()
    signal.signal(signal.SIGUSR1, lead)
    open(os.path.join(workspace, "ready"), "w").close()
time.sleep(60)
"""


def test_a_sandbox_that_leads_its_session_only_after_the_scan_is_killed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead runtime's bwrap still setting up: its inner bwrap is not yet a session leader when
    recovery scans /proc, and becomes one (leaving the outer one's group) before the kill of that
    group. The next scan finds it: nothing of the sandbox survives the recovery."""
    from air.ipc import procs

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "bwrap_like.py"
    script.write_text(_SETTING_UP)
    bwrap = tmp_path / "bin" / "bwrap"  # a Python named bwrap, as recovery finds sandboxes
    bwrap.parent.mkdir()
    bwrap.symlink_to(os.path.realpath(sys.executable))
    launcher = (
        "import subprocess, sys\n"
        "outer = subprocess.Popen([sys.argv[1], sys.argv[2], sys.argv[3], 'outer'],"
        " stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)\n"
        "print(outer.stdout.readline(), end='', flush=True)\n"
    )
    out = subprocess.run(  # the launcher exits: the sandbox's parent is no air process
        [sys.executable, "-c", launcher, str(bwrap), str(script), str(workspace)],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    outer, inner = (int(pid) for pid in out.stdout.split())
    deadline = time.monotonic() + 30
    while not (workspace / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the inner one can be told to lead its session
    scan = procs._sandbox_leaders
    scans: list[dict[int, int]] = []

    def scan_then_inner_leads(wanted: set[str]) -> dict[int, int]:
        found = scan(wanted)
        if not scans:  # between the first scan and its kill, the inner bwrap leads its session
            os.kill(inner, signal.SIGUSR1)
            deadline = time.monotonic() + 10
            while not (workspace / "leads").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        scans.append(found)
        return found

    monkeypatch.setattr(procs, "_sandbox_leaders", scan_then_inner_leads)
    try:
        killed = procs.kill_sandboxes([str(workspace)])
        assert list(scans[0]) == [outer]  # the first scan saw the outer bwrap only
        assert killed == [outer, inner]
        assert _gone(outer)
        assert _gone(inner)
    finally:
        for pid in (outer, inner):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
