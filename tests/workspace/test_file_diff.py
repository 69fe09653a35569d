"""The diff of a file's two versions, whatever a task wrote (IMPL-DIFF-1).

difflib is quadratic in what it cannot match: 20,000 lines with every other one changed took
23 s on the Trio thread of an fs.write (100,000: ten minutes), with every other task, the
console and each cancellation held up. ``air.workspace.file_diff`` gives long files to git's own
diff. Checked here with real git: each diff, short (difflib) or long (git), applied by ``git
apply`` to the old text gives the new one, for new and deleted files, a NUL byte, CRLF lines
and a missing final newline; a long file never reaches difflib (an fs.write of one:
tests/tools/test_fs_tools.py).
"""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from air.workspace.file_diff import INLINE_LINES, unified_diff
from tests.gitrepo import git

LONG = 20_000


def _every_other_changed(n: int) -> tuple[str, str]:
    old = "".join(f"line {i}\n" for i in range(n))
    new = "".join(f"line {i}\n" if i % 2 else f"changed {i}\n" for i in range(n))
    return old, new


def _cases() -> list[tuple[str, str | None, str | None]]:
    old, new = _every_other_changed(LONG)
    short_old, short_new = _every_other_changed(50)
    return [
        ("short", short_old, short_new),
        ("long", old, new),
        ("long, new file", None, new),
        ("long, deleted", old, None),
        ("long, no final newline", old, new.rstrip("\n")),
        ("long, CRLF and a NUL", old.replace("\n", "\r\n"), new.replace("5\n", "5\0\r\n")),
        ("short, no final newline", "a\nb\n", "a\nc"),
        ("equal", old, old),
    ]


@pytest.mark.parametrize(("old", "new"), [c[1:] for c in _cases()], ids=[c[0] for c in _cases()])
def test_the_diff_applied_to_the_old_text_gives_the_new(
    tmp_path: Path, old: str | None, new: str | None
) -> None:
    diff = trio.run(unified_diff, old, new, "src/data.txt")
    if old == new:
        assert diff == ""
        return
    assert diff.startswith(
        f"--- {'a/src/data.txt' if old is not None else '/dev/null'}\n"
        f"+++ {'b/src/data.txt' if new is not None else '/dev/null'}\n@@ "
    )
    git(tmp_path, "init", "-q")
    target = tmp_path / "src" / "data.txt"
    if old is not None:
        target.parent.mkdir()
        target.write_bytes(old.encode())
    (tmp_path / "change.diff").write_bytes(diff.encode())
    applied = subprocess.run(
        ["git", "apply", "--unidiff-zero", "change.diff"], cwd=tmp_path, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr.decode()[-2000:]
    if new is None:
        assert not target.exists()
    else:
        assert target.read_bytes() == new.encode()


def test_a_long_file_never_reaches_difflib(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("difflib was asked to diff a long file")

    old, new = _every_other_changed(INLINE_LINES)  # one line over the bound, both sides
    monkeypatch.setattr(difflib, "unified_diff", refuse)
    assert trio.run(unified_diff, old, new, "a.txt").count("\n+changed ") == INLINE_LINES // 2
    short_old, short_new = _every_other_changed(INLINE_LINES // 2)
    with pytest.raises(AssertionError, match="difflib was asked"):
        trio.run(unified_diff, short_old, short_new, "a.txt")  # at the bound: difflib's
