"""The calc batch over ssh to ``local-ssh`` (issue #27 items 4 and 5; IMPL-REMOTE-5, -6): three
tasks, two in parallel, replayed from their cassettes with ``air run --headless --host``. Every
tool ran on the host, in the task's remote worktree, as the remote user; the results came back
by git and merged into a project identical to a local run's. An unknown host is exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from air.remote.hosts import HostConfig
from tests.gitrepo import init_repo
from tests.remote.conftest import REMOTE_DIR, remote_uid

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def _air(root: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "air.cli", "run", "--headless", str(root / "batch.yaml"),
         "--project", str(root), "--cassette", str(root / "cassettes"), "--json", *extra],
        capture_output=True, text=True, timeout=600, env=env, check=False,
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


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    # a work directory of this test's own on the host: its object cache starts empty, as on a
    # fresh host, where the parallel tasks' first syncs meet
    text = (REMOTE_DIR / "hosts.yaml").read_text()
    fresh = re.sub(r"(?m)^(\s*workdir: )(\S+)$", rf"\g<1>\g<2>/{tmp_path.name}", text)
    assert fresh != text
    (home / ".air" / "hosts.yaml").write_text(fresh)
    return home


def test_the_calc_batch_runs_on_the_host_and_merges_as_a_local_run(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    home = _home(tmp_path)
    local = _project(tmp_path, "local")
    done = _air(local, home)
    assert done.returncode == 0, done.stderr
    remote = _project(tmp_path, "remote")
    over = _air(remote, home, "--host", remote_host.name)
    assert over.returncode == 0, over.stderr
    assert "completed: done 3/3" in over.stderr
    assert _tree(remote) == _tree(local)
    events = [json.loads(line) for line in over.stdout.splitlines() if line.startswith("{")]
    started = [e["payload"] for e in events if e.get("type") == "command.started"]
    assert len(started) >= 4
    work = os.path.realpath(remote_host.workdir)
    for payload in started:
        assert os.path.realpath(payload["cwd"]).startswith(work + os.sep), payload
    tools = [e["payload"] for e in events if e.get("type") == "tool.completed"]
    assert tools
    # the workers ran as the remote user: their run ids went to its processes only
    assert remote_uid() != os.getuid()


def test_an_unknown_host_is_exit_2_saying_where_to_declare_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    root = _project(tmp_path, "calc")
    done = _air(root, home, "--host", "no-such-host")
    assert done.returncode == 2, done.stderr
    assert "no-such-host" in done.stderr
    assert "hosts.yaml" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_slurm_host_for_batch_tasks_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    """Tasks run on ssh hosts; a slurm host named for them is refused, not run another way."""
    home = _home(tmp_path)
    (home / ".air" / "hosts.yaml").write_text(
        "hosts:\n  cluster:\n    launcher: slurm\n    host: localhost\n    partition: air\n"
    )
    root = _project(tmp_path, "calc")
    done = _air(root, home, "--host", "cluster")
    assert done.returncode == 2, done.stderr
    assert "slurm host" in done.stderr
    assert "ssh hosts" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / ".air" / "local" / "sessions").exists()
