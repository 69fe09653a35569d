"""A build's output is the task's: the line and column numbers it prints are taken only when they
are numbers a file has (IMPL-NUM-1), and an event holding a number SQLite's INTEGER cannot store
is a validation error, never the parent's OverflowError; a printed JSON line of any depth is
text, never the decoder's RecursionError.

A build that printed ``a.cpp:<30 digits>:1: error: x`` became a ``diagnostic.created`` whose
line sqlite3 could not bind: the OverflowError ended the whole run; 5,000 digits failed
``int()`` in the parser itself (Python's digit limit), on the Trio thread, with the same end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.cpp.diagnostics import DiagnosticParser
from air.cpp.json_diagnostics import parse_json_line
from air.cpp.testing import parse_catch2_output, parse_gtest_output
from tests.tools.conftest import Env


@pytest.mark.parametrize("digits", [10, 30, 5000])
def test_a_line_number_no_file_has_is_no_diagnostic(digits: int) -> None:
    parser = DiagnosticParser("/w")
    big = "9" * digits
    printed = f"src/a.cpp:{big}:1: error: boom\nsrc/a.cpp:3:{big}: error: bang\n"
    printed += "src/a.cpp:4:2: error: real one\n"
    found = parser.parse_compiler_output(printed)
    assert [(d.line, d.column, d.message) for d in found] == [(4, 2, "real one")]


def test_a_printed_json_line_of_any_depth_is_text() -> None:
    """A build may print ``[{"kind": ...`` and 3,000 nested brackets (a line of 6 KB): the
    decoder's RecursionError left the parser, and a cpp tool's stream ended the run."""
    nested = "[" * 3000 + "]" * 3000
    gcc = f'[{{"kind": "error", "message": "m", "x": {nested}}}]'
    sarif = f'{{"runs": {nested}}}'
    assert parse_json_line(gcc, "/w") is None
    parser = DiagnosticParser("/w")
    assert parser.parse_compiler_output(sarif) == []
    found = parser.parse_compiler_output(f"{gcc}\nsrc/a.cpp:4:2: error: after it\n")
    assert [(d.line, d.message) for d in found] == [(4, "after it")]


@pytest.mark.parametrize(("line", "found"), [("9" * 5000, 0), ("12", 2)])
def test_cmake_and_linker_lines_take_only_line_numbers_a_file_has(line: str, found: int) -> None:
    printed = f"CMake Error at CMakeLists.txt:{line} (add_executable):\n  boom\n\n"
    printed += f"src/a.o:{line}: undefined reference to `f'\n"
    diags = DiagnosticParser("/w").parse_compiler_output(printed)
    assert [(d.tool, d.line) for d in diags] == [("cmake", 12), ("linker", 12)][:found]


def test_numbers_of_a_printed_json_diagnostic_are_taken_only_when_they_are_positions() -> None:
    def gcc(line: object, column: object) -> str:
        caret = {"file": "src/a.cpp", "line": line, "column": column}
        return json.dumps([{"kind": "error", "message": "m", "locations": [{"caret": caret}]}])

    cases = [
        ((10**30, 1), (None, 1)),
        (("7", 2), (None, 2)),
        ((-1, 3.5), (None, None)),
        ((True, None), (None, None)),
        ((5, 10**12), (5, None)),
    ]
    for (line, column), taken in cases:
        (diag,) = parse_json_line(gcc(line, column), "/w") or []
        assert (diag.line, diag.column) == taken, (line, column)
    (diag,) = parse_json_line(gcc(12, 5), "/w") or []
    assert (diag.line, diag.column) == (12, 5)


def test_a_test_failure_line_no_file_has_is_no_failure() -> None:
    big = "9" * 5000
    gtest = parse_gtest_output(f"src/t.cpp:{big}: Failure\nsrc/t.cpp:12: Failure\n")
    assert [f["line"] for f in gtest] == [12]
    catch2 = parse_catch2_output(f"src/t.cpp:{big}: FAILED:\nsrc/t.cpp:13: FAILED:\n")
    assert [f["line"] for f in catch2] == [13]


async def test_an_event_sqlite_cannot_store_is_a_validation_error(tmp_path: Path) -> None:
    env = Env(tmp_path)

    def event(etype: str, **payload: object) -> RuntimeEvent:
        source = EventSource(kind="tool", id="shell.run")
        payload = {"command_run_id": "cr_1", **payload}
        return new_event(etype, payload, session_id=env.session_id, source=source)

    await env.session.ingestor.ingest(event("command.started", command="make", cwd="."))
    before = env.types()
    with pytest.raises(AirException) as caught:  # a host's command record, say
        await env.session.ingestor.ingest(event("command.completed", exit_code=10**30))
    assert caught.value.kind == "validation_error"
    assert "64-bit" in caught.value.error.message
    assert env.types() == before  # nothing of it recorded
    env.close()
