"""What git ignores is never merged, and the merge says so. Found: a task asked to write a
``.env`` (or a log, a local settings file) the project's ``.gitignore`` names wrote it in its
worktree, its result listed it as changed, and the merge said ``merged`` without it: the file
never reached the project and nothing said where it had gone. Now the merge names what it left
out (``MergeResult.left_out``, ``workspace.merge.completed``), still never merging it (the user
chose to keep it out of the history, and no review saw it), and it stays in the kept worktree.
Air's own ``.air/`` and the trees a tool makes again (a CMake build directory, ``__pycache__``)
are not named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from air.contracts.display import left_out_text
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.events.payloads import PAYLOADS
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import init_repo
from tests.workspace.recorder import Events

IGNORE = ".air/local/\n.env\n*.log\nbuild/\ncmake-out/\nout/\n__pycache__/\n"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text(IGNORE)
    return init_repo(root, message="init")


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


async def test_what_git_ignores_is_named_never_merged_and_kept_in_the_worktree(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    made = ["a.txt", ".env", "run.log", "build/app.o", "src/x.log"]
    made += ["cmake-out/CMakeCache.txt", "cmake-out/main.o", "__pycache__/m.pyc"]
    made += [".air/local/scratch", "out/tool/CMakeCache.txt"]
    mgr, events, workspace_id, kept = await _task(root, made)
    result = await mgr.merge_workspace(workspace_id)
    assert result.status == "merged"
    # git's order; a directory as dir/; the CMake tree at the top and air's own left unnamed
    # (a build tree deeper down is not looked for: out/ is named)
    named = [".env", "build/", "out/", "run.log", "src/x.log"]
    assert result.left_out == named
    assert result.left_out_count == len(named)
    payload = _completed(events)
    assert payload["left_out"] == named
    assert payload["left_out_count"] == len(named)
    PAYLOADS[("workspace.merge.completed", 1)].model_validate(payload)
    assert (root / "a.txt").read_text() == "x\n"  # the tracked change merged
    for rel in (".env", "run.log", "build", "src"):
        assert not (root / rel).exists()  # never merged ...
    assert (kept / ".env").read_text() == "x\n"  # ... and still in the kept worktree


async def test_nothing_ignored_leaves_the_event_as_it_was(tmp_path: Path) -> None:
    root = _project(tmp_path)
    mgr, events, workspace_id, _ = await _task(root, ["a.txt", "new.txt", "__pycache__/m.pyc"])
    result = await mgr.merge_workspace(workspace_id)
    assert result.left_out == []
    assert result.left_out_count == 0
    assert set(_completed(events)) == {"workspace_id", "merge_commit"}


async def test_many_are_counted_and_the_first_twenty_named(tmp_path: Path) -> None:
    root = _project(tmp_path)
    logs = [f"log{n:02d}.log" for n in range(25)]
    mgr, events, workspace_id, _ = await _task(root, ["a.txt", *logs])
    result = await mgr.merge_workspace(workspace_id)
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
    result = await mgr.merge_workspace(workspace_id)
    assert result.left_out == [name]
    assert left_out_text(result.left_out, 1) == (
        "not merged, git ignores it: \\x1b]0;owned\\x07\\u202ex.log"
    )
