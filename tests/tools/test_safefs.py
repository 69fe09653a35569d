"""air.tools.safefs at the level of its functions: what the walk below a checked path refuses
(a link, a special file, a hard-linked file: ``permission_denied`` naming the path and why,
nothing written), the modes it writes, what a failed write leaves (nothing), and reads of files
larger than one read: whole, or cut at the limit asked. The fs.* tools' tests show the same
through the tools, where the PermissionEngine refuses most of it first."""

from __future__ import annotations

import errno
import os
import stat
from functools import partial
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.tools.safefs import READ_MAX, list_fd, open_beneath, read_beneath, read_fd, write_beneath

OUTSIDE = "kept outside\n"


def _workspace(tmp: Path) -> tuple[Path, Path]:
    """A workspace holding a link to a file outside, a FIFO and a second name of that file."""
    root, outside = tmp / "ws", tmp / "outside.txt"
    root.mkdir()
    outside.write_text(OUTSIDE)
    (root / "link").symlink_to(outside)
    os.mkfifo(root / "fifo")
    os.link(outside, root / "hard")
    (root / "up").symlink_to(tmp)
    return root, outside


def _refusal(call: object, *args: object) -> str:
    assert callable(call)
    with pytest.raises(AirException) as caught:
        call(*args)
    assert caught.value.error.kind == ErrorKind.PERMISSION_DENIED
    return caught.value.error.message


def test_a_write_refuses_a_link_a_special_file_and_a_file_with_other_names(tmp_path: Path) -> None:
    root, outside = _workspace(tmp_path)
    for name, why in (
        ("link", "the target is a symlink"),
        ("fifo", "the target is not a regular file"),
        ("hard", "the target has other hard links"),
    ):
        assert _refusal(write_beneath, str(root), name, b"new\n") == (
            f"refused to write {name}: {why}"
        )
    assert _refusal(write_beneath, str(root), "up/outside.txt", b"new\n") == (
        "refused to write up/outside.txt: 'up' is a symlink or not a directory"
    )
    assert outside.read_text() == OUTSIDE
    assert (root / "link").is_symlink()
    assert sorted(os.listdir(root)) == ["fifo", "hard", "link", "up"]  # no temporary file left
    for where in ("../outside.txt", "a/../../outside.txt", str(tmp_path / "outside.txt"), "."):
        assert _refusal(write_beneath, str(root), where, b"new\n") == (
            f"refused to write {where}: it is not inside the workspace"
        )
    assert outside.read_text() == OUTSIDE


def test_a_write_keeps_a_files_mode_and_makes_new_files_0644_and_directories_0755(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o750)
    umask = os.umask(0o002)  # a group-writable umask: the modes are air's
    try:
        write_beneath(str(root), "run.sh", b"#!/bin/sh\necho hi\n")
        write_beneath(str(root), "new/deep.txt", b"deep\n")
    finally:
        os.umask(umask)
    assert (root / "run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o750  # a script stays runnable
    assert stat.S_IMODE((root / "new" / "deep.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "new").stat().st_mode) == 0o755
    assert (root / "new" / "deep.txt").read_bytes() == b"deep\n"


def test_a_failed_write_leaves_the_file_as_it_was_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("before\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left") as caught:
        write_beneath(str(root), "a.txt", b"after\n")
    assert caught.value.errno == errno.ENOSPC  # the write's own error, not the cleanup's
    assert os.listdir(root) == ["a.txt"]
    assert (root / "a.txt").read_text() == "before\n"


def test_a_link_planted_at_the_temporary_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary file is created, never opened: a link in its place (its name guessed)
    makes the write fail instead of writing where the link points."""
    import secrets

    root, outside = _workspace(tmp_path)
    monkeypatch.setattr(secrets, "token_hex", lambda n: "guessed")
    (root / ".a.txt.air-guessed.tmp").symlink_to(outside)
    with pytest.raises(FileExistsError):
        write_beneath(str(root), "a.txt", b"new\n")
    assert outside.read_text() == OUTSIDE
    assert not (root / "a.txt").exists()
    assert (root / ".a.txt.air-guessed.tmp").is_symlink()


def test_a_read_refuses_a_link_and_a_special_file(tmp_path: Path) -> None:
    root, _ = _workspace(tmp_path)
    assert _refusal(read_beneath, str(root), "link") == (
        "refused to read link: the target is a symlink"
    )
    assert _refusal(read_beneath, str(root), "fifo") == (
        "refused to read fifo: the target is not a regular file"
    )
    assert _refusal(read_beneath, str(root), "up/outside.txt") == (
        "refused to read up/outside.txt: 'up' is a symlink or not a directory"
    )
    assert _refusal(read_beneath, str(root), "/etc/passwd") == (
        "refused to read /etc/passwd: it is not inside the workspace"
    )
    assert read_beneath(str(root), "missing.txt") is None
    assert read_beneath(str(root), "missing/a.txt") is None
    assert not (root / "missing").exists()  # a read makes no directory


def test_files_larger_than_one_read_are_read_whole_or_to_the_limit(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    data = os.urandom((3 << 20) + 7)  # four reads of at most 1 MiB
    (root / "big.bin").write_bytes(data)
    assert read_beneath(str(root), "big.bin") == data
    cut = (2 << 20) + 5
    assert read_fd(os.open(root / "big.bin", os.O_RDONLY), cut) == data[:cut]
    assert read_fd(os.open(root / "big.bin", os.O_RDONLY)) == data


def test_a_file_of_exactly_the_read_limit_is_read_one_byte_more_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with open(root / "edge.bin", "wb") as f:
        f.truncate(READ_MAX)  # sparse: no disk used
    assert len(read_beneath(str(root), "edge.bin") or b"") == READ_MAX
    with open(root / "edge.bin", "ab") as f:
        f.write(b"x")
    with pytest.raises(AirException) as caught:
        read_beneath(str(root), "edge.bin")
    assert caught.value.error.kind == ErrorKind.TOOL_ERROR
    assert caught.value.error.message.startswith("edge.bin is 32 MiB: over the 32 MiB")
    assert caught.value.error.user_action == (
        "Read parts of it with shell.run (head, tail, sed -n 'A,Bp', grep), or change it with "
        "a command."
    )


def test_a_listing_passes_over_an_entry_gone_since_the_directory_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
    (root / "c" / "x").write_text("x")
    (root / "link").symlink_to(root / "c")
    real_stat = os.stat

    def gone_b(path: str, *args: object, **kw: object) -> os.stat_result:
        if path == "b":
            raise FileNotFoundError(errno.ENOENT, "gone", path)
        return real_stat(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", gone_b)
    listed = list_fd(os.open(root, os.O_RDONLY | os.O_DIRECTORY))
    assert listed == ([("a", "dir"), ("c", "dir"), ("link", "link")], 4)


def test_open_beneath_opens_what_was_checked_and_refuses_the_rest_by_name(tmp_path: Path) -> None:
    """fs.read's and fs.list's walk: the workspace itself as a directory, a file read whole by
    an absolute path too; a link, a linked parent, a file listed, a FIFO and the workspace read
    as a file are refused by name, no descriptor left open; a missing path makes nothing."""
    root, _ = _workspace(tmp_path)
    (root / "a.txt").write_text("a\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("b\n")
    (root / "dirlink").symlink_to(root / "sub")
    before = len(os.listdir("/proc/self/fd"))
    assert [n for n, _ in list_fd(open_beneath(str(root), str(root), directory=True))[0]] == [
        "a.txt",
        "dirlink",
        "fifo",
        "hard",
        "link",
        "sub",
        "up",
    ]
    assert list_fd(open_beneath(str(root), "sub", directory=True)) == ([("b.txt", "file")], 1)
    assert read_fd(open_beneath(str(root), str(root / "sub" / "b.txt"))) == b"b\n"
    for call, where, message in (
        (False, str(root), f"refused to read {root}: it is a directory"),
        (False, "link", "refused to read link: the target is a symlink"),
        (
            False,
            "up/outside.txt",
            "refused to read up/outside.txt: 'up' is a symlink or not a directory",
        ),
        (True, "a.txt", "refused to list a.txt: it is a symlink or not a directory"),
        (True, "dirlink", "refused to list dirlink: it is a symlink or not a directory"),
        (False, "fifo", "refused to read fifo: it is not a regular file"),
        (False, "sub", "refused to read sub: it is not a regular file"),
        (False, "../outside.txt", "refused to read ../outside.txt: it is not inside the workspace"),
    ):
        assert _refusal(partial(open_beneath, str(root), directory=call), where) == message
    with pytest.raises(FileNotFoundError):
        open_beneath(str(root), "missing/c.txt")
    assert not (root / "missing").exists()
    assert len(os.listdir("/proc/self/fd")) == before
