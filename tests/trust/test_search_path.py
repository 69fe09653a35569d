"""A relative ``PATH`` or ``PYTHONPATH`` entry never runs a project's file as air's own code.
Found: with ``PATH=:/usr/bin`` (an unset variable before a colon, a common slip; ``.`` does the
same) air's own ``git``, run in the project or a task's worktree, executed a ``git`` file a
cloned repository shipped at its top (or a task wrote), outside the sandbox and as the user,
at the first git command; ``bwrap`` was looked up the same way, so a shipped ``bwrap`` would
have run every tool call unsandboxed. With ``PYTHONPATH=:/opt/lib`` ``air --version`` in such
a project imported its ``docopt.py``, and a worker, started in its task's worktree, its
``trio.py``. Now air drops relative entries from both first thing
(``air.search_path``), git's and every worker's environment never has one, and
bwrap, unshare and the C++ tools are looked up on absolute entries only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.cpp.project import CppProjectDetector
from air.ipc.environment import worker_environment
from air.search_path import absolute_search_path, installed, own_search_paths
from air.tools import task_view
from air.tools.sandbox import SandboxRunner
from air.workspace.gitsafe import git_environment, locate_git, run_git
from tests.cassette_turns import done_turn, tool_turn
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.trusted import trust_project

PLANT = "#!/bin/sh\ntouch {marker}\nexit 0\n"
MODULE = "open({marker!r}, 'a').write(__name__ + ' ')\n"
AIR = str(Path(sys.executable).with_name("air"))


def _modules(where: Path, marker: Path, *names: str) -> None:
    for name in names:
        (where / f"{name}.py").write_text(MODULE.format(marker=str(marker)))


def _plant(where: Path, marker: Path, *names: str) -> None:
    for name in names:
        program = where / name
        program.write_text(PLANT.format(marker=marker))
        program.chmod(0o755)


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        (":/usr/bin:/bin", "/usr/bin:/bin"),
        ("/usr/bin::/bin:", "/usr/bin:/bin"),
        (".:/usr/bin:bin:./tools", "/usr/bin"),
        ("/usr/local/bin:/usr/bin", "/usr/local/bin:/usr/bin"),
    ],
)
def test_only_absolute_entries_are_kept(path: str, kept: str) -> None:
    assert absolute_search_path(path) == kept


def test_a_workers_environment_keeps_absolute_entries_only() -> None:
    env = worker_environment({"PATH": ":/usr/bin:bin", "PYTHONPATH": ":/opt/lib:.:lib"})
    assert env["PATH"] == "/usr/bin"
    assert env["PYTHONPATH"] == "/opt/lib"
    assert "PYTHONPATH" not in worker_environment({"PYTHONPATH": ":."})


def test_air_imports_nothing_from_its_start_directory(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    _modules(tmp_path, marker, "re", "typing", "docopt", "trio", "yaml")
    for python_path in (":", f".{os.pathsep}/nonexistent", ""):
        env = {**os.environ, "PYTHONPATH": python_path}
        done = subprocess.run([AIR, "--help"], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
        assert not marker.exists(), python_path


def test_what_air_starts_inherits_absolute_entries_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", ":" + os.environ["PATH"])
    monkeypatch.setenv("PYTHONPATH", f"{os.pathsep}/opt/lib{os.pathsep}lib")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "lib"), *sys.path])
    own_search_paths()
    assert os.environ["PATH"] == absolute_search_path(":" + os.environ["PATH"])
    assert os.environ["PYTHONPATH"] == "/opt/lib"  # an MCP server, a hook: never the project
    assert str(tmp_path) not in sys.path
    assert str(tmp_path / "lib") not in sys.path
    monkeypatch.setenv("PYTHONPATH", ".")
    monkeypatch.setenv("LD_LIBRARY_PATH", f"/opt/ssl{os.pathsep}")
    own_search_paths()
    assert "PYTHONPATH" not in os.environ
    assert os.environ["LD_LIBRARY_PATH"] == "/opt/ssl"
    monkeypatch.setenv("LD_LIBRARY_PATH", ".")
    monkeypatch.setenv("TMPDIR", "tmp")
    own_search_paths()
    assert "LD_LIBRARY_PATH" not in os.environ
    assert "TMPDIR" not in os.environ  # Python's own choice then: never the project's tmp/


def test_nothing_absolute_falls_back_to_the_default() -> None:
    for path in (None, "", ":", ".:bin"):
        found = absolute_search_path(path).split(os.pathsep)
        assert found
        assert all(os.path.isabs(entry) for entry in found)


async def test_git_and_bwrap_are_never_found_in_the_work_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    marker = tmp_path / "ran"
    _plant(root, marker, "git", "bwrap", "unshare", "cmake")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", ":" + os.environ["PATH"])
    assert git_environment()["PATH"] == absolute_search_path(os.environ["PATH"])
    done = await run_git(locate_git(str(root), project_root=str(root)), "status", "--short")
    assert done.returncode == 0
    assert b"?? bwrap" in done.stdout  # the real git ran
    assert installed("bwrap") != "bwrap"
    assert SandboxRunner().bwrap_path == installed("bwrap")
    cmake = CppProjectDetector().detect(str(root)).tools["cmake"]
    assert cmake is not None
    assert os.path.isabs(cmake)  # what the C++ tools run (in the sandbox) is the installed one
    monkeypatch.setattr(task_view, "_view_checked", [])  # looked up again, here
    assert task_view.check_view_available() == installed("unshare")
    assert os.path.isabs(str(installed("unshare")))
    assert not marker.exists()


def test_a_run_in_a_repository_shipping_git_and_bwrap_runs_neither(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    marker = tmp_path / "ran"
    (root / ".gitignore").write_text("cas/\n*.yaml\n.air/local/\n")
    _plant(root, marker, "git", "bwrap", "ssh", "cmake")
    _modules(root, marker, "trio", "pydantic", "yaml")  # what a worker imports first
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a repository that ships its own git")
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: t\n    title: Note it\n    scope: {write_area: ['notes/**']}\n"
    )
    (root / "cas").mkdir()
    command = "mkdir -p notes && echo ok > notes/a.txt && echo $PATH > notes/path"
    run = tool_turn("1", "shell.run", command=command)
    done = done_turn()
    (root / "cas" / "t.jsonl").write_text(f"{run}\n{done}\n")
    trust_project(root, home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env = {k: v for k, v in env.items() if not k.startswith("AIR_")}
    python_path = os.pathsep.join(["", *os.environ.get("PYTHONPATH", "").split(os.pathsep)])
    env.update(HOME=str(home), PATH=":" + os.environ["PATH"], PYTHONPATH=python_path)
    proc = air_cli(["run", "--headless", "batch.yaml", "--cassette", "cas"], cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (root / "notes" / "a.txt").read_text() == "ok\n"  # the real git merged it
    # what air starts inherits its PATH without the empty entry
    assert (root / "notes" / "path").read_text().strip() == absolute_search_path(env["PATH"])
    assert git(root, "log", "-1", "--format=%s").startswith("Merge task t")
    assert not marker.exists()


def test_the_doctor_names_the_relative_entries_it_found(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    git(tmp_path, "init", "-q")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["HOME"] = str(home)
    clean = air_cli(["doctor"], cwd=tmp_path, env=env)
    assert "ok    search_paths" in clean.stdout, clean.stdout
    env["PYTHONPATH"] = f"{os.pathsep}/opt/x"
    env["LD_LIBRARY_PATH"] = f"/opt/y{os.pathsep}"
    warned = air_cli(["doctor"], cwd=tmp_path, env=env)
    assert "WARN  search_paths" in warned.stdout
    assert "LD_LIBRARY_PATH='/opt/y:'; PYTHONPATH=':/opt/x'" in warned.stdout
    assert "export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/opt/lib" in warned.stdout
    assert clean.returncode == 0
    assert warned.returncode == 1  # a problem found, as every warning is
