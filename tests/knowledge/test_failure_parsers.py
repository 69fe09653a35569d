"""Failing tests read from real runner output (IMPL-LEARN-5).

The samples in ``samples/`` are real output: pytest (-q, default and --tb=line), unittest and
ctest runs on this machine, a ``cargo test`` run with RUST_BACKTRACE set; go test and jest are
not installed here, so their samples are written in the tools' documented formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from air.session.knowledge_failures import (
    _FAILURES_MAX,
    _SCAN_MAX,
    TestFailure,
    parse_test_failures,
    signature_of_failures,
)
from tests.cpu_limited import run_cpu_limited

SAMPLES = Path(__file__).parent / "samples"
MIB = 1 << 20


def _parse(name: str, *roots: str) -> list[TestFailure]:
    return parse_test_failures((SAMPLES / name).read_text(), roots=roots)


def test_pytest_output_names_each_failing_test_its_exception_and_file() -> None:
    found = _parse("pytest_q.txt")
    assert [(f.test_id, f.exception, f.location) for f in found] == [
        ("tests/test_calc.py::test_mean", "AssertionError", "tests/test_calc.py"),
        ("tests/test_calc.py::test_parse", "ValueError", "tests/test_calc.py"),
        ("tests/test_calc.py::TestGroup::test_key", "KeyError", "tests/test_calc.py"),
    ]
    assert found[1].message == "ValueError: invalid literal for int() with base 10: 'x12'"
    # the header and the timing of a default run change nothing
    assert signature_of_failures(_parse("pytest_default.txt")) == signature_of_failures(found)


def test_pytest_line_mode_still_names_the_tests() -> None:
    found = _parse("pytest_line.txt")
    assert [f.test_id.rsplit("::", 1)[-1] for f in found] == ["test_mean", "test_parse", "test_key"]


def test_unittest_output() -> None:
    found = _parse("unittest.txt", "/tmp/lca/py")
    assert [(f.test_id, f.exception, f.location) for f in found] == [
        ("test_unit.CalcTest.test_parse", "ValueError", "test_unit.py"),
        ("test_unit.CalcTest.test_mean", "AssertionError", "test_unit.py"),
    ]


def test_ctest_output() -> None:
    assert [(f.runner, f.test_id) for f in _parse("ctest.txt")] == [("ctest", "math.variance")]


def test_cargo_test_output() -> None:
    found = _parse("cargo.txt")
    assert [(f.test_id, f.exception, f.location) for f in found] == [
        ("tests::parses", "InvalidDigit", "src/lib.rs"),
        ("tests::mean_of_three", "panic", "src/lib.rs"),
    ]
    assert found[1].message == "assertion `left == right` failed"


@pytest.mark.parametrize("name", ["go_test.txt", "go_test_v.txt"])
def test_go_test_output(name: str) -> None:
    found = _parse(name)
    assert found[0] == TestFailure(
        "go", "TestMean", None, "mean([1 2 3]) = 3, want 2", "calc_test.go"
    )
    second = found[1]
    if name == "go_test.txt":
        assert (second.test_id, second.exception) == ("TestIndex", "panic")
        assert second.message.startswith("runtime error: index out of range")
    else:  # the failing subtest, not its parent
        assert (second.test_id, second.message) == (
            "TestParse/junk",
            'strconv.Atoi: parsing "x12": invalid syntax',
        )


def test_jest_output() -> None:
    found = _parse("jest.txt")
    assert [(f.test_id, f.exception, f.location) for f in found] == [
        ("mean > of three numbers", None, "src/calc.test.js"),
        ("parse > rejects junk", "TypeError", "src/calc.js"),
    ]


def test_output_of_no_known_runner_has_no_failures() -> None:
    assert parse_test_failures("make: *** [all] Error 2\n") == []
    assert signature_of_failures([]) is None


def test_the_signature_ignores_line_numbers_and_workspace_directories() -> None:
    one = parse_test_failures(
        "FAILED t.py::test_a - x\n/ws/one/src/m.py:10: ValueError\n", roots=["/ws/one"]
    )
    base = signature_of_failures(
        [TestFailure("pytest", "t.py::test_a", "ValueError", "bad value 3", "src/m.py")]
    )
    moved = signature_of_failures(
        [TestFailure("pytest", "t.py::test_a", "ValueError", "bad value 4", "src/m.py")]
    )
    other = signature_of_failures(
        [TestFailure("pytest", "t.py::test_b", "ValueError", "bad value 3", "src/m.py")]
    )
    assert one
    assert base == moved != other
    assert base is not None
    assert base.startswith("pytest:t.py::test_a:")


# What a task's tests print is the task's to choose, and the parent parses it on its event loop:
# each of these outputs (1 MiB, the most of one log air reads) once held it for minutes to hours
# (a pattern going back over a long line from each place in it; a section or a log read again
# for every failure naming it). They run in a child with a generous CPU limit rather than
# timed (about a second now); the counts are the bounds below.
HOSTILE = {
    "jest_stack_line": "Tests: 1 failed\n  ● t\n    at " + "a.js" * (MIB // 4) + "\n",
    "jest_blank_line": "Tests: 1 failed\n  ● t\n" + " " * MIB + "x\n",
    "pytest_one_section": "= FAILURES =\n___ t ___\n"
    + "x\n" * (MIB // 4)
    + "===\n"
    + "FAILED a.py::t\n" * (MIB // 16),
    "go_one_log": "=== RUN   T\n"
    + "    x.go:1: y\n" * (MIB // 28)
    + "--- FAIL: T (0.0s)\n" * (MIB // 38),
}


def test_hostile_output_is_read_in_bounded_time(tmp_path: Path) -> None:
    files = []
    for name, text in HOSTILE.items():
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    done = run_cpu_limited(
        "import sys\n"
        "from air.session.knowledge_failures import parse_test_failures, signature_of_failures\n"
        "for name in sys.argv[1:]:\n"
        "    found = parse_test_failures(open(name).read())\n"
        "    assert signature_of_failures(found)\n"
        "    print(len(found), found[0].test_id, found[0].location)\n",
        *files,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1 t None",
        "1 t None",
        f"{_FAILURES_MAX} a.py::t None",
        f"{_FAILURES_MAX} T x.go",
    ]


def test_at_most_so_many_failures_are_read_and_so_many_lines_around_each() -> None:
    many = "".join(f"FAIL: test_{i} (m.T)\nValueError: {i}\n" for i in range(_FAILURES_MAX + 50))
    found = parse_test_failures(many)
    assert [f.test_id for f in found] == [f"m.T.test_{i}" for i in range(_FAILURES_MAX)]
    assert found[-1].exception == "ValueError"
    near = "FAIL: test_a (m.T)\n" + '  File "a.py", line 1\n' * (_SCAN_MAX - 2) + "KeyError: k\n"
    assert parse_test_failures(near)[0].exception == "KeyError"
    beyond = "FAIL: test_a (m.T)\n" + '  File "a.py", line 1\n' * _SCAN_MAX + "KeyError: k\n"
    assert parse_test_failures(beyond)[0].exception is None
    # a pytest section: its first and its last so many lines are read, never its middle
    section = ["x"] * (3 * _SCAN_MAX)
    for at, read in ((_SCAN_MAX - 1, True), (_SCAN_MAX + 5, False), (-_SCAN_MAX, True)):
        lines = [*section]
        lines[at] = "E   KeyError: k"
        text = "= FAILURES =\n___ t ___\n" + "\n".join(lines) + "\n===\nFAILED a.py::t - s\n"
        assert parse_test_failures(text)[0].message == ("KeyError: k" if read else "s"), at
