"""A file too large to load is refused by air's file tools, never read into the parent
(IMPL-FS-2).

A task (or an unpacked tarball) makes a sparse file of gigabytes in a moment; fs.read of 1 GiB
of it took the parent 9.9 s and 2.1 GB, fs.search the same, and 8 GiB (what a sandboxed command
may write) would take the machine's memory. Here, through the real registry and a real project:
a 4 GiB sparse file is refused by fs.read, fs.edit, fs.write and fs.patch with its size and the
way to read parts of it, left as it was; fs.search names it and searches the rest; a review's
diff names it; a file that grows past the bound while it is read is refused too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException
from air.nursery.reviews import _sides
from air.tools.safefs import READ_MAX, read_beneath
from tests.tools.conftest import Env

HUGE = 4 << 30


def _sparse(path: Path, size: int = HUGE) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _refused(res: Any) -> None:
    assert res.status == "error", res
    assert res.error is not None
    assert f"is 4096 MiB: over the {READ_MAX >> 20} MiB air's file tools read" in res.error.message
    assert "shell.run (head, tail" in (res.error.user_action or "")


async def test_a_huge_file_is_refused_by_every_tool_that_would_load_it(env: Env) -> None:
    big = _sparse(env.root / "core")
    ctx = env.ctx()
    _refused(await env.registry.call("fs.read", {"path": "core"}, ctx))
    _refused(
        await env.registry.call(
            "fs.edit",
            {
                "path": "core",
                "old_string": "x",
                "new_string": "x",
                "expected_existing_sha256": "0" * 64,
            },
            ctx,
        )
    )
    _refused(await env.registry.call("fs.write", {"path": "core", "content": "small\n"}, ctx))
    patch = "--- a/core\n+++ b/core\n@@ -1 +1 @@\n-a\n+b\n"
    _refused(await env.registry.call("fs.patch", {"patch": patch}, ctx))
    assert big.stat().st_size == HUGE  # left as it was
    assert os.stat(big).st_blocks == 0


async def test_a_search_names_a_huge_file_and_searches_the_rest(env: Env) -> None:
    _sparse(env.root / "src" / "core")
    (env.root / "src" / "found.txt").write_text("needle here\n")
    res = await env.registry.call("fs.search", {"pattern": "needle"}, env.ctx())
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    assert [m["path"] for m in res.output["matches"]] == ["src/found.txt"]
    assert res.output["not_searched_too_large"] == ["src/core"]


def test_a_reviews_diff_names_a_huge_file_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "workspace").mkdir()
    _sparse(tmp_path / "workspace" / "core")
    assert _sides(str(tmp_path / "project"), str(tmp_path / "workspace"), "core") == (None, None)


def test_a_file_growing_past_the_bound_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = _sparse(tmp_path / "log", READ_MAX + 1)
    real_fstat = os.fstat

    def small_at_first(fd: int) -> os.stat_result:  # the size when opened, before it grew
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 10, *info[7:10]))

    monkeypatch.setattr(os, "fstat", small_at_first)
    with pytest.raises(AirException, match="over the 32 MiB"):
        read_beneath(str(tmp_path), str(big))
