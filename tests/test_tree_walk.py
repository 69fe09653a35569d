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

from air.tree_walk import dir_beneath, make_dirs, remove_tree, walk, walk_fd, walk_files
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


def _linked_tree(tmp_path: Path) -> tuple[Path, Path]:
    """``root`` with files, a ``skip`` directory, a link to ``outside`` (a directory with a
    secret) and a link to a file; each file holds its own path."""
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "secret.md").write_text("no\n")
    root = tmp_path / "root"
    for d in ("a/b/c", "a/skip/deeper", "e"):
        (root / d).mkdir(parents=True)
    for f in ("a/one.md", "a/b/two.md", "a/b/c/three.txt", "a/skip/deeper/four.md", "top.md"):
        (root / f).write_text(f + "\n")
    os.symlink(outside, root / "a" / "linked")
    os.symlink(root / "top.md", root / "e" / "file-link.md")
    return root, outside


def test_walk_is_os_walk_with_links_listed_not_entered_and_pruning(tmp_path: Path) -> None:
    root, outside = _linked_tree(tmp_path)

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


def _fwalked(walker: Iterator[tuple[str, list[str], list[str], int]]) -> list[tuple[str, ...]]:
    """What a walk of descriptors saw, ``skip`` pruned; each file read through its dirfd."""
    seen: list[tuple[str, ...]] = []
    for dirpath, dirnames, filenames, dirfd in walker:
        dirnames[:] = [d for d in dirnames if d != "skip"]
        texts = []
        for name in sorted(filenames):
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dirfd)
            except OSError:  # a link
                texts.append(f"{name}: link")
                continue
            with os.fdopen(fd) as handle:
                texts.append(f"{name}: {handle.read().strip()}")
        seen.append((dirpath, *sorted(dirnames), "|", *texts))
    return sorted(seen)


def _open_in(tree: Path) -> int:
    """This process's descriptors open in ``tree`` (one too deep to name counts: the walk's);
    other threads' files, sockets and pipes of the test process are not counted."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # closed meanwhile (the listing's own, another thread's)
            continue
        except OSError:  # a path past PATH_MAX: deep in the tree
            found += 1
            continue
        found += target == str(tree) or target.startswith(f"{tree}/")
    return found


def test_walk_fd_is_os_fwalk_one_descriptor_at_a_time(tmp_path: Path) -> None:
    root, _ = _linked_tree(tmp_path)
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _fwalked(walk_fd(top)) == _fwalked(os.fwalk(".", dir_fd=top))
        assert _fwalked(walk_fd(top))[0] == (".", "a", "e", "|", "top.md: top.md")
        os.fstat(top)  # still the caller's, open
    finally:
        os.close(top)
    depth = 2_200  # past PATH_MAX and the recursion limit
    _deep(tmp_path, depth)
    top = os.open(tmp_path / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(RecursionError):
            list(os.fwalk(".", dir_fd=top))
        descriptors = set()
        files: list[list[str]] = []
        for _, _, filenames, _ in walk_fd(top):
            files.append(filenames)
            descriptors.add(_open_in(tmp_path / "d"))
        assert len(files) == depth
        assert files[-1] == ["f"]
        assert max(descriptors) - min(descriptors) <= 1  # not one per level
    finally:
        os.close(top)


def test_walk_fd_stops_where_a_directory_it_left_was_moved(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "z").mkdir()
    (root / "a" / "z" / "mine.txt").write_text("mine\n")
    elsewhere = tmp_path / "elsewhere"  # same names, not below root
    (elsewhere / "z").mkdir(parents=True)
    (elsewhere / "z" / "secret.txt").write_text("secret\n")
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    seen: list[tuple[str, list[str]]] = []
    try:
        for dirpath, dirnames, filenames, _ in walk_fd(top):
            if dirpath == "./a":
                dirnames[:] = ["b", "z"]  # b first: z is entered after coming back up
            if dirpath == "./a/b/c":  # a command moves b away while the walk is below it
                os.rename(root / "a" / "b", elsewhere / "b")
            seen.append((dirpath, sorted(filenames)))
    finally:
        os.close(top)
    assert ("./a/z", ["secret.txt"]) not in seen
    assert [p for p, _ in seen] == [".", "./a", "./a/b", "./a/b/c"]


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


def test_a_directory_gone_or_a_link_is_passed_over_and_the_walk_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory a command removed between its listing and its turn, or a link among the
    directories, is passed over; its siblings after it are still walked (a credential scan or
    a merge that stopped there would miss the rest of the tree)."""
    root = tmp_path / "root"
    for d in ("gone", "kept"):
        (root / d).mkdir(parents=True)
    (root / "kept" / "f").write_text("f\n")
    os.symlink(tmp_path, root / "link")
    seen = []
    for dirpath, dirnames, _ in walk(str(root)):
        if dirpath == str(root):
            (root / "gone").rmdir()
            dirnames[:] = ["gone", "link", "kept"]
        seen.append(dirpath)
    assert seen == [str(root), str(root / "kept")]
    (root / "gone").mkdir()
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walked = []
        for dirpath, dirnames, filenames, _ in walk_fd(top):
            if dirpath == ".":
                (root / "gone").rmdir()
                dirnames[:] = ["gone", "link", "kept"]
            walked.append((dirpath, filenames))
    finally:
        os.close(top)
    assert walked == [(".", []), ("./kept", ["f"])]
    monkeypatch.chdir(tmp_path)
    make_dirs("made/below", 0o700)  # relative to the working directory, with its mode
    assert (tmp_path / "made" / "below").is_dir()
    assert (tmp_path / "made" / "below").stat().st_mode & 0o777 == 0o700 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_dir_beneath_makes_and_opens_a_level_at_a_time_never_through_a_link(
    tmp_path: Path,
) -> None:
    """What the parent writes into a directory a command can change (a copy back, a build
    dir, a restore) goes through this descriptor: a link anywhere below the root is refused,
    or with ``clear`` removed (never what it names), and nothing is made through it."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    umask = os.umask(0)  # what it makes is 0755 whatever the umask: no one else writes there
    try:
        fd = dir_beneath(str(root), ["a", "b", "c"], make=True)
    finally:
        os.umask(umask)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(root / "a" / "b" / "c"))
    finally:
        os.close(fd)
    assert {oct((root / d).stat().st_mode & 0o777) for d in ("a", "a/b", "a/b/c")} == {"0o755"}
    with pytest.raises(FileNotFoundError):
        dir_beneath(str(root), ["a", "x"])
    (root / "a" / "b" / "c").rmdir()
    (root / "a" / "b" / "c").symlink_to(outside)
    for make in (False, True):
        with pytest.raises(NotADirectoryError) as caught:
            dir_beneath(str(root), ["a", "b", "c", "d"], make=make)
        assert caught.value.filename == "c"
    assert list(outside.iterdir()) == []
    (outside / "kept").write_text("x")
    fd = dir_beneath(str(root), ["a", "b", "c", "d"], make=True, clear=True)
    os.close(fd)
    assert not (root / "a" / "b" / "c").is_symlink()
    assert (root / "a" / "b" / "c" / "d").is_dir()
    assert [p.name for p in outside.iterdir()] == ["kept"]
