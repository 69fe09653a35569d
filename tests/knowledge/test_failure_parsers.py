"""Failing tests read from real runner output (IMPL-LEARN-5).

The samples in ``samples/`` are real output: pytest (-q, default and --tb=line), unittest and
ctest runs on this machine, a ``cargo test`` run with RUST_BACKTRACE set; go test and jest are
not installed here, so their samples are written in the tools' documented formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from air.session.knowledge_failures import (
    TestFailure,
    parse_test_failures,
    signature_of_failures,
)

SAMPLES = Path(__file__).parent / "samples"


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
