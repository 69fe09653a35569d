"""CppTestRunner: ctest with ``--output-junit``, one result per test, GoogleTest and Catch2 read.

Owns ``CppTestInput``, ``CppTestCase``, ``CppTestOutput``, ``CppTestRunner.run_tests`` and the
pure readers ``parse_junit``, ``parse_gtest_output`` and ``parse_catch2_output``. ctest runs with
``--no-tests=error`` (a suite that finds nothing fails) and writes JUnit XML inside the build
directory; the parent reads it back with ``read_workspace_file`` (no symlink, bounded size)
and expat (entity expansion is not followed). A test's own output is searched for GoogleTest or
Catch2 failures so that each case carries the assertion's file, line and message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id
from air.cpp.process import (
    CommandRunner,
    is_plain_file,
    parse_tool_xml,
    read_workspace_file,
    remove_written_file,
)
from air.cpp.project import safe_build_dir

__all__ = [
    "CppTestCase",
    "CppTestInput",
    "CppTestOutput",
    "CppTestRunner",
    "parse_catch2_output",
    "parse_gtest_output",
    "parse_junit",
]


@dataclass(frozen=True)
class CppTestCase:
    name: str
    status: str
    """``passed``, ``failed``, ``skipped`` or ``not_run``."""
    duration_s: float = 0.0
    output: str = ""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """From GoogleTest / Catch2 output: ``{"framework", "test", "file", "line", "message"}``."""


@dataclass(frozen=True)
class CppTestInput:
    workspace: str
    build_dir: str = "build"
    regex: str | None = None
    """ctest ``-R``: only matching tests (a filtered run proves nothing about the others)."""
    timeout_s: float = 600.0
    per_test_timeout_s: float = 120.0
    results_dir: str | None = None
    """Where what ctest writes in the build dir is found instead (the upper dir of an overlay
    the tests run behind, IMPL-CPP-5); None: in the build dir."""


@dataclass(frozen=True)
class CppTestOutput:
    ok: bool
    exit_code: int
    tests: list[CppTestCase]
    filtered: bool
    command_run_id: str | None = None
    junit_path: str | None = None
    junit_xml: bytes | None = None
    stdout: str = ""
    stderr: str = ""

    @property
    def passed(self) -> int:
        return sum(1 for t in self.tests if t.status == "passed")

    @property
    def failed(self) -> list[CppTestCase]:
        return [t for t in self.tests if t.status == "failed"]

    def signature_basis(self) -> str:
        """What stays the same while the same tests fail (names, not timings or output)."""
        return "test_failure|" + ",".join(sorted(t.name for t in self.failed))

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "failed": [t.name for t in self.failed],
            "total": len(self.tests),
            "filtered": self.filtered,
            "tests": [{**asdict(t), "output": t.output[-2000:]} for t in self.tests[:200]],
            "command_run_id": self.command_run_id,
            "output_tail": (self.stdout + self.stderr)[-3000:],
        }


# -- readers ------------------------------------------------------------------------------------


def parse_junit(xml: bytes) -> list[CppTestCase]:
    """The test cases of a ctest JUnit file (``status`` attribute or failure/skipped children).

    Raises:
        AirException(tool_error): the XML does not parse.
    """
    root = parse_tool_xml(
        xml,
        report="ctest's JUnit file",
        writer="ctest",
        dtd_action="Delete the build directory's JUnit file and run the tests again.",
        parse_action="Run the tests again; report it if ctest keeps writing broken XML.",
    )
    cases: list[CppTestCase] = []
    for case in root.iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            result = "failed"
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            result = "skipped" if status != "notrun" else "not_run"
        else:
            result = "passed"
        out = case.findtext("system-out") or ""
        try:
            duration = float(case.get("time", "0") or 0)
        except ValueError:
            duration = 0.0
        name = case.get("name", "?")
        failures = [*parse_gtest_output(out), *parse_catch2_output(out)]
        cases.append(CppTestCase(name, result, duration, out, failures))
    return cases


_GTEST_FAILURE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d{1,9}): Failure$")
_GTEST_RESULT = re.compile(r"^\[\s+(?P<res>OK|FAILED|SKIPPED)\s+\] (?P<test>[\w/.<>:-]+)(?: \(|$)")
_GTEST_RUN = re.compile(r"^\[ RUN\s+\] (?P<test>[\w/.<>:-]+)$")


def parse_gtest_output(text: str) -> list[dict[str, Any]]:
    """GoogleTest failures: ``file:line: Failure`` and the message lines until the result.

    A message's lines are joined once at the end: a test prints what it likes, and growing the
    message a line at a time copied it again for every line (quadratic in a long output)."""
    failures: list[dict[str, Any]] = []
    messages: list[list[str]] = []
    current_test: str | None = None
    open_message: list[str] | None = None
    for line in text.splitlines():
        if m := _GTEST_RUN.match(line):
            current_test, open_message = m.group("test"), None
            continue
        if m := _GTEST_FAILURE.match(line):
            open_message = []
            messages.append(open_message)
            failures.append(
                {
                    "framework": "gtest",
                    "test": current_test,
                    "file": m.group("file"),
                    "line": int(m.group("line")),
                }
            )
            continue
        if _GTEST_RESULT.match(line):
            open_message = None
            continue
        if open_message is not None and line.strip():
            open_message.append(line.strip())
    for failure, message in zip(failures, messages, strict=True):
        failure["message"] = "\n".join(message)
    return failures


_CATCH_FAILED = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d{1,9}): FAILED:$")
_CATCH_RULE = re.compile(r"^-{20,}$")


def parse_catch2_output(text: str) -> list[dict[str, Any]]:
    """Catch2 failures: ``file:line: FAILED:`` blocks under the test case's banner."""
    failures: list[dict[str, Any]] = []
    lines = text.splitlines()
    current_test: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if (
            _CATCH_RULE.match(line)
            and i + 2 < len(lines)
            and lines[i + 1].strip()
            and _CATCH_RULE.match(lines[i + 2])
        ):
            current_test = lines[i + 1].strip()  # the banner: rule, test case name, rule
        if m := _CATCH_FAILED.match(line):
            body: list[str] = []
            j = i + 1
            while (
                j < len(lines) and not _CATCH_RULE.match(lines[j]) and not lines[j].startswith("=")
            ):
                if lines[j].strip():
                    body.append(lines[j].strip())
                j += 1
            failures.append(
                {
                    "framework": "catch2",
                    "test": current_test,
                    "file": m.group("file"),
                    "line": int(m.group("line")),
                    "message": "\n".join(body),
                }
            )
            i = j
            continue
        i += 1
    return failures


# -- the runner ---------------------------------------------------------------------------------


class CppTestRunner:
    """Runs ctest in a built workspace and reads every test's result (SDD §15)."""

    def __init__(self, runner: CommandRunner, redact: Callable[[bytes], bytes]) -> None:
        self.runner = runner
        self.redact = redact
        """The run's redactor: ctest's JUnit file is redacted whole before it is read (its
        tests' output is cut to a tail, which, cut first, could begin inside a key block)."""

    def argv(self, input: CppTestInput, build_dir: str, junit: str) -> list[str]:
        args = [
            "ctest",
            "--test-dir",
            build_dir,
            "--output-junit",
            junit,
            "--no-tests=error",
            "--output-on-failure",
            "--timeout",
            str(int(input.per_test_timeout_s)),
        ]
        if input.regex:
            args += ["-R", input.regex]
        return args

    async def run_tests(self, input: CppTestInput) -> CppTestOutput:
        build_dir = safe_build_dir(input.workspace, input.build_dir)
        if not is_plain_file(input.workspace, build_dir, "CTestTestfile.cmake"):
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"{build_dir} has no tests: it is not configured, or the project does "
                "not call enable_testing()",
                user_action="Run cpp.build first (it configures the build directory).",
            )
        name = f"air-ctest-{new_id('jx')}.xml"
        result = await self.runner.run(
            self.argv(input, build_dir, name), cwd=input.workspace, timeout_s=input.timeout_s
        )
        rel = os.path.join(build_dir, name)
        if input.results_dir is not None:
            xml = read_workspace_file(input.results_dir, name)
        else:
            xml = read_workspace_file(input.workspace, rel)
            if xml is not None:
                remove_written_file(input.workspace, rel)
        if xml:
            xml = await trio.to_thread.run_sync(self.redact, xml)  # up to 16 MiB
        tests = parse_junit(xml) if xml else []
        ok = (
            result.exit_code == 0
            and not result.timed_out
            and bool(tests)
            and all(t.status in ("passed", "skipped") for t in tests)
        )
        return CppTestOutput(
            ok=ok,
            exit_code=result.exit_code,
            tests=tests,
            filtered=bool(input.regex),
            command_run_id=result.command_run_id,
            junit_path=rel if xml is not None else None,
            junit_xml=xml,
            stdout=result.stdout,
            stderr=result.stderr,
        )
