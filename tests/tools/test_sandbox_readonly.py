"""A task without a write area cannot change the project (issue 22 item 3), and no sandbox can
read air's own state (item 7), as root and as an unprivileged user.

The six attacks of the issue run straight through the sandbox (``open_sandboxed`` with the
task's read-only view, as shell.run and the cpp tools spawn it), bypassing the command
classifier: each took effect before. Afterwards the project — a git-ignored ``notes/``
included — is byte-identical, while a build in the view still works and its outputs stay
visible to the task's later commands only. ``.air`` (every session's database) is an empty,
read-only directory inside every sandbox, whatever path leads to it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.ids import new_id
from air.cpp.process import is_plain_file, read_workspace_file, remove_written_file
from air.cpp.project import mark_build_dir
from air.cpp.view import OverlayView, using_view
from air.tools.run import ToolRun
from air.tools.task_view import task_view_dir
from tests.tools.conftest import Env
from tests.tools.sandbox_probe import IDENTITIES, NOBODY, Sandboxed

ATTACKS = [
    "cmake -E rm -rf src",
    "cmake -E remove_directory notes",
    "cmake -E copy README.md src/app.c",
    "make -f /dev/null --eval='$(shell rm -rf notes src)'",
    "make -f /dev/null -E '$(shell echo pwned > README.md)'",
    "gcc -wrapper rm,-rf,notes,src -x c -c /dev/null -o /dev/null",
    "sed -n '1w src/app.c' README.md",
]


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root`` (``.git`` included): mode and content hash or link target."""
    found: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            if os.path.islink(path):
                body = os.readlink(path)
            elif os.path.isfile(path):
                body = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                body = "dir"
            found[os.path.relpath(path, root)] = (info.st_mode, body)
    return found


def _project(box: Sandboxed) -> None:
    ws = box.workspace
    (ws / "src").mkdir()
    (ws / "src" / "app.c").write_text("int main(void) { return 0; }\n")
    (ws / "README.md").write_text("the project\n")
    (ws / ".gitignore").write_text("notes/\n")
    (ws / "notes").mkdir()
    (ws / "notes" / "ideas.txt").write_text("kept out of git, and never lost\n")
    (ws / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(app C)\nadd_executable(app src/app.c)\n"
    )
    sessions = ws / ".air" / "local" / "sessions" / "s1"
    sessions.mkdir(parents=True)
    (sessions / "session.db").write_text("AIRSBXSECRETSESSIONDB\n")
    git = ["git", "-c", f"safe.directory={ws}", "-C", str(ws)]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "i"], check=True
    )
    if box.unprivileged:
        for dirpath, dirnames, filenames in os.walk(box.workspace):
            for name in [*dirnames, *filenames]:
                os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)


@pytest.fixture(params=IDENTITIES)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandboxed]:
    made = Sandboxed(tmp_path, request.param, {})
    _project(made)
    yield made
    made.close()


def test_the_issues_attacks_change_nothing_in_a_read_only_view(box: Sandboxed) -> None:
    before = _snapshot(box.workspace)
    for command in ATTACKS:
        out = box.run(f"{command}; ls -A; ls src notes", read_only="task-ro")
        assert out["exit_code"] is not None, (command, out)
    assert _snapshot(box.workspace) == before
    # the attacks did take effect in the view itself: it is writable, only not the project
    out = box.run("ls -A; cat README.md", read_only="task-ro")
    assert "notes" not in str(out["stdout"]).split(), out
    assert "src" not in str(out["stdout"]).split(), out


def test_a_build_in_the_view_works_and_later_commands_of_the_task_see_it(
    box: Sandboxed,
) -> None:
    before = _snapshot(box.workspace)
    configure = box.run("cmake -S . -B build -G Ninja >/dev/null && echo ok", read_only="t-build")
    assert configure["stdout"] == "ok\n", configure
    built = box.run(
        "cmake --build build >/dev/null && ./build/app && echo ran", read_only="t-build"
    )
    assert built["stdout"] == "ran\n", built
    assert box.run("ls build/app", read_only="another-task")["exit_code"] != 0
    assert _snapshot(box.workspace) == before


def test_air_state_is_hidden_in_every_sandbox(box: Sandboxed) -> None:
    ws = box.workspace
    readers = [
        "cat .air/local/sessions/*/session.db",
        f"cat {ws}/.air/local/sessions/s1/session.db",
        "ln -s .air peek && cat peek/local/sessions/s1/session.db",
        f"ln -s {ws}/.air/local abs && cat abs/sessions/s1/session.db",
        "cd .air/local 2>&1; find . -name session.db | xargs cat",
        "tar cf - . | tar tf - | grep session.db",
    ]
    for read_only in (None, "task-ro"):
        listing = box.run("ls -A .air", read_only=read_only)
        assert (listing["exit_code"], listing["stdout"]) == (0, ""), listing
        for command in readers:
            out = box.run(command, read_only=read_only)
            text = f"{out['stdout']}{out['stderr']}"
            assert "AIRSBXSECRET" not in text, (command, out)
            assert "session.db\n" not in text, (command, out)
        write = box.run("touch .air/x; mkdir .air/y; mv .air gone", read_only=read_only)
        assert write["exit_code"] != 0, write
    assert (ws / ".air" / "local" / "sessions" / "s1" / "session.db").exists()
    assert not (ws / ".air" / "x").exists()


def test_a_worktree_sandbox_sees_no_air_state_of_its_project(tmp_path: Path) -> None:
    """A task's worktree lives under the project's ``.air``: its sandbox binds only the
    worktree and the main repository's git dir, never the sessions next to it."""
    box = Sandboxed(tmp_path, "self", {})
    try:
        _project(box)
        wt = box.workspace / ".air" / "local" / "worktrees" / "t1"
        subprocess.run(
            ["git", "-C", str(box.workspace), "worktree", "add", "-q", str(wt)], check=True
        )
        sessions = box.workspace / ".air" / "local" / "sessions"
        out = box.run(f"git status --short; cat {sessions}/s1/session.db; ls {sessions}", wt)
        assert "AIRSBXSECRET" not in f"{out['stdout']}{out['stderr']}", out
        assert "No such file or directory" in str(out["stderr"]), out
    finally:
        box.close()


async def _decided(env: Env, command: str, **ctx: object) -> dict[str, object]:
    """shell.run as the registry hands a decided call to its workspace executor (the
    PermissionEngine is not under test here: the sandbox must hold whatever it lets through)."""
    definition = next(d for d in env.registry.list() if d.name == "shell.run")
    run = ToolRun(
        tool_run_id=new_id("tr"),
        definition=definition,
        context=env.ctx(headless=True, **ctx),
        registry=env.registry,
    )
    output = await env.registry.workspace.execute("shell.run", {"command": command}, run)
    assert isinstance(output, dict)
    return output


async def test_shell_run_of_a_task_without_a_write_area_leaves_the_project_alone(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(env.tmp))  # the views go with the test
    (env.root / "notes").mkdir()
    (env.root / "notes" / "n.txt").write_text("mine\n")
    before = _snapshot(env.root / "src"), _snapshot(env.root / "notes")
    attack = "mkdir out && echo built > out/result && cmake -E rm -rf notes src"
    assert (await _decided(env, attack, write_area=[]))["exit_code"] == 0
    out = await _decided(env, "cat out/result; ls", write_area=[])
    assert out["stdout"] == "built\nout\n", out
    assert (_snapshot(env.root / "src"), _snapshot(env.root / "notes")) == before
    assert not (env.root / "out").exists()
    # another task does not see this one's view; a task with a write area writes the project
    assert (await _decided(env, "ls out", write_area=[], task_id="task_2"))["exit_code"] != 0
    assert (await _decided(env, "echo x > src/new.txt", write_area=["src/**"]))["exit_code"] == 0
    assert (env.root / "src" / "new.txt").read_text() == "x\n"


async def test_a_reviewers_commands_leave_the_project_alone_whatever_they_write(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review (the reviewer template) has a write area of None, yet may change nothing: its
    commands run behind the read-only view as a task without a write area's do, so a command
    whose writes the analysis does not see (an option spelled another way, the project's own
    test script) changes nothing of the project."""
    monkeypatch.setattr(tempfile, "tempdir", str(env.tmp))
    (env.root / "notes.txt").write_text("ship it\n")

    def project() -> dict[str, tuple[int, str]]:  # air's own state (.air) aside
        return {k: v for k, v in _snapshot(env.root).items() if not k.startswith(".air")}

    before = project()
    reviewer = {"permission_template": "reviewer"}
    for attack in (
        "tar -cfnotes.txt src",
        "echo pwned > src/app.py; rm -rf src/sub",
        "mkdir out && echo built > out/result",
    ):
        assert (await _decided(env, attack, **reviewer))["exit_code"] == 0, attack
    out = await _decided(env, "cat out/result; head -c 3 notes.txt", **reviewer)
    assert out["stdout"] == "built\nsrc", out  # the review's later commands see its writes
    assert project() == before
    # an executor of the same project, write area None: its command writes the project
    assert (await _decided(env, "echo x > notes.txt"))["exit_code"] == 0
    assert (env.root / "notes.txt").read_text() == "x\n"


@pytest.fixture
def own_box(tmp_path: Path) -> Iterator[Sandboxed]:
    """A box run by the suite's own user: the parent reads the view it made."""
    made = Sandboxed(tmp_path, "self", {})
    _project(made)
    yield made
    made.close()


def test_a_views_directory_another_user_made_first_is_left_to_them(own_box: Sandboxed) -> None:
    """Found: on a shared /tmp (a login node), another user who made ``air-views-<uid>`` first
    had every read-only task of this user fail (environment_error). Now the process makes a
    directory of its own under a random name, and the other user's is left as it is."""
    taken = own_box.base / f"air-views-{os.getuid()}"
    taken.mkdir(mode=0o755)
    os.chown(taken, NOBODY, NOBODY)
    done = own_box.run("mkdir -p build && echo x > build/out && cat build/out", read_only="t-1")
    assert done["exit_code"] == 0, done
    assert "x" in str(done["stdout"])
    assert taken.stat().st_uid == NOBODY
    assert list(taken.iterdir()) == []
    [own] = own_box.base.glob(f"air-views-{os.getuid()}-*")
    assert own.stat().st_uid == os.getuid()
    assert own.stat().st_mode & 0o777 == 0o700


def test_the_parent_finds_what_the_view_holds(
    own_box: Sandboxed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OverlayView.locate`` answers as the overlay does, read from the view's real upper dir:
    written files, deleted ones (whiteouts), replaced directories (opaque) and untouched ones."""
    view_cmd = (
        "mkdir -p build && echo cache > build/CMakeCache.txt && rm -rf notes "
        "&& rm -rf src && mkdir src && echo new > src/other.c"
    )
    monkeypatch.setattr(tempfile, "tempdir", str(own_box.base))  # the probe's TMPDIR
    assert own_box.run(view_cmd, read_only="t-locate")["exit_code"] == 0
    ws = os.path.realpath(own_box.workspace)
    upper = os.path.join(task_view_dir(ws, "probe", "t-locate"), "u")
    view = OverlayView(ws, upper)
    assert view.locate(f"{ws}/build/CMakeCache.txt") == f"{upper}/build/CMakeCache.txt"
    assert view.locate(f"{ws}/notes/ideas.txt") is None
    assert view.locate(f"{ws}/notes") is None
    assert view.locate(f"{ws}/src/app.c") == f"{upper}/src/app.c"  # hidden: not there
    assert not os.path.exists(f"{upper}/src/app.c")
    assert view.locate(f"{ws}/README.md") == f"{ws}/README.md"
    with using_view(view):
        assert is_plain_file(ws, "build", "CMakeCache.txt")
        assert not is_plain_file(ws, "notes", "ideas.txt")
        assert read_workspace_file(ws, "build/CMakeCache.txt") == b"cache\n"
        assert read_workspace_file(ws, "notes/ideas.txt") is None
        remove_written_file(ws, "build/CMakeCache.txt")
        remove_written_file(ws, "README.md")  # only the view's copies are ever removed
    assert (own_box.workspace / "README.md").exists()
    assert not os.path.exists(f"{upper}/build/CMakeCache.txt")


def test_a_view_build_dir_that_leads_out_is_refused(
    own_box: Sandboxed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(own_box.base))  # the probe's TMPDIR
    outside = tmp_path / "outside"
    outside.mkdir()
    assert own_box.run(f"ln -s {outside} out", read_only="t-link")["exit_code"] == 0
    ws = os.path.realpath(own_box.workspace)
    view = OverlayView(ws, os.path.join(task_view_dir(ws, "probe", "t-link"), "u"))
    with using_view(view), pytest.raises(AirException) as caught:
        mark_build_dir(ws, "out")
    assert caught.value.error.kind == "policy_error"
    assert list(outside.iterdir()) == []
    with using_view(view):
        mark_build_dir(ws, "build")
    assert not (own_box.workspace / "build").exists()
    assert os.path.isfile(os.path.join(view.upper, "build", ".gitignore"))


def test_a_tmpdir_the_view_cannot_use_is_an_environment_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "tmp").mkdir(parents=True)
    for where, said in ((ws / "tmp", "inside the workspace"), (tmp_path / "a,b", "characters")):
        where.mkdir(exist_ok=True)
        monkeypatch.setattr(tempfile, "tempdir", str(where))
        with pytest.raises(AirException) as caught:
            task_view_dir(str(ws), "s1", "t1")
        assert caught.value.error.kind == "environment_error"
        assert said in caught.value.error.message
        assert "TMPDIR" in str(caught.value.error.user_action)


def test_a_view_unused_for_a_day_is_removed_and_nothing_it_links_to(
    own_box: Sandboxed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(own_box.base))  # the probe's TMPDIR
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept\n")
    made = own_box.run(f"mkdir -p build && ln -s {outside} build/link", read_only="t-old")
    assert made["exit_code"] == 0, made
    ws = str(own_box.workspace)
    old = task_view_dir(ws, "probe", "t-old")
    assert os.path.isdir(os.path.join(old, "w", "work"))  # overlay's, mode 000
    os.utime(old, (1, 1))
    fresh = task_view_dir(ws, "probe", "t-new")
    assert not os.path.exists(old)
    assert os.path.isdir(fresh)
    assert (outside / "keep.txt").read_text() == "kept\n"
    assert oct(outside.stat().st_mode & 0o777) == oct(0o755)
