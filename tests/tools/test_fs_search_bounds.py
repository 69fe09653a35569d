"""fs.search with a pattern the model chose: a backtracking pattern neither freezes the parent nor
runs without end (IMPL-FS-1).

Python's ``re`` holds the GIL for a whole match: ``(x|xx)+y`` over a line of 36 ``x`` took every
thread of the parent — its Trio loop, the cancellation of the call, Ctrl-C — for seconds (at 60
characters, for days). These run the real registry against a real project: while the search
matches, another Trio task keeps running; the search ends, as a tool error naming the pattern's
problem, when its time is up (in a tree of files with nothing to match too); a cancelled call
returns while its matching goes on; the whole-file scan finds exactly the lines a line-by-line
search finds (a property test), and a pattern that sees past its line is matched line by line;
an ordinary search still finds what it should; a pattern too long or invalid is refused.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest
import regex
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from air.tools import fs, fs_search
from air.tree_walk import remove_tree
from tests.tools.conftest import Env

BACKTRACKING = "(x|xx)+y"
"""Exponential in both engines: ~6 s at 36 characters in ``re``, far more in ``regex``."""


async def _search(env: Env, pattern: str, ticks: list[int]) -> Any:
    """The call's result; ``ticks[0]`` counts how often a sibling task ran meanwhile."""

    async def ticker() -> None:
        while True:
            await trio.sleep(0.01)
            ticks[0] += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        result = await env.registry.call("fs.search", {"pattern": pattern}, env.ctx())
        nursery.cancel_scope.cancel()
    return result


async def test_a_backtracking_pattern_ends_as_a_tool_error_and_the_loop_runs_meanwhile(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env.root / "src" / "long.txt").write_text("x" * 36 + "\n")
    monkeypatch.setattr(fs_search, "SEARCH_SECONDS", 1.0)
    ticks = [0]
    res = await _search(env, BACKTRACKING, ticks)
    assert res.status == "error", res
    assert "fs.search stopped after 1 s (at src/long.txt)" in res.error.message
    assert "(a+)+" in (res.error.user_action or "")
    assert ticks[0] >= 5  # ~100 in that second; none while re held the GIL


async def test_a_cancelled_search_returns_while_its_match_goes_on(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env.root / "src" / "long.txt").write_text("x" * 36 + "\n")
    monkeypatch.setattr(fs_search, "SEARCH_SECONDS", 2.0)  # how long the left match may go on
    token = trio.lowlevel.current_trio_token()
    entered, finished = trio.Event(), threading.Event()
    real_find = fs_search._find

    class Watched:  # the pattern, saying when its match of the long line begins and ends
        def __init__(self, pattern: Any) -> None:
            self.pattern = pattern

        def search(self, text: str, *args: Any, **options: Any) -> Any:
            trio.from_thread.run_sync(entered.set, trio_token=token)
            try:
                return self.pattern.search(text, *args, **options)
            finally:
                finished.set()

    def watched(search: Any, pattern: Any, text: str, *rest: Any) -> Any:
        if text.startswith("x" * 36):
            pattern = Watched(pattern)
        return real_find(search, pattern, text, *rest)

    monkeypatch.setattr(fs_search, "_find", watched)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_search, env, BACKTRACKING, [0])
        await entered.wait()  # the thread matches the long line now
        nursery.cancel_scope.cancel()
    assert not finished.is_set()  # the call is back; its match was left to end by itself


async def test_an_ordinary_search_still_finds_its_lines(env: Env) -> None:
    (env.root / "src" / "more.py").write_text("def add(a, b):\n    return a + b\n")
    res = await env.registry.call("fs.search", {"pattern": r"\breturn a \+ b$"}, env.ctx())
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    assert res.output["matches"] == [{"path": "src/more.py", "line": 2, "text": "    return a + b"}]


async def test_a_tree_a_task_made_deeper_than_path_max_is_searched_to_its_bottom(env: Env) -> None:
    depth = 2_200  # os.fwalk recursed a level a frame: RecursionError out of the registry
    fd = os.open(env.root / "src", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            down = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = down
        with os.fdopen(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("needle at the bottom\n")
    finally:
        os.close(fd)
    (env.root / "src" / "top.txt").write_text("needle on top\n")
    try:
        res = await env.registry.call("fs.search", {"pattern": "needle"}, env.ctx())
    finally:
        remove_tree(str(env.root / "src" / "d"))
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    assert [(m["path"].count("/"), m["text"]) for m in res.output["matches"]] == [
        (1, "needle on top"),
        (depth + 1, "needle at the bottom"),
    ]


@pytest.mark.parametrize(
    ("pattern", "said"),
    [("a" * (fs.PATTERN_MAX + 1), "validation"), ("(unclosed", "invalid regular expression")],
)
async def test_a_pattern_too_long_or_invalid_is_refused(env: Env, pattern: str, said: str) -> None:
    res = await env.registry.call("fs.search", {"pattern": pattern}, env.ctx())
    assert res.status == "error"
    assert res.error is not None
    assert said in f"{res.error.kind} {res.error.message}", res.error


async def test_a_search_through_too_many_files_ends_when_its_time_is_up(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):  # empty: no line to match, so only the walk can stop it
        (env.root / "src" / f"empty{i:02}.txt").write_text("")
    monkeypatch.setattr(fs_search, "SEARCH_SECONDS", 0.0)
    res = await env.registry.call("fs.search", {"pattern": "x"}, env.ctx())
    assert res.status == "error", res
    assert res.error is not None
    assert "fs.search stopped after 0 s (at .gitignore): too many files" in res.error.message


PATTERNS = [
    r"^def \w+", r"x$", r"a.b", r"[^x]+y", r"\bword\b", r"(?i)MiXeD", r"^$", r"\s+$", r"ab|^c",
    r"\s", r"[^a]", r"(?s)a.*b", r"^\s*$", r"y\b",
]  # fmt: skip
"""Patterns the whole-file pass may skip a file for (none of ``fs_search._PER_LINE_ONLY``)."""


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.text(alphabet="abcxy d\tefw\r", max_size=12), max_size=6),
    st.booleans(),
    st.sampled_from(PATTERNS),
)
def test_the_lines_found_through_the_whole_file_are_the_lines_that_match(
    lines: list[str], last_newline: bool, pattern: str
) -> None:
    """The whole-file scan finds exactly the lines a line-by-line search finds, numbered and
    placed alike (a last line with or without its newline, empty lines, matches spanning
    lines)."""
    assert not any(mark in pattern for mark in fs_search._PER_LINE_ONLY)
    text = "\n".join(lines) + ("\n" if last_newline and lines else "")
    per_line = regex.compile(pattern)
    search = fs_search.Search(
        per_line,
        regex.compile(pattern, regex.MULTILINE),
        1,
        time.monotonic() + 60,
        threading.Event(),
    )
    lines_of = fs_search._lines(text)
    expected = [(n, line) for n, line in enumerate(lines_of, 1) if per_line.search(line)]
    for how in (search, search._replace(whole=None)):  # through the whole file, line by line
        found = list(fs_search._matching_lines(how, text, "/w/f", "/w"))
        assert [(n, text[a:b]) for n, a, b in found] == expected  # where each is in the file


async def test_a_pattern_that_sees_around_its_line_is_matched_line_by_line(env: Env) -> None:
    (env.root / "src" / "more.py").write_text("def add(a, b):\n    return a + b\n")
    for pattern, line in ((r"(?<=def )add", 1), (r"\Areturn", 0), (r"\A    return", 2)):
        res = await env.registry.call("fs.search", {"pattern": pattern}, env.ctx())
        assert res.status == "ok", res.error
        assert isinstance(res.output, dict)
        assert [m["line"] for m in res.output["matches"] if m["path"] == "src/more.py"] == (
            [line] if line else []
        ), pattern
