"""The issue's attacks on a read-only task, end to end through ``shell.run`` (issue 22, item 3).

A task with ``write_area: []`` runs headless in a real project through the real registry,
PermissionEngine and bubblewrap sandbox: ``cmake -E rm -rf``/``remove_directory``/``copy``,
``make --eval``/``-E`` with ``$(shell ...)``, ``gcc -wrapper rm,...`` and ``sed -n '1w FILE'``
are refused before anything runs, and the files they aimed at (a git-ignored ``notes/``
included) are still there afterwards. A benign look-alike runs in the same task.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.conftest import Env

ATTACKS = [
    "cmake -E rm -rf src notes",
    "cmake -E remove_directory notes",
    "cmake -E copy /dev/null notes/keep.txt",
    "make --eval='$(shell rm -rf src notes)'",
    "make -E '$(shell rm -rf src notes)'",
    "gcc -wrapper rm,-rf,src,notes -c x.c",
    "sed -n '1w notes/keep.txt' src/app.py",
]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = Env(tmp_path)
    (made.root / ".gitignore").write_text("notes/\n")
    (made.root / "notes").mkdir()
    (made.root / "notes" / "keep.txt").write_text("my notes\n")
    (made.root / "x.c").write_text("int main(void) { return 0; }\n")
    yield made
    made.close()


@pytest.mark.parametrize("command", ATTACKS)
async def test_a_read_only_task_cannot_run_the_attack(env: Env, command: str) -> None:
    assert shutil.which("bwrap") is not None
    res = await env.registry.call(
        "shell.run", {"command": command}, env.ctx(headless=True, write_area=[])
    )
    assert res.status in ("denied", "blocked"), (command, res.status, res.output)
    assert res.decision is not None
    assert (env.root / "notes" / "keep.txt").read_text() == "my notes\n"
    assert (env.root / "src" / "app.py").read_text() == "print('hello')\n"
    assert not [r for r in env.rows("command_runs")]  # nothing was started


async def test_its_benign_look_alike_runs(env: Env) -> None:
    res = await env.registry.call(
        "shell.run",
        {"command": "sed -n 1p src/app.py; sort notes/keep.txt; cmake -E echo ok"},
        env.ctx(headless=True, write_area=[]),
    )
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    assert res.output["stdout"] == "print('hello')\nmy notes\nok\n"
