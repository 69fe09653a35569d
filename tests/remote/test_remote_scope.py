"""A task's denied paths hold on the host too (IMPL-SCOPE-1, IMPL-REMOTE-5).

The project of ``tests/cli/test_task_scope_in_workspaces.py`` run with ``--host local-ssh``:
fs.search runs on the host, in the task's remote worktree (the executor there passes over what
the task's scope denies: it searched the secret's directory), and its commands there do not
see the denied directory (hidden as on this machine: ``make``'s write into it fails); what
they do write comes back by git into the local worktree, whose merge refuses a denied path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from air.remote.hosts import HostConfig
from tests.cli.test_task_scope_in_workspaces import SECRET, _project, _recorded
from tests.headless import session_events
from tests.remote.conftest import REMOTE_DIR

pytestmark = pytest.mark.slow


def test_a_denied_path_is_neither_searched_nor_merged_from_a_host(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    recipe = "all:\n\techo changed > secrets/key\n"
    root = _project(
        tmp_path,
        "{denied_paths: [secrets]}",
        [
            ("fs.search", {"pattern": "TOPSECRET"}),
            ("fs.write", {"path": "Makefile", "content": recipe}),
            ("shell.run", {"command": "make"}),
        ],
    )
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    text = (REMOTE_DIR / "hosts.yaml").read_text()  # a work directory of this test's own
    hosts = re.sub(r"(?m)^(\s*workdir: )(\S+)$", rf"\g<1>\g<2>/{tmp_path.name}", text)
    (home / ".air" / "hosts.yaml").write_text(hosts)
    argv = [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", "--cassette"]
    run = subprocess.run(
        [*argv, "cas", "--host", remote_host.name],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    events = session_events(root)
    [searched] = [e for e in events if e["type"] == "tool.completed" and "matches" in str(e)]
    assert '"matches": []' in searched["output_summary"]  # the search ran, on the host
    assert any(e["type"] == "agent.started" and e.get("remote") for e in events)
    # the host's worktree holds the denied directory, hidden from its commands (IMPL-SBX-3):
    # the build's write fails there, and only the Makefile comes back
    made = [e for e in events if e["type"] == "tool.completed" and "exit_code" in str(e)]
    assert "cannot create secrets/key: Read-only file system" in str(made)
    assert not [e for e in events if e["type"] == "task.failed"]
    assert (root / "secrets" / "key").read_text() == f"{SECRET}\n"
    assert (root / "Makefile").read_text() == recipe
    assert SECRET.encode() not in _recorded(root)
    assert run.returncode == 0, run.stderr
