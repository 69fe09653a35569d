"""The rules a task's merge is judged by, one at a time, in process (IMPL-MERGE-1).

`scripts/mutation.sh merge` showed which parts of them no test held: the denied paths and the
``allowed_paths`` fallback of ``merge_guard`` (only real runs in subprocesses, which mutmut
cannot switch, reached them), a link to exactly ``..``, the size limit of an executable file,
a later scope entry after one that names nothing, the left-out copies after one that could not
be copied. Each test here fails when the rule it names is taken away or changed.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import TaskScope
from air.nursery.write_areas import denied_in, merge_guard
from air.workspace import merge_checks
from air.workspace.changes import (
    GITLINK,
    MAX_LISTED,
    PathChange,
    WriteAreaViolation,
    link_escapes,
    parse_raw_diff,
    porcelain_paths,
    violation_error,
)
from air.workspace.left_out import keep, prune
from air.workspace.records import WorkspaceRecord


def _judged(scope: TaskScope, root: str, *paths: str) -> dict[str, str]:
    changes = [PathChange(p, "M", "100644", "100644") for p in paths]
    return {v.path: v.reason for v in merge_guard(scope, root)(changes)}


def test_denied_paths_are_refused_inside_the_write_area(tmp_path: Path) -> None:
    root = str(tmp_path)
    scope = TaskScope(write_area=["src", "secrets"], denied_paths=["secrets", "src/keys/*.pem"])
    assert _judged(scope, root, "src/a.c", "secrets/key", "src/keys/x.pem", "src/keys/x.txt") == {
        "secrets/key": "in the task's denied paths",
        "src/keys/x.pem": "in the task's denied paths",
    }
    # an entry that names nothing (a variable) does not end the list: the next one holds
    scope = TaskScope(denied_paths=["$HOME/x", "`pwd`/y", "secrets"])
    assert _judged(scope, root, "secrets/key", "a.c") == {
        "secrets/key": "in the task's denied paths"
    }


def test_allowed_paths_stand_for_a_missing_write_area(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert _judged(TaskScope(allowed_paths=["src"]), root, "src/a.c", "docs/x.md") == {
        "docs/x.md": "outside the write area"
    }
    # a write area given wins over allowed_paths
    scope = TaskScope(write_area=["docs"], allowed_paths=["src"])
    assert _judged(scope, root, "src/a.c", "docs/x.md") == {"src/a.c": "outside the write area"}


def test_an_absolute_entry_names_the_project_through_a_link_a_relative_one_as_written(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    (project / "real").mkdir(parents=True)
    (project / "named").symlink_to("real")
    through = tmp_path / "link"
    through.symlink_to(project)
    # the project by a linked path: its denied directory is still the project's
    scope = TaskScope(denied_paths=[f"{through}/secrets"])
    assert _judged(scope, str(through), "secrets/key") == {
        "secrets/key": "in the task's denied paths"
    }
    # a relative entry is not followed through a link the project holds
    scope = TaskScope(denied_paths=["named"])
    assert _judged(scope, str(project), "named", "real/x") == {
        "named": "in the task's denied paths"
    }


def test_protected_paths_need_an_entry_that_names_them(tmp_path: Path) -> None:
    root = str(tmp_path)
    refused = "protected: the task's scope does not name it"
    assert _judged(TaskScope(write_area=[".air"]), root, ".air/shared/rules/x.md") == {}
    assert _judged(TaskScope(write_area=["."]), root, ".air/shared/rules/x.md") == {
        ".air/shared/rules/x.md": refused
    }
    scope = TaskScope(write_area=["tools/Xcode/.gitattributes", "docs"])
    assert _judged(scope, root, "tools/Xcode/.gitattributes", "docs/AGENTS.md") == {
        "docs/AGENTS.md": refused
    }
    gitlink = PathChange("vendor/lib", "A", "000000", GITLINK)
    assert merge_guard(TaskScope(), root)([gitlink]) == [
        WriteAreaViolation("vendor/lib", "a nested repository (gitlink)")
    ]


def test_denied_in_judges_a_path_as_the_merge_does(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert denied_in(TaskScope(write_area=["src"]), root) is None
    judge = denied_in(TaskScope(denied_paths=["$X", "secrets", "*.key"]), root)
    assert judge is not None
    assert [p for p in ("secrets", "secrets/a", "a.key", "src/a.c", "secretsx") if judge(p)] == [
        "secrets",
        "secrets/a",
        "a.key",
    ]


@pytest.mark.parametrize(
    ("path", "target", "why"),
    [
        ("x", "..", "a symlink out of the project (..)"),
        ("a/x", "../..", "a symlink out of the project (../..)"),
        ("x", "/etc/passwd", "a symlink to the absolute path /etc/passwd"),
        ("a/x", "../.git/config", "a symlink into .git (../.git/config)"),
        ("x", ".gitmodules", "a symlink into .gitmodules (.gitmodules)"),
        ("a/x", "../.air/local", "a symlink into .air (../.air/local)"),
        ("a/x", "..", None),
        ("a/x", "b/../c", None),
        ("x", "src/.airy", None),
    ],
)
def test_a_link_may_point_only_among_the_projects_own_files(
    path: str, target: str, why: str | None
) -> None:
    assert link_escapes(path, target) == why


def _record(tmp_path: Path) -> WorkspaceRecord:
    return WorkspaceRecord(
        workspace_id="ws1", strategy="worktree", path=str(tmp_path), task_id="t7", branch="air/t7"
    )


def test_the_size_limit_holds_for_executables_and_names_every_file_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(merge_checks, "MERGE_FILE_MAX_MB", 1)
    for name, size in (("tool", (1 << 20) + 1), ("core", 3 << 20), ("at", 1 << 20)):
        with open(tmp_path / name, "wb") as handle:
            handle.truncate(size)
    changes = [
        PathChange("tool", "A", "000000", "100755"),
        PathChange("core", "A", "000000", "100644"),
        PathChange("at", "A", "000000", "100644"),
        PathChange("gone", "D", "100644", "000000"),
    ]
    with pytest.raises(AirException) as raised:
        merge_checks.check_changes(_record(tmp_path), changes, None)
    error = raised.value.error
    assert error.kind == ErrorKind.WRITE_AREA_VIOLATION
    assert error.message.startswith("task t7 changed 2 path(s) it may not write")
    assert (error.metadata or {})["paths"] == ["core", "tool"]
    merge_checks.check_changes(_record(tmp_path), changes[2:], None)  # at the limit: fine


def test_a_violation_says_how_many_and_where_the_work_is() -> None:
    many = [WriteAreaViolation(f"f{i:02}", "outside the write area") for i in range(MAX_LISTED)]
    error = violation_error(
        many, task_id="t1", workspace_path="/w", branch="air/t1", base_commit="a" * 40
    ).error
    assert "more" not in error.message
    assert error.message.endswith("f19 (outside the write area)")
    assert error.user_action is not None
    assert "git diff aaaaaaaaaaaa air/t1" in error.user_action
    assert error.user_action.endswith(
        "project, or run the task again with a write area that names those paths."
    )
    assert error.metadata == {
        "paths": [v.path for v in many],
        "violations": MAX_LISTED,
        "kept_path": "/w",
        "kept_branch": "air/t1",
    }
    error = violation_error(
        [*many, WriteAreaViolation("g", "x")],
        task_id="t1",
        workspace_path="/w",
        branch="air/t1",
        base_commit=None,
    ).error
    assert error.message.endswith("f19 (outside the write area); and 1 more")
    assert error.user_action == (
        "The workspace is kept at /w. Compare it with the project by hand (`diff -r`) and copy "
        "what you want, or run the task again with a write area that names those paths."
    )
    assert error.retryability.value == "never"
    error = violation_error(
        [WriteAreaViolation(f"f{i}", "x") for i in range(250)],
        task_id="t1",
        workspace_path="/w",
        branch=None,
        base_commit=None,
    ).error
    metadata = error.metadata or {}
    assert (len(metadata["paths"]), metadata["violations"]) == (200, 250)


def test_git_s_change_records_are_read_whole_or_refused() -> None:
    raw = (
        b":100644 100755 " + b"1" * 40 + b" " + b"2" * 40 + b" M\0bin/run\0"
        b":000000 120000 " + b"0" * 40 + b" " + b"3" * 40 + b" A\0l\xffink\0"
    )
    assert parse_raw_diff(raw) == [
        PathChange("bin/run", "M", "100644", "100755"),
        PathChange(os.fsdecode(b"l\xffink"), "A", "000000", "120000"),
    ]
    with pytest.raises(ValueError, match="unexpected git diff --raw record '100644 x'"):
        parse_raw_diff(b"100644 x\0path\0")
    with pytest.raises(ValueError, match="unexpected git diff --raw record ':1 2 3 4 M'"):
        parse_raw_diff(b":1 2 3 4 M")
    # the last record without git's closing NUL is still read
    assert parse_raw_diff(b":100644 100644 " + b"1" * 40 + b" " + b"2" * 40 + b" M\0a") == [
        PathChange("a", "M", "100644", "100644")
    ]
    status = b"?? new file\0R  moved\0was here\0 M a\0C  copy\0orig\0"
    assert porcelain_paths(status) == {"new file", "moved", "was here", "a", "copy", "orig"}


def test_left_out_copies_go_on_after_one_that_cannot_be_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree, into = tmp_path / "wt", tmp_path / "kept"
    worktree.mkdir()
    (worktree / "secret").write_text("SECRET\n")
    (worktree / "swapped.local").symlink_to(worktree / "secret")
    (worktree / "exact.local").write_bytes(b"x" * 16)
    (worktree / "run.local").write_text("#!/bin/sh\n")
    os.chmod(worktree / "run.local", 0o755)
    (worktree / "shared.local").write_text("x\n")
    os.chmod(worktree / "shared.local", 0o664)
    # the link check raced (the task swapped a file for a link after it): O_NOFOLLOW still holds
    monkeypatch.setattr(os.path, "realpath", os.path.normpath)
    (worktree / "d").mkdir()
    (worktree / "d" / "x.local").write_text("x\n")
    into.mkdir(mode=0o700)
    (into / "d").write_text("in the way\n")  # its directory cannot be made there
    names = ["missing.local", "swapped.local", "d/x.local", "exact.local", "run.local"]
    names.append("shared.local")
    assert keep(str(worktree), names, str(into), max_bytes=16) == names[3:]
    monkeypatch.undo()
    assert not (into / "swapped.local").exists()
    assert stat.S_IMODE((into / "run.local").stat().st_mode) == 0o700
    assert stat.S_IMODE((into / "shared.local").stat().st_mode) == 0o600
    assert stat.S_IMODE(into.stat().st_mode) == 0o700


def test_the_left_out_retention_counts_from_the_time_given_and_follows_no_link(
    tmp_path: Path,
) -> None:
    root, elsewhere = tmp_path / "left-out", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    now = float(int(time.time()))  # whole seconds: an age of 50 is exactly 50
    for name, age in (("ws_a", 100.0), ("ws_b", 50.0)):
        (root / name).mkdir()
        os.utime(root / name, (now - age, now - age))
    os.utime(elsewhere, (now - 1000, now - 1000))
    (root / "ws_link").symlink_to(elsewhere)
    assert prune(str(root), keep_s=50.0, now=now) == ["ws_a"]  # 50 s old is not older than 50
    assert prune(str(root), keep_s=50.0, now=now + 10) == ["ws_b"]
    assert elsewhere.is_dir()
    assert (root / "ws_link").is_symlink()
