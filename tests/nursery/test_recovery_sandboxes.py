"""Recovery kills the sandboxed commands a dead runtime left in the session's workspaces
(IMPL-SBX-7): bwrap's parent-death signal misses a runtime killed between forking bwrap and
bwrap's own ``prctl``, so such a command would otherwise outlive it. Real bwrap, real /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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
