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
from air.security.redact import REDACTED
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


CUT_SECRET = "hunter2-registered-value"


async def test_fs_read_and_fs_search_keep_no_part_of_a_secret_across_their_cut(env: Env) -> None:
    """Found: the content was cut at 256,000 characters (a match's line at 400), then
    redacted: a registered value that began just before the cut kept its first characters."""
    env.redactor.register(CUT_SECRET)
    (env.root / "src" / "big.txt").write_text("y" * 255_990 + CUT_SECRET + "\n")
    (env.root / "src" / "line.txt").write_text("needle " + "z" * 390 + CUT_SECRET + "\n")
    read = await env.registry.call("fs.read", {"path": "src/big.txt"}, env.ctx())
    assert read.status == "ok", read.error
    assert isinstance(read.output, dict)
    assert read.output["truncated"] is True
    assert read.output["content"] == "y" * 255_990 + REDACTED[:10]
    found = await env.registry.call("fs.search", {"pattern": "needle"}, env.ctx())
    assert found.status == "ok", found.error
    assert isinstance(found.output, dict)
    [match] = found.output["matches"]
    assert CUT_SECRET[:3] not in match["text"]
    assert match["text"] == ("needle " + "z" * 390 + REDACTED)[:400]


async def test_fs_read_from_a_line_and_fs_search_show_no_line_of_a_key(env: Env) -> None:
    """A file holding a private key block (a fixture, a config): read whole its key lines are
    redacted, but read from a line after BEGIN (``offset``), or found by a search matching a
    key line, each part was redacted alone, without the BEGIN line, and kept the key."""
    body = "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC\n" * 20
    pem = f"-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\n"
    (env.root / "src" / "conf.txt").write_text("name: x\n" + pem + "port: 80\n")
    ctx = env.ctx()
    shown = []
    for offset in (0, 2, 10):
        read = await env.registry.call("fs.read", {"path": "src/conf.txt", "offset": offset}, ctx)
        assert isinstance(read.output, dict), read.error
        shown.append(read.output["content"])
    assert shown[2].startswith(REDACTED + "\n")
    assert all(text.endswith("port: 80\n") for text in shown)
    found = await env.registry.call("fs.search", {"pattern": "key0material|port"}, ctx)
    assert isinstance(found.output, dict), found.error
    matches = found.output["matches"]
    assert [m["text"] for m in matches] == [REDACTED] * 20 + ["port: 80"]
    assert not [text for text in shown if "key0material" in text]


async def test_a_git_error_cut_at_500_characters_keeps_no_part_of_a_secret(env: Env) -> None:
    """git's stderr is cut at 500 characters in the error: redacted first, as the two above."""
    env.redactor.register(CUT_SECRET)
    name = "d/" * 230 + CUT_SECRET  # git echoes the pathspec: the secret across the cut
    done = await env.registry.call("git.commit", {"message": "m", "paths": [name]}, env.ctx())
    assert done.status == "error", done
    assert done.error is not None
    message = done.error.message
    assert "did not match any files" not in message  # cut before it
    assert CUT_SECRET[:3] not in message
    assert REDACTED[:3] in message


async def test_fs_list_of_a_huge_directory_keeps_the_first_entries_and_counts_the_rest(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task can make a directory of millions of entries: fs.list sorted and ``lstat``-ed all
    of them to show 2,000 (500k entries: 1.2 s and 69 MiB held in the parent, silently cut).
    Now it keeps the first ``LIST_MAX`` by name, looks at only those, and says how many."""
    from air.tools import fs

    big = env.root / "big"
    big.mkdir()
    for i in reversed(range(fs.LIST_MAX + 50)):
        (big / f"f{i:05d}").touch()
    looked: list[object] = []
    real_stat = os.stat

    def counted(path: object, *args: object, **kw: object) -> os.stat_result:
        looked.append(path)
        return real_stat(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counted)
    listed = await env.registry.call("fs.list", {"path": "big"}, env.ctx())
    monkeypatch.setattr(os, "stat", real_stat)
    assert isinstance(listed.output, dict), listed.error
    names = [e["name"] for e in listed.output["entries"]]
    assert names == [f"f{i:05d}" for i in range(fs.LIST_MAX)]
    assert (listed.output["total"], listed.output["truncated"]) == (fs.LIST_MAX + 50, True)
    assert len([p for p in looked if str(p).startswith("f")]) == fs.LIST_MAX
    small = await env.registry.call("fs.list", {"path": "src"}, env.ctx())
    assert isinstance(small.output, dict), small.error
    assert "truncated" not in small.output


async def test_a_search_redacts_a_file_with_a_key_block_once_whatever_its_matches(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each matching line is redacted as it reads within its file (after a key's BEGIN line,
    as key material): read from the block's last mention for each match, a file of many
    matching lines cost its length once per match (max_results has no bound)."""
    body = "MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64xyzABC\n" * 5
    pem = f"-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\n"
    text = pem + "needle here\n" * 300
    (env.root / "src" / "keyed.txt").write_text(text)
    passes: list[int] = []
    real = env.redactor.redact

    def counted(text: str) -> str:
        passes.append(len(text))
        return real(text)

    monkeypatch.setattr(env.redactor, "redact", counted)
    found = await env.registry.call(
        "fs.search", {"pattern": "needle|key0", "max_results": 1000}, env.ctx()
    )
    assert isinstance(found.output, dict), found.error
    assert [m["text"] for m in found.output["matches"]] == [REDACTED] * 5 + ["needle here"] * 300
    assert passes.count(len(text)) == 1  # the file, whole, once
