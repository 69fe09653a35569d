"""A file git LFS tracks is merged only as an LFS pointer. Found: air's git runs no filter, so
a task's worktree of an LFS project holds pointer files, and a task that wrote an asset in
place of one had the whole file committed and merged: every clone then fetches it in full
where it expects a pointer, a host refuses the push past its size limit, and the user's
``git status`` shows the file changed. Now such a path is a ``write_area_violation``
(nothing merged, the branch keeps it) naming LFS; a new or changed pointer, a deletion and
the project's other files merge as before. No git-lfs is needed: the attributes decide."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.lfs import POINTER_PREFIX
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import commit_files, git
from tests.workspace.recorder import Events

ATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n"


def _pointer(oid: str, size: int) -> bytes:
    return POINTER_PREFIX + f"oid sha256:{oid * 64}\nsize {size}\n".encode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {".gitattributes": ATTRIBUTES, ".gitignore": ".air/local/\n"}
    files |= {"asset.bin": _pointer("a", 5_000_000), "old.bin": _pointer("b", 1234)}
    return commit_files(tmp_path / "proj", {**files, "notes.txt": "notes\n"}, message="LFS")


def _put(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _remove(path: Path) -> None:
    path.unlink()


async def _task(
    repo: Path, files: dict[str, bytes], gone: tuple[str, ...] = ()
) -> tuple[WorkspaceManager, str]:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    for name, data in files.items():
        _put(Path(ref.path, name), data)
    for name in gone:
        _remove(Path(ref.path, name))
    return mgr, ref.workspace_id


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG the whole asset",
        b"x" * 5000,
        POINTER_PREFIX[:-1] + b" but not one\n",
        POINTER_PREFIX + b"x" * 5000,  # a pointer's start, a whole file's size
        POINTER_PREFIX + b"x" * (1024 - len(POINTER_PREFIX)),  # a pointer is under 1024 bytes
    ],
    ids=["small", "big", "almost-a-pointer", "pointer-sized-no-more", "exactly-1024-bytes"],
)
async def test_a_whole_file_in_place_of_a_pointer_is_never_merged(repo: Path, data: bytes) -> None:
    head = git(repo, "rev-parse", "HEAD")
    mgr, workspace_id = await _task(repo, {"asset.bin": data, "new.bin": data, "notes.txt": b"n\n"})
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WRITE_AREA_VIOLATION
    assert "asset.bin (tracked by git LFS, changed without git-lfs" in error.message
    assert "new.bin (tracked by git LFS" in error.message
    assert "notes.txt" not in error.message
    assert git(repo, "rev-parse", "HEAD") == head  # nothing merged
    assert (repo / "asset.bin").read_bytes() == _pointer("a", 5_000_000)


async def test_pointers_deletions_and_other_files_merge(repo: Path) -> None:
    mgr, workspace_id = await _task(
        repo,
        {"asset.bin": _pointer("c", 42), "new.bin": _pointer("d", 7), "notes.txt": b"n\n"},
        gone=("old.bin",),
    )
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert (repo / "asset.bin").read_bytes() == _pointer("c", 42)
    assert (repo / "new.bin").read_bytes() == _pointer("d", 7)
    assert not (repo / "old.bin").exists()
    assert (repo / "notes.txt").read_text() == "n\n"
