"""The rules of air's hardened git, one by one, on real repositories: how a worktree's, a
project's and a submodule's git directory is found and verified without asking git, and that
every git air runs is pinned to that directory and its work tree.

Found unheld by mutation of ``air/workspace/gitsafe.py`` (docs/mutation.md): the suite's
attacks went through the WorkspaceManager, whose other checks caught them first, so removing
one of these rules failed no test — a ``.git`` that is a link to a copy of itself, one that is
not in git's form or not UTF-8, a common directory that redirects again, a submodule checkout
reached through a link or naming a git directory outside ``modules/``, the pinning of
``run_git`` and ``run_git_bounded`` (git left to find the repository from a ``.git`` file
rewritten after the check), their output cut, and a cancelled bounded call's git. Writing them
found that a worktree git 2.48 links with relative paths (``worktree.useRelativePaths``) was
refused as tampered with, and its record never forgotten.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.workspace import gitsafe
from air.workspace.gitsafe import (
    GitLocation,
    git_environment,
    linked_location,
    list_git,
    locate_git,
    run_git,
    run_git_bounded,
    submodule_location,
    verify_location,
)
from air.workspace.worktree_records import forget_worktree
from tests.gitrepo import commit_files, git, with_submodules

SUB = "third_party/lib"
EMPTY_BLOB = b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def _project(tmp_path: Path, name: str = "proj") -> Path:
    return commit_files(tmp_path / name, {"a.txt": "a\n"})


def _worktree(root: Path, where: Path) -> Path:
    git(root, "worktree", "add", "-q", "--detach", str(where))
    return where


def _gitdir(tree: Path) -> Path:
    return Path((tree / ".git").read_text().split(" ", 1)[1].strip())


def _refused(call: object) -> str:
    assert callable(call)
    with pytest.raises(AirException) as raised:
        call()
    assert raised.value.error.kind == ErrorKind.WORKSPACE_ERROR
    return raised.value.error.message


def test_a_worktree_is_located_in_its_own_git_dir_under_the_projects(tmp_path: Path) -> None:
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    main = locate_git(str(root), project_root=str(root))
    assert main.git_dir == main.common_dir == str(root / ".git")
    found = locate_git(str(tree), project_root=str(root))
    assert found.work_tree == str(tree)
    assert found.git_dir == str(_gitdir(tree))
    assert found.common_dir == str(root / ".git")
    assert found.fingerprint != main.fingerprint


@pytest.mark.parametrize(
    "form",
    [
        b"GITDIR: {}\n",  # git reads only its own form
        b"gitdir:{}\n",
        b"gitdir: \xff{}\n",  # not UTF-8: refused as what it names, never a decode error
        b"{}\n",
    ],
)
def test_a_dot_git_file_not_in_gits_form_is_refused(tmp_path: Path, form: bytes) -> None:
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    (tree / ".git").write_bytes(form.replace(b"{}", os.fsencode(_gitdir(tree))))
    _refused(lambda: locate_git(str(tree), project_root=str(root)))


def test_a_dot_git_that_is_a_link_to_a_copy_of_itself_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    copy = tmp_path / "copy.git"
    copy.write_bytes((tree / ".git").read_bytes())
    (tree / ".git").unlink()
    (tree / ".git").symlink_to(copy)
    assert "not a regular file" in _refused(lambda: locate_git(str(tree), project_root=str(root)))


def test_a_common_dir_that_redirects_again_is_refused(tmp_path: Path) -> None:
    """The project is itself a linked worktree; its repository's git directory must be a
    repository's own, not one more ``commondir`` redirect."""
    repo = _project(tmp_path, "repo")
    project = _worktree(repo, tmp_path / "project")
    assert locate_git(str(project), project_root=str(project)).common_dir == str(repo / ".git")
    (repo / ".git" / "commondir").write_text(".\n")
    said = _refused(lambda: locate_git(str(project), project_root=str(project)))
    assert "not a repository's own git directory" in said


@pytest.mark.parametrize("how", ["kept", "no objects", "no HEAD", "a commondir"])
def test_a_project_whose_own_git_dir_is_kept_elsewhere_is_located_there(
    tmp_path: Path, how: str
) -> None:
    """``git init --separate-git-dir`` (as a submodule's checkout has it): the project's
    ``.git`` file names a repository's own git directory, which is the project's; one naming a
    directory without ``objects`` or ``HEAD``, or with a ``commondir`` redirect, is refused."""
    root, kept = tmp_path / "proj", tmp_path / "kept.git"
    root.mkdir()
    git(root, "init", "-q", "--separate-git-dir", str(kept))
    if how == "no objects":
        shutil.rmtree(kept / "objects")
    elif how == "no HEAD":
        (kept / "HEAD").unlink()
    elif how == "a commondir":
        (kept / "commondir").write_text(".\n")
    if how == "kept":
        found = locate_git(str(root), project_root=str(root))
        assert found.git_dir == found.common_dir == str(kept)
        assert found.work_tree == str(root)
    else:
        _refused(lambda: locate_git(str(root), project_root=str(root)))


def test_a_worktree_git_linked_with_relative_paths_is_located_and_forgotten(
    tmp_path: Path,
) -> None:
    """git >= 2.48 with ``worktree.useRelativePaths`` writes the ``.git`` file relative to the
    worktree and the record's ``gitdir`` relative to the record (this machine's git writes
    absolute ones: the links are rewritten as 2.48 writes them)."""
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    absolute = locate_git(str(tree), project_root=str(root))
    record = _gitdir(tree)
    (tree / ".git").write_text(f"gitdir: {os.path.relpath(record, tree)}\n")
    (record / "gitdir").write_text(os.path.relpath(tree / ".git", record) + "\n")
    relative = locate_git(str(tree), project_root=str(root))
    assert (relative.work_tree, relative.git_dir, relative.common_dir) == absolute[:3]
    # a record that points back elsewhere, relative too, is still refused
    (record / "gitdir").write_text(os.path.relpath(tmp_path / "other" / ".git", record) + "\n")
    assert "does not point back" in _refused(lambda: locate_git(str(tree), project_root=str(root)))
    (record / "gitdir").write_text(os.path.relpath(tree / ".git", record) + "\n")
    shutil.rmtree(tree)
    assert forget_worktree(str(root / ".git"), str(tree)) == [str(record)]
    assert not record.exists()


def test_a_recorded_git_dir_or_fingerprint_that_differs_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    found = locate_git(str(tree), project_root=str(root))
    same = verify_location(
        str(tree), project_root=str(root), git_dir=found.git_dir, fingerprint=found.fingerprint
    )
    assert same == found
    # a record from before fingerprints were kept: the git directory alone decides
    assert verify_location(str(tree), project_root=str(root), git_dir=None, fingerprint=None)
    said = _refused(
        lambda: verify_location(
            str(tree), project_root=str(root), git_dir=str(root / ".git"), fingerprint=None
        )
    )
    assert "git directory is now" in said
    _refused(
        lambda: verify_location(
            str(tree), project_root=str(root), git_dir=found.git_dir, fingerprint="0" * 64
        )
    )


def test_a_worktree_of_another_repository_is_not_this_ones(tmp_path: Path) -> None:
    root = _project(tmp_path)
    other = _project(tmp_path, "other")
    tree = _worktree(root, tmp_path / "wt")
    assert linked_location(str(tree), str(root / ".git")).common_dir == str(root / ".git")
    _refused(lambda: linked_location(str(tree), str(other / ".git")))


@pytest.fixture
def with_submodule(tmp_path: Path) -> Path:
    lib = commit_files(tmp_path / "lib", {"f.h": "int f();\n"})
    return with_submodules(tmp_path / "proj", lib, (SUB,), {"a.txt": "a\n"})


def test_a_submodule_checkout_is_located_in_the_projects_modules(with_submodule: Path) -> None:
    root = with_submodule
    found = submodule_location(str(root), SUB)
    assert found is not None
    assert found.work_tree == str(root / SUB)
    assert found.git_dir == found.common_dir == str(root / ".git" / "modules" / SUB)
    assert submodule_location(str(root), "no/such/path") is None


def test_a_submodule_checkout_reached_through_a_link_is_none(with_submodule: Path) -> None:
    root = with_submodule
    real = root / "third_party" / "real"
    (root / SUB).rename(real)
    (root / SUB).symlink_to("real")  # its .git still names the right git directory
    assert submodule_location(str(root), SUB) is None


@pytest.mark.parametrize("how", ["form", "outside_modules", "redirect"])
def test_a_submodule_git_link_of_another_shape_is_none(with_submodule: Path, how: str) -> None:
    root = with_submodule
    dot_git = root / SUB / ".git"
    modules = root / ".git" / "modules" / SUB
    if how == "form":
        dot_git.write_text(f"GITDIR: {modules}\n")
    elif how == "outside_modules":  # a real git directory, under the project's, not a module's
        elsewhere = root / ".git" / "elsewhere"
        git(root, "init", "-q", "--bare", str(elsewhere))
        dot_git.write_text(f"gitdir: {elsewhere}\n")
    else:
        (modules / "commondir").write_text("../../..\n")
    assert submodule_location(str(root), SUB) is None


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[GitLocation, Path]:
    """A verified worktree whose ``.git`` file was then rewritten to name another repository
    (one with a filter driver that leaves a marker): air's git must use the verified one."""
    root = _project(tmp_path)
    tree = _worktree(root, tmp_path / "wt")
    location = locate_git(str(tree), project_root=str(root))
    decoy = _project(tmp_path, "decoy")
    (tree / ".git").write_text(f"gitdir: {decoy / '.git'}\n")
    marker = tmp_path / "MARKER"
    git(root, "config", "filter.evil.clean", f"touch {marker}; cat")
    (tree / ".gitattributes").write_text("*.txt filter=evil\n")
    (tree / "b.txt").write_text("b\n")  # a file to add
    return location, marker


async def test_run_git_uses_the_verified_directory_and_work_tree(
    pinned: tuple[GitLocation, Path],
) -> None:
    location, marker = pinned
    done = await run_git(location, "rev-parse", "--absolute-git-dir")
    assert done.stdout.decode().strip() == location.git_dir
    listed = await run_git(location, "ls-files")
    assert (listed.returncode, listed.stdout) == (0, b"a.txt\n")  # run in its work tree
    added = await run_git(location, "add", "b.txt")
    assert added.returncode == 0, added.stderr
    assert not marker.exists()  # the pinned repository's driver was made inert
    hashed = await run_git(location, "hash-object", "--stdin")
    assert hashed.stdout.strip() == EMPTY_BLOB  # no input unless given
    failed = await run_git(location, "rev-parse", "--verify", "no-such-ref")
    assert failed.returncode != 0
    assert b"fatal" in failed.stderr


def test_a_blocking_listing_is_pinned_unless_no_location_is_given(
    pinned: tuple[GitLocation, Path],
) -> None:
    location, _ = pinned
    tree = location.work_tree
    done = list_git(location, "rev-parse", "--absolute-git-dir", cwd=tree)
    assert done.stdout.decode().strip() == location.git_dir
    assert list_git(location, "ls-files", cwd=tree).stdout == b"a.txt\n"
    # without one, git finds the repository from the directory (here the .git file's decoy)
    found = list_git(None, "rev-parse", "--absolute-git-dir", cwd=tree)
    assert found.stdout.decode().strip().endswith("/decoy/.git")
    failed = list_git(location, "rev-parse", "--verify", "no-such-ref", cwd=tree)
    assert failed.returncode != 0
    assert b"fatal" in failed.stderr


async def test_run_git_bounded_is_pinned_and_cuts_at_its_limit(
    pinned: tuple[GitLocation, Path], tmp_path: Path
) -> None:
    location, _ = pinned
    done, cut = await run_git_bounded(location, "rev-parse", "--absolute-git-dir", limit=4096)
    assert (done.stdout.decode().strip(), cut) == (location.git_dir, False)
    listed, cut = await run_git_bounded(location, "ls-files", limit=4096)
    assert (listed.returncode, listed.stdout, cut) == (0, b"a.txt\n", False)
    assert listed.args == ["ls-files"]
    data = os.urandom(300_000)  # several reads of git's pipe
    (tmp_path / "big").write_bytes(data)
    blob = await _stored(location, tmp_path / "big")
    whole, cut = await run_git_bounded(location, "cat-file", "blob", blob, limit=len(data))
    assert (whole.stdout == data, cut) == (True, False)  # exactly the limit is not past it
    part, cut = await run_git_bounded(location, "cat-file", "blob", blob, limit=100_000)
    assert (part.stdout == data[:100_000], cut) == (True, True)
    failed, cut = await run_git_bounded(location, "cat-file", "blob", "0" * 40, limit=100)
    assert (failed.returncode != 0, cut) == (True, False)
    assert b"fatal" in failed.stderr


async def _stored(location: GitLocation, path: Path) -> str:
    """A blob of ``path`` in the verified repository (its ``.git`` file names another)."""
    return (await run_git(location, "hash-object", "-w", str(path))).stdout.decode().strip()


def _processes_naming(word: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if word.encode() in handle.read().split(b"\0"):
                    found.append(int(pid))
        except (OSError, ValueError):
            continue
    return found


async def test_a_cancelled_bounded_call_ends_its_git(
    pinned: tuple[GitLocation, Path], tmp_path: Path
) -> None:
    """The call is cancelled while its git waits (for a writer to a named pipe, which never
    comes): the git goes with it, reaped (no zombie left). It ran in a process group of its own
    (a terminal's Ctrl-C never reaches it). Were it left running, the call would wait for it
    forever: a watchdog opens the pipe after a minute, which lets such a git end, and the test
    fails."""
    location, _ = pinned
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rescued: list[int] = []
    groups: list[tuple[int, int]] = []

    def watchdog() -> None:
        rescued.extend(_processes_naming(str(fifo)))
        if rescued:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(60, watchdog)
    timer.start()
    try:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def cancel_once_git_waits() -> None:
                    while not (found := _processes_naming(str(fifo))):  # noqa: ASYNC110 (a process)
                        await trio.sleep(0.01)
                    groups.extend((pid, os.getpgid(pid)) for pid in found)
                    scope.cancel()

                nursery.start_soon(cancel_once_git_waits)
                await run_git_bounded(location, "hash-object", str(fifo), limit=4096)
    finally:
        timer.cancel()
    assert scope.cancelled_caught
    assert rescued == []
    assert _processes_naming(str(fifo)) == []
    assert [pid for pid, group in groups] == [group for pid, group in groups]
    assert _zombie_children() == []


def _zombie_children() -> list[int]:
    """This process's children that ended and were never reaped."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.append(int(pid))
    return found


def test_the_environment_keeps_what_git_needs_from_the_one_given(tmp_path: Path) -> None:
    """Of the environment passed (a signing program's, say) only the neutral variables stay,
    and git is found only on the absolute entries of its PATH (never in a work tree)."""
    given = {"PATH": "bin:/opt/tools/bin:.:/usr/bin", "HOME": "/home/u", "GIT_DIR": "/evil"}
    env = git_environment(environ=given | {"GIT_CONFIG_PARAMETERS": "'core.pager=evil'"})
    assert env["PATH"] == "/opt/tools/bin:/usr/bin"
    assert env["HOME"] == "/home/u"
    assert "GIT_DIR" not in env
    assert "GIT_CONFIG_PARAMETERS" not in env
    assert (env["GIT_CONFIG_GLOBAL"], env["GIT_CONFIG_NOSYSTEM"]) == ("/dev/null", "1")


async def test_a_repository_whose_config_git_cannot_read_is_a_workspace_error(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    location = locate_git(str(root), project_root=str(root))
    with (root / ".git" / "config").open("a") as config:
        config.write("[broken\n")
    with pytest.raises(AirException) as raised:
        await run_git(location, "diff")
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert error.message == f"cannot read the git config of {root}"
    assert "bad config" in str(error.detail)
    assert "git config --list --show-origin" in str(error.user_action)


async def test_a_call_without_a_location_still_runs_no_driver_of_the_repository(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    marker = tmp_path / "MARKER"
    git(root, "config", "filter.evil.clean", f"touch {marker}; cat")
    (root / ".gitattributes").write_text("*.txt filter=evil\n")
    (root / "b.txt").write_text("b\n")
    added = await run_git(None, "add", "b.txt", cwd=str(root))
    assert added.returncode == 0, added.stderr
    assert not marker.exists()


def test_the_command_after_its_c_options_is_the_subcommand() -> None:
    """Only ``rev-parse`` / ``rev-list`` skip the driver listing: what follows ``-c`` pairs."""
    sub = gitsafe._subcommand
    assert sub(("rev-parse", "HEAD")) == "rev-parse"
    assert sub(("-c", "a.b=c", "-c", "d.e=f", "rev-list", "HEAD")) == "rev-list"
    assert sub(("-c", "a.b=c", "diff", "rev-parse")) == "diff"
    assert sub(("--no-pager", "rev-parse")) is None  # an option air does not pass: not skipped
    assert sub(("-c", "a.b=c")) is None
    assert sub(()) is None


def test_the_ignore_file_under_xdg_config_home_counts(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.log\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert gitsafe.user_excludes() == str(xdg / "git" / "ignore")
