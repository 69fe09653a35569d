"""Failing tests read from a test runner's output, and the failure signature made of them.

Owns ``TestFailure`` (one failing test: its id, exception type, message and the file where it
failed), ``parse_test_failures`` (the output of pytest, unittest, ctest, cargo test, go test or
jest -> its failing tests; the runner is recognised by its own markers) and
``signature_of_failures`` (``<runner>:<test ids>:<digest>`` over every failure's id,
exception type, normalised message and file, IMPL-LEARN-5). Line numbers and absolute
directories are left out of the digest: an edit above the test or another workspace directory
is not another failure. What a task's tests print is the task's to choose, and the parent reads
it on its event loop: every parser costs time linear in the output, whatever it holds (at most
``_FAILURES_MAX`` failures, ``_SCAN_MAX`` lines read around each, patterns that never go back
over a line from each place in it). Pure code: no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from air.contracts.error import normalize_message

__all__ = ["TestFailure", "parse_test_failures", "signature_of_failures"]

_IDS_MAX = 160
"""The test ids in a signature are cut to this many characters (the digest covers them all)."""
_FAILURES_MAX = 200
"""At most this many failing tests are read from one output, the first printed."""
_SCAN_MAX = 1_000
"""At most this many lines after a failing test's head are read for its details (a pytest
section: its first and last so many)."""


def _after(lines: list[str], i: int) -> Iterator[str]:
    """The lines after ``lines[i]``, at most ``_SCAN_MAX`` of them (no copy of the rest)."""
    return islice(lines, i + 1, i + 1 + _SCAN_MAX)


def _before(lines: list[str], i: int) -> Iterator[str]:
    """The lines before ``lines[i]``, nearest first (no copy of them)."""
    return (lines[j] for j in range(i - 1, -1, -1))


@dataclass(frozen=True)
class TestFailure:
    """One failing test as its runner reported it."""

    __test__ = False  # not a pytest test class

    runner: str
    """pytest, unittest, ctest, cargo, go or jest."""
    test_id: str
    exception: str | None = None
    """The exception (or panic) type when the runner names one."""
    message: str = ""
    location: str | None = None
    """The file where it failed, relative where the runner printed it so (no line number)."""


def _relative(path: str | None, roots: Iterable[str]) -> str | None:
    """``path`` without a workspace prefix; any other absolute path keeps its last two parts."""
    if not path:
        return None
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if root and path.startswith(prefix):
            return path[len(prefix) :]
    if path.startswith("/"):
        return "/".join(path.rstrip("/").split("/")[-2:])
    return path.removeprefix("./")


_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed))\b:?")


def _exception_of(message: str) -> str | None:
    m = _EXC.match(message.strip())
    return m.group(1) if m else None


# -- pytest ------------------------------------------------------------------------------------
_PYTEST_SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+?)(?: - (.*))?$")
_PYTEST_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_PYTEST_WHERE = re.compile(r"^(\S+?\.py):\d+: (.*)$")


class _Section:
    """A pytest failure section as far as it is read: its first and its last ``_SCAN_MAX``
    lines (the first ``E`` line and the last ``file.py:N:`` line are in one or the other)."""

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=_SCAN_MAX)

    def add(self, line: str) -> None:
        (self.head if len(self.head) < _SCAN_MAX else self.tail).append(line)

    def lines(self) -> list[str]:
        return [*self.head, *self.tail]


def _pytest_sections(lines: list[str]) -> dict[str, _Section]:
    sections: dict[str, _Section] = {}
    current: _Section | None = None
    for line in lines:
        if m := _PYTEST_HEADER.match(line):
            current = sections.setdefault(m.group(1).replace("ERROR at setup of ", ""), _Section())
        elif line.startswith("=") and line.endswith("="):
            current = None
        elif current is not None:
            current.add(line)
    return sections


def _pytest(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    lines = text.splitlines()
    if not any(_PYTEST_SUMMARY.match(line) for line in lines) and "= FAILURES =" not in text:
        return []
    sections = _pytest_sections(lines)
    found: list[TestFailure] = []
    for line in lines:
        m = _PYTEST_SUMMARY.match(line)
        if m is None or ("::" not in m.group(2) and not m.group(2).endswith(".py")):
            continue
        test_id, summary = m.group(2), (m.group(3) or "").removesuffix("...")
        name = test_id.split("::", 1)[-1].replace("::", ".")
        section = sections.get(name)
        body = section.lines() if section is not None else []
        message = next((s[1:].strip() for s in body if s.startswith("E ")), summary)
        exception, location = _exception_of(message), None
        for s in reversed(body):
            if w := _PYTEST_WHERE.match(s):
                location = w.group(1)
                exception = exception or _exception_of(w.group(2))
                break
        found.append(TestFailure("pytest", test_id, exception, message, _relative(location, roots)))
        if len(found) == _FAILURES_MAX:
            break
    return found


# -- unittest ----------------------------------------------------------------------------------
_UNITTEST_HEAD = re.compile(r"^(FAIL|ERROR): (\w+) \(([\w.]+)\)")
_UNITTEST_FILE = re.compile(r'^\s*File "([^"]+)", line \d+')


def _unittest(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    lines = text.splitlines()
    found: list[TestFailure] = []
    for i, line in enumerate(lines):
        m = _UNITTEST_HEAD.match(line)
        if m is None:
            continue
        if len(found) == _FAILURES_MAX:
            break
        test_id = m.group(3) if m.group(3).endswith(m.group(2)) else f"{m.group(3)}.{m.group(2)}"
        location, message = None, ""
        for s in _after(lines, i):
            if s.startswith(("=" * 10, "-" * 10)) and message:
                break
            if f := _UNITTEST_FILE.match(s):
                location = f.group(1)
            elif s and not s.startswith(" ") and not s.startswith(("Traceback", "-" * 10)):
                message = s.strip()
                break
        found.append(
            TestFailure(
                "unittest", test_id, _exception_of(message), message, _relative(location, roots)
            )
        )
    return found


# -- ctest -------------------------------------------------------------------------------------
_CTEST_LIST = re.compile(r"^\s*\d+ - (\S+) \(([^)]*)\)")


def _ctest(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    _, marker, rest = text.partition("The following tests FAILED:")
    if not marker:
        return []
    found: list[TestFailure] = []
    for line in rest.splitlines():
        if m := _CTEST_LIST.match(line):
            found.append(TestFailure("ctest", m.group(1), m.group(2), m.group(2)))
            if len(found) == _FAILURES_MAX:
                break
    return found


# -- cargo test --------------------------------------------------------------------------------
_CARGO_HEAD = re.compile(r"^---- (\S+) stdout ----$")
_CARGO_PANIC = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at ([^:]+):\d+(?::\d+)?:?(.*)$")


def _cargo(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    lines = text.splitlines()
    found: list[TestFailure] = []
    for i, line in enumerate(lines):
        m = _CARGO_HEAD.match(line)
        if m is None:
            continue
        if len(found) == _FAILURES_MAX:
            break
        location, message = None, ""
        for j, s in enumerate(_after(lines, i), start=i + 1):
            if _CARGO_HEAD.match(s) or s.startswith("failures:"):
                break
            if p := _CARGO_PANIC.match(s):
                location = p.group(1)
                message = p.group(2).strip() or (lines[j + 1].strip() if j + 1 < len(lines) else "")
                break
        exception = "panic"
        if ": " in message and message.startswith("called `"):
            exception = message.rsplit(": ", 1)[1].split(" ", 1)[0]
        found.append(TestFailure("cargo", m.group(1), exception, message, location))
    return found


# -- go test -----------------------------------------------------------------------------------
_GO_FAIL = re.compile(r"^(\s*)--- FAIL: (\S+) \(")
_GO_LOG = re.compile(r"^\s+(\S+\.go):\d+: (.*)$")
_GO_PANIC = re.compile(r"^panic: (.*?)(?: \[recovered\])?$")


def _go(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    lines = text.splitlines()
    heads = [(i, m) for i, line in enumerate(lines) if (m := _GO_FAIL.match(line))]
    heads = heads[: _FAILURES_MAX * 4]  # the first (a parent's head is passed over, uncounted)
    # the parents of a failing subtest (``TestA`` and ``TestA/b`` of ``TestA/b/c``)
    names = [m.group(2) for _, m in heads]
    parents = {name[:k] for name in names for k, c in enumerate(name) if c == "/"}
    ran: dict[str, int] = {}  # ``=== RUN   name`` -> its last line
    for j, s in enumerate(lines):
        if s.startswith("=== RUN"):
            ran[s.strip()] = j
    found: list[TestFailure] = []
    for i, m in heads:
        name = m.group(2)
        if name in parents:
            continue  # the parent of a failing subtest: the subtest says what failed
        if len(found) == _FAILURES_MAX:
            break
        # a test's log lines follow its ``--- FAIL`` line, or come before it under -v
        after = []
        for s in _after(lines, i):
            if s.lstrip().startswith(("--- ", "=== ")) or s.startswith(("FAIL", "ok ", "PASS")):
                break
            after.append(s)
        before = []
        for s in _before(lines, i):
            if s.lstrip().startswith(("--- ", "=== ")):
                break
            before.append(s)
        at = ran.get(f"=== RUN   {name}".strip())
        log = []
        for s in _after(lines, at) if at is not None else ():
            if s.lstrip().startswith(("--- ", "=== ")):
                break
            log.append(s)
        location, message, exception = None, "", None
        for s in [*after, *reversed(before), *log]:
            if p := _GO_PANIC.match(s):
                message, exception = p.group(1), "panic"
                break
            if g := _GO_LOG.match(s):
                location, message = g.group(1), g.group(2)
                break
        found.append(TestFailure("go", name, exception, message, location))
    return found


# -- jest --------------------------------------------------------------------------------------
_JEST_HEAD = re.compile(r"^\s*● (.+)$")
_JEST_SOURCE = re.compile(r"^\s*(?:>\s*)?\d+ \|")
"""A line of the source listing jest prints under a failure (``  > 12 | expect(...)``)."""
_JEST_FILE = re.compile(r"([^\s()]+\.[cm]?[jt]sx?):\d+:\d+")
_TOKENS = re.compile(r"[\s(]")


def _jest_at(line: str) -> str | None:
    """The file of a stack line ``  at fn (src/a.test.js:5:17)`` or ``  at src/a.js:5:17``: its
    last word, whole (a pattern that searched the line for it backtracked over it again from
    each place: quadratic in a long line)."""
    if not line[:1].isspace() or not line.lstrip().startswith("at "):
        return None
    m = _JEST_FILE.fullmatch(_TOKENS.split(line.rstrip().removesuffix(")"))[-1])
    return m.group(1) if m else None


def _jest(text: str, roots: tuple[str, ...]) -> list[TestFailure]:
    if "Test Suites:" not in text and "Tests:" not in text:
        return []
    lines = text.splitlines()
    found: list[TestFailure] = []
    for i, line in enumerate(lines):
        m = _JEST_HEAD.match(line)
        if m is None or m.group(1).startswith("Test suite failed to run"):
            continue
        if len(found) == _FAILURES_MAX:
            break
        message, location = "", None
        for s in _after(lines, i):
            if _JEST_HEAD.match(s) or s.startswith(("Test Suites:", "FAIL ", "PASS ")):
                break
            if not message and s.strip() and not _JEST_SOURCE.match(s):
                message = s.strip()
            if location is None:
                location = _jest_at(s)
        test_id = " > ".join(part.strip() for part in m.group(1).split("›"))
        found.append(
            TestFailure(
                "jest", test_id, _exception_of(message), message, _relative(location, roots)
            )
        )
    return found


_PARSERS: tuple[Callable[[str, tuple[str, ...]], list[TestFailure]], ...] = (
    _pytest,
    _unittest,
    _cargo,
    _go,
    _jest,
    _ctest,
)


def parse_test_failures(text: str, *, roots: Iterable[str] = ()) -> list[TestFailure]:
    """The failing tests in one test run's output (stdout and stderr together).

    Args:
        text: the output.
        roots: workspace directories to cut from absolute paths.

    Returns:
        The failures of the first runner whose markers the output has; empty when none has
        (a build error, a crash before any test ran, or a runner air does not read).
    """
    fixed = tuple(roots)
    for parse in _PARSERS:
        found = parse(text, fixed)
        if found:
            return found
    return []


def signature_of_failures(failures: Iterable[TestFailure]) -> str | None:
    """``<runner>:<sorted test ids>:<sha256[:16]>`` of the failures (None for none)."""
    items = sorted(set(failures), key=lambda f: (f.test_id, f.exception or "", f.message))
    if not items:
        return None
    parts = [
        "\x1f".join(
            (f.runner, f.test_id, f.exception or "", normalize_message(f.message), f.location or "")
        )
        for f in items
    ]
    digest = hashlib.sha256("\x1e".join(parts).encode("utf-8")).hexdigest()[:16]
    ids = ",".join(dict.fromkeys(f.test_id for f in items))
    if len(ids) > _IDS_MAX:
        ids = ids[: _IDS_MAX - 1] + "…"
    return f"{items[0].runner}:{ids}:{digest}"
