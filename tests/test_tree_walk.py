"""``air.tree_walk``: trees of any depth walked, made and removed without recursion, never
through a link. Real directories: 3,000 deep (past Python's recursion limit, which ended a run
with a traceback), 2,200 deep (past ``PATH_MAX``: reachable only a level at a time), as root
and, for the removal of directories their owner locked, as nobody."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.tree_walk import make_dirs, remove_tree, walk, walk_files
from tests.tools.sandbox_probe import IDENTITIES, NOBODY, unprivileged_dir, unprivileged_python

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _leave_no_deep_tree(tmp_path: Path) -> Iterator[None]:
    """pytest's own cleanup of old tmp paths recurses: a deep tree left there by a failed test
    would break every later session's start."""
    yield
    for entry in os.listdir(tmp_path):
        path = tmp_path / entry
        if path.is_dir() and not path.is_symlink():
            remove_tree(str(path), ignore_errors=True)


def _deep(top: Path, depth: int, name: str = "d") -> None:
    """``top/d/d/.../d/f`` ``depth`` directories down, made a level at a time."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            down = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = down
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_walk_is_os_walk_with_links_listed_not_entered_and_pruning(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "secret.md").write_text("no\n")
    root = tmp_path / "root"
    for d in ("a/b/c", "a/skip/deeper", "e"):
        (root / d).mkdir(parents=True)
    for f in ("a/one.md", "a/b/two.md", "a/b/c/three.txt", "a/skip/deeper/four.md", "top.md"):
        (root / f).write_text("x\n")
    os.symlink(outside, root / "a" / "linked")
    os.symlink(root / "top.md", root / "e" / "file-link.md")

    def pruned(walker: object) -> list[tuple[str, list[str], list[str]]]:
        seen = []
        for dirpath, dirnames, filenames in walker:  # type: ignore[attr-defined]
            dirnames[:] = [d for d in dirnames if d != "skip"]
            seen.append((dirpath, sorted(dirnames), sorted(filenames)))
        return sorted(seen)

    assert pruned(walk(str(root))) == pruned(os.walk(root))
    assert sorted(walk_files(str(root), ".md")) == sorted(
        str(p) for p in root.rglob("*.md") if not p.is_dir()
    )
    assert str(outside / "inner" / "secret.md") not in walk_files(str(root), ".md")


def test_a_tree_past_the_recursion_limit_is_walked_made_and_removed(tmp_path: Path) -> None:
    depth = 1_900  # about 3,800 characters: within PATH_MAX, past the recursion limit
    _deep(tmp_path, depth)
    with pytest.raises(RecursionError):
        list(os.walk(tmp_path))  # what a merge did before
    assert sum(1 for _ in walk(str(tmp_path))) == depth + 1
    made = tmp_path / "made" / os.path.join(*["m"] * depth)
    make_dirs(str(made))
    make_dirs(str(made))  # exists: nothing to do
    assert made.is_dir()
    (made / "file").write_text("x")
    with pytest.raises(FileExistsError):
        make_dirs(str(made / "file"))
    remove_tree(str(tmp_path / "made"))
    remove_tree(str(tmp_path / "d"))
    assert sorted(os.listdir(tmp_path)) == []


def test_a_tree_deeper_than_path_max_goes_and_no_link_is_followed(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious").write_text("mine\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    _deep(victim, 2_200)  # 4,400 characters: no path names the bottom
    os.symlink(keep, victim / "to-keep")
    os.symlink(keep / "precious", victim / "to-precious")
    remove_tree(str(victim))
    assert not victim.exists()
    assert (keep / "precious").read_text() == "mine\n"
    with pytest.raises(FileNotFoundError):
        remove_tree(str(victim))
    remove_tree(str(victim), ignore_errors=True)
    os.symlink(keep, tmp_path / "link")
    with pytest.raises(OSError, match="link"):
        remove_tree(str(tmp_path / "link"))  # a link is not a tree to remove
    assert (keep / "precious").exists()


REMOVE_LOCKED = """
import os, sys
sys.path.insert(0, sys.argv[2])
from air.tree_walk import remove_tree
top = sys.argv[1]
os.makedirs(os.path.join(top, "t/unreadable/x"))
os.makedirs(os.path.join(top, "t/unwritable"))
open(os.path.join(top, "t/unwritable/f"), "w").close()
os.chmod(os.path.join(top, "t/unreadable"), 0)
os.chmod(os.path.join(top, "t/unwritable"), 0o500)
remove_tree(os.path.join(top, "t"))
print(sorted(os.listdir(top)))
"""


@pytest.mark.parametrize("identity", IDENTITIES)
def test_directories_their_owner_locked_are_removed(identity: str, tmp_path: Path) -> None:
    """A task's command may leave a directory of mode 000 or 0500 in its worktree; the
    cleanup removes it (its owner may change its mode), as ``rm -rf`` does."""
    top = unprivileged_dir() if identity == "nobody" else tmp_path
    argv = [unprivileged_python(), "-I", "-c", REMOVE_LOCKED, str(top), str(REPO)]
    if identity == "nobody":
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    if identity == "nobody":
        os.rmdir(top)
    assert sys.getrecursionlimit() < 1_900  # the depth the tests above go past
