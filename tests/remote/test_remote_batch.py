"""The calc batch over ssh to ``local-ssh`` and over srun to ``local-slurm`` (issue #27 items 1, 4
and 5; IMPL-REMOTE-5, -6, IMPL-SLURM-3): three tasks, two in parallel, replayed from their
cassettes with ``air run --headless --host``. Every tool ran on the host, in the task's remote
worktree (over ssh: as the remote user; over srun: as a step of the worker's job); the results
came back by git and merged into a project identical to a local run's. An unknown host is
exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from air.remote.hosts import HostConfig
from tests.gitrepo import init_repo
from tests.remote.conftest import REMOTE_DIR, remote_uid

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def _air(root: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``air run --headless`` of the calc batch; with ``--host``, the parent runs in a PID
    namespace of its own (issue #27): it cannot see or kill the "remote" processes itself."""
    env = {**os.environ, "HOME": str(home)}
    batch, cassettes = str(root / "batch.yaml"), str(root / "cassettes")
    argv = [sys.executable, "-m", "air.cli", "run", "--headless", batch, "--project", str(root)]
    argv += ["--cassette", cassettes, "--json", *extra]
    if "--host" in extra:
        argv = ["unshare", "--pid", "--fork", "--mount-proc", *argv]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env=env, check=False
    )  # fmt: skip


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    init_repo(root, message="calc")  # the workspaces are git worktrees, which travel by git
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".air", ".git", "__pycache__"} & set(p.relative_to(root).parts)
    }


def _home(tmp_path: Path, hosts: str = "hosts.yaml") -> Path:
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    # a work directory of this test's own on the host: its object cache starts empty, as on a
    # fresh host, where the parallel tasks' first syncs meet
    text = (REMOTE_DIR / hosts).read_text()
    fresh = re.sub(r"(?m)^(\s*workdir: )(\S+)$", rf"\g<1>\g<2>/{tmp_path.name}", text)
    assert fresh != text
    (home / ".air" / "hosts.yaml").write_text(fresh)
    return home


@pytest.fixture(scope="module")
def local_calc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The calc batch's merged project after a local run (what a remote run must equal)."""
    tmp = tmp_path_factory.mktemp("local")
    home = tmp / "home"
    (home / ".air").mkdir(parents=True)
    local = _project(tmp, "local")
    done = _air(local, home)
    assert done.returncode == 0, done.stderr
    return _tree(local)


def _remote_run(tmp_path: Path, host: HostConfig, hosts: str) -> tuple[Path, list[dict[str, Any]]]:
    """The calc batch with ``--host``: rc 0, all three done, every ``command.started``'s cwd
    under the host's work directory; the project and the events."""
    home = _home(tmp_path, hosts)
    # fresh: an earlier run of this test (the same name) left its work directory there
    shutil.rmtree(os.path.join(host.workdir, tmp_path.name), ignore_errors=True)
    remote = _project(tmp_path, "remote")
    over = _air(remote, home, "--host", host.name)
    assert over.returncode == 0, over.stderr
    assert "completed: done 3/3" in over.stderr
    events = [json.loads(line) for line in over.stdout.splitlines() if line.startswith("{")]
    started = [e["payload"] for e in events if e.get("type") == "command.started"]
    assert len(started) >= 4
    work = os.path.realpath(host.workdir)
    for payload in started:
        assert os.path.realpath(payload["cwd"]).startswith(work + os.sep), payload
    assert [e for e in events if e.get("type") == "tool.completed"]
    return remote, events


class _ToolCallParents:
    """While in use, a thread notes the parent (``comm``) of each tool call's guard on this
    machine: the first process carrying an ``exec_`` run marker (``air.remote.workspace``)
    whose directory is under ``under`` (other checkouts run remote tests here too)."""

    def __init__(self, under: str) -> None:
        self.under = os.path.realpath(under) + os.sep
        self.seen: dict[str, str] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _ToolCallParents:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()

    def _watch(self) -> None:
        while not self.done.wait(0.02):
            for marker, pids in _exec_markers(self.under).items():
                if marker in self.seen:
                    continue
                parents = {_stat(p)[1] for p in pids} - pids - {0}
                if len(parents) == 1:  # the guard: the one whose parent is not marked
                    self.seen[marker] = _comm(parents.pop())


def _stat(pid: int) -> tuple[str, int]:
    """``comm`` and the parent pid of ``pid`` (("", 0) once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        end = text.rindex(")")
        return text[text.index("(") + 1 : end], int(text[end + 2 :].split()[1])
    except (OSError, ValueError):
        return "", 0


def _comm(pid: int) -> str:
    return _stat(pid)[0]


def _exec_markers(under: str) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            if not os.readlink(f"/proc/{name}/cwd").startswith(under):
                continue
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(b"AIR_WORKER_RUN=exec_"):
                found.setdefault(item.decode(errors="replace"), set()).add(int(name))
    return found


def _open_to_others(top: str) -> list[str]:
    """What air made under ``top`` (a host's work directory) that another user of the host
    could read or enter (the directory itself included)."""
    found = []
    for here, dirs, files in os.walk(top):
        for path in [here, *(os.path.join(here, name) for name in files)]:
            info = os.lstat(path)
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
                found.append(f"{oct(stat.S_IMODE(info.st_mode))} {path}")
        dirs.sort()
    return found


def test_the_calc_batch_runs_on_the_host_and_merges_as_a_local_run(
    tmp_path: Path, remote_host: HostConfig, local_calc: dict[str, bytes]
) -> None:
    remote, _ = _remote_run(tmp_path, remote_host, "hosts.yaml")
    assert _tree(remote) == local_calc
    # the repositories, worktrees and locks air made on the host are the remote user's alone
    made = os.path.join(remote_host.workdir, tmp_path.name)
    assert os.path.isdir(os.path.join(made, "cache.git"))
    assert _open_to_others(made) == []
    # the workers ran as the remote user: their run ids went to its processes only
    assert remote_uid() != os.getuid()


def test_the_calc_batch_runs_in_slurm_jobs_and_merges_as_a_local_run(
    tmp_path: Path, slurm_host: HostConfig, local_calc: dict[str, bytes]
) -> None:
    """A slurm host: the worktree is made in the work directory the job shares, the worker is a
    job step and its tool calls run in a kept executor session that is one more step of its job
    (IMPL-SLURM-3, IMPL-REMOTE-7)."""
    with _ToolCallParents(os.path.join(slurm_host.workdir, tmp_path.name)) as parents:
        remote, events = _remote_run(tmp_path, slurm_host, "slurm-hosts.yaml")
    assert _tree(remote) == local_calc
    assert _open_to_others(os.path.join(slurm_host.workdir, tmp_path.name)) == []
    # each session's guard was a task of a step, never a process of the login node (this one);
    # the three tasks each ran tools, each in a session of its own
    assert len(parents.seen) >= 3
    assert set(parents.seen.values()) == {"slurmstepd"}, parents.seen
    started = [e["payload"] for e in events if e.get("type") == "agent.started"]
    assert len(started) == 3
    for payload in started:  # where each worker went, as its run record keeps it
        where = payload["remote"]
        assert where["launcher"] == "slurm"
        assert where["host"] == slurm_host.name
        assert where["job_id"] > 0
        assert where["pid"] > 0
        assert where["boot_id"]
        assert where["start_time"]
    jobs = subprocess.run(
        ["squeue", "-h", "-o", "%j"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not {f"air-{p['agent_id']}" for p in started} & set(jobs)


def test_an_unknown_host_is_exit_2_saying_where_to_declare_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    root = _project(tmp_path, "calc")
    done = _air(root, home, "--host", "no-such-host")
    assert done.returncode == 2, done.stderr
    assert "no-such-host" in done.stderr
    assert "hosts.yaml" in done.stderr
    assert "Traceback" not in done.stderr
