"""What git ignores is never merged, and the merge says so. Found: a task asked to write a
``.env`` (or a log, a local settings file) the project's ``.gitignore`` names wrote it in its
worktree, its result listed it as changed, and the merge said ``merged`` without it: the file
never reached the project and nothing said where it had gone. Now the merge names the files
the task's tools wrote that it left out (``MergeResult.left_out``,
``workspace.merge.completed``), still never merging them (the user chose to keep them out of
the history, and no review saw them), and a copy is kept in ``.air/local/left-out/<workspace>``
for the merged retention (never a file reached through a link, nor a pipe). What its commands
left that git ignores (a build's output, a log), air's own ``.air/`` and cache directories are
not named; a tracked file an ignore pattern matches is merged as any other."""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from air.contracts.display import left_out_text
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.events.payloads import PAYLOADS
from air.workspace.left_out import keep, kept_out, prune
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import commit_files, git
from tests.workspace.recorder import Events

IGNORE = ".air/local/\n.env\n*.log\nbuild/\n__pycache__/\n*.local\n"


def _project(tmp_path: Path) -> Path:
    files = {"a.txt": "a\n", ".gitignore": IGNORE, "kept.log": "tracked\n"}
    root = commit_files(tmp_path / "proj", files)
    git(root, "add", "-f", "kept.log")
    git(root, "commit", "-qm", "a tracked log")
    return root


def _put(root: Path, rel: str, text: str = "x\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def _task(root: Path, files: list[str]) -> tuple[WorkspaceManager, Events, str, Path]:
    events = Events()
    mgr = WorkspaceManager(str(root), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    for rel in files:
        _put(Path(ref.path), rel)
    return mgr, events, ref.workspace_id, Path(ref.path)


def _completed(events: Events) -> dict[str, Any]:
    (payload,) = [p for t, p in events.items if t == "workspace.merge.completed"]
    return payload


async def test_the_ignored_files_its_tools_wrote_are_named_and_never_merged(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    made = ["a.txt", "kept.log", ".env", "keys.local", "logs/run.log", ".air/local/scratch"]
    made += ["build/app.o", "test.log", "__pycache__/m.pyc"]  # a command's, not its tools'
    mgr, events, workspace_id, worktree = await _task(root, made)
    wrote = ["a.txt", "kept.log", "./.env", str(worktree / "keys.local"), "logs/run.log"]
    wrote += ["gone.log", ".air/local/scratch", "__pycache__/m.pyc", "../x.log", "/etc/passwd"]
    wrote += [".env"]
    result = await mgr.merge_workspace(workspace_id, wrote=wrote)
    assert result.status == "merged"
    named = [".env", "keys.local", "logs/run.log"]
    assert result.left_out == named
    assert result.left_out_count == len(named)
    payload = _completed(events)
    assert payload["left_out"] == named
    assert payload["left_out_count"] == len(named)
    PAYLOADS[("workspace.merge.completed", 1)].model_validate(payload)
    # the tracked changes merged, the tracked log too; nothing ignored did
    assert (root / "a.txt").read_text() == "x\n"
    assert (root / "kept.log").read_text() == "x\n"
    for rel in (".env", "keys.local", "logs", "build", "test.log"):
        assert not (root / rel).exists()
    # a copy kept for the user, the worktree free to go as a landed one does
    kept = root / ".air" / "local" / "left-out" / workspace_id
    assert payload["left_out_dir"] == result.left_out_dir == str(kept)
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) == named
    assert (kept / ".env").read_text() == "x\n"


async def test_nothing_ignored_leaves_the_event_as_it_was(tmp_path: Path) -> None:
    root = _project(tmp_path)
    mgr, events, workspace_id, _ = await _task(root, ["a.txt", "new.txt", "build/app.o"])
    result = await mgr.merge_workspace(workspace_id, wrote=["a.txt", "new.txt"])
    assert result.left_out == []
    assert result.left_out_count == 0
    assert set(_completed(events)) == {"workspace_id", "merge_commit"}
    assert not (root / ".air" / "local" / "left-out").exists()


async def test_many_are_counted_and_the_first_twenty_named(tmp_path: Path) -> None:
    root = _project(tmp_path)
    logs = [f"log{n:02d}.log" for n in range(25)]
    mgr, events, workspace_id, _ = await _task(root, ["a.txt", *logs])
    result = await mgr.merge_workspace(workspace_id, wrote=logs)
    assert result.left_out == logs[:20]
    assert result.left_out_count == 25
    text = left_out_text(result.left_out, result.left_out_count)
    assert text.startswith("not merged, git ignores them (25): log00.log, log01.log")
    assert text.endswith("log19.log and 5 more")
    PAYLOADS[("workspace.merge.completed", 1)].model_validate(_completed(events))


async def test_a_hostile_name_is_shown_as_exact_text(tmp_path: Path) -> None:
    root = _project(tmp_path)
    name = "\x1b]0;owned\x07\u202ex.log"
    mgr, _, workspace_id, _ = await _task(root, ["a.txt", name])
    result = await mgr.merge_workspace(workspace_id, wrote=[name])
    assert result.left_out == [name]
    assert left_out_text(result.left_out, 1) == (
        "not merged, git ignores it: \\x1b]0;owned\\x07\\u202ex.log"
    )


def test_a_copy_never_goes_through_a_link_nor_copies_a_pipe_or_a_big_file(tmp_path: Path) -> None:
    worktree, into, outside = tmp_path / "wt", tmp_path / "kept", tmp_path / "outside"
    for made in (worktree, outside):
        made.mkdir()
    (outside / "id_rsa").write_text("SECRET\n")
    (worktree / "keys").symlink_to(outside)  # a component the task made a link
    (worktree / "key.local").symlink_to(outside / "id_rsa")  # the file itself a link
    os.mkfifo(worktree / "pipe.local")
    (worktree / "big.local").write_bytes(b"x" * 2048)
    (worktree / "ok.local").write_text("fine\n")
    names = ["keys/id_rsa", "key.local", "pipe.local", "big.local", "ok.local", "gone.local"]
    assert keep(str(worktree), names, str(into), max_bytes=1024) == ["ok.local"]
    assert [p.name for p in into.rglob("*")] == ["ok.local"]
    assert kept_out(str(worktree), ["keys/id_rsa"], str(tmp_path / "none"), 1024) == {
        "left_out": ["keys/id_rsa"],
        "left_out_count": 1,
        "left_out_dir": None,
    }


def test_copies_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    for name, age in (("ws_old", 8 * 86400), ("ws_new", 3600)):
        (tmp_path / name).mkdir()
        (tmp_path / name / ".env").write_text("x\n")
        stamp = time.time() - age
        os.utime(tmp_path / name, (stamp, stamp))
    assert prune(str(tmp_path), keep_s=7 * 86400) == ["ws_old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws_new"]


async def test_the_retention_prunes_old_copies(tmp_path: Path) -> None:
    root = _project(tmp_path)
    mgr, _, workspace_id, _ = await _task(root, ["a.txt", ".env"])
    await mgr.merge_workspace(workspace_id, wrote=[".env"])
    kept = root / ".air" / "local" / "left-out" / workspace_id
    assert kept.is_dir()
    await mgr.gc()
    assert kept.is_dir()  # a day old, say: kept
    stamp = time.time() - 8 * 86400
    os.utime(kept, (stamp, stamp))
    await mgr.gc()
    assert not kept.exists()


def _worktree(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    """A worktree holding ``names`` (each its own name as text), and where copies go."""
    worktree = tmp_path / "wt"
    worktree.mkdir()
    for name in names:
        (worktree / name).write_text(f"{name[0]}\n")
    return worktree, tmp_path / "kept"


def _refusing(error: OSError) -> Callable[..., None]:
    """A stand-in for a file operation the file system refuses with ``error``."""

    def refused(*args: object, **kwargs: object) -> None:
        raise error

    return refused


def test_a_copy_cut_short_leaves_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree, into = _worktree(tmp_path, "a.local", "b.local")
    refused = _refusing(OSError(errno.ENOSPC, "No space left on device"))
    monkeypatch.setattr(shutil, "copyfileobj", refused)  # what left_out copies with
    assert keep(str(worktree), ["a.local", "b.local"], str(into), max_bytes=1024) == []
    assert [p for p in into.rglob("*") if p.is_file()] == []


def test_a_copy_is_kept_where_chmod_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree, into = _worktree(tmp_path, "a.local")
    refused = _refusing(PermissionError(errno.EPERM, "Operation not permitted"))  # vfat, SMB
    monkeypatch.setattr(os, "chmod", refused)
    assert keep(str(worktree), ["a.local"], str(into), max_bytes=1024) == ["a.local"]
    assert (into / "a.local").read_text() == "a\n"
