"""CppcheckRunner: cppcheck's XML (version 2) read into diagnostics with signatures.

Owns ``CppcheckInput``, ``CppcheckOutput``, ``CppcheckRunner.run`` and ``parse_cppcheck_xml``.
cppcheck checks the compile database when the build directory has one (configured with
``CMAKE_EXPORT_COMPILE_COMMANDS``), else the given paths; its report is read from stderr, never
from a file a command could have replaced.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from air.contracts.error import AirException, ErrorKind
from air.contracts.tool import DiagnosticSeverity
from air.cpp.parsed_diagnostic import ParsedDiagnostic
from air.cpp.process import CommandRunner, is_plain_file, parse_tool_xml
from air.cpp.project import safe_build_dir
from air.cpp.signatures import make_signature

__all__ = ["CppcheckInput", "CppcheckOutput", "CppcheckRunner", "parse_cppcheck_xml"]

_SEVERITY = {
    "error": DiagnosticSeverity.ERROR,
    "warning": DiagnosticSeverity.WARNING,
    "style": DiagnosticSeverity.WARNING,
    "performance": DiagnosticSeverity.WARNING,
    "portability": DiagnosticSeverity.WARNING,
    "information": DiagnosticSeverity.NOTE,
}
_IGNORED_IDS = frozenset({"missingIncludeSystem", "checkersReport", "toomanyconfigs"})


def _int(value: str | None) -> int | None:
    try:
        return int(value or 0) or None
    except ValueError:
        return None


def parse_cppcheck_xml(xml: str, root: str | None = None) -> list[ParsedDiagnostic]:
    """Every ``<error>`` of a cppcheck ``--xml`` report, at its first location.

    Raises:
        AirException(tool_error): the report does not parse.
    """
    start = xml.find("<?xml")
    text = xml[start:] if start >= 0 else xml
    doc = parse_tool_xml(
        text,
        report="cppcheck's XML report",
        writer="cppcheck",
        dtd_action="Run cpp.cppcheck again.",
        parse_action="Run cpp.cppcheck again; check that cppcheck is version 2 or newer.",
    )
    out: list[ParsedDiagnostic] = []
    real_root = os.path.realpath(root) if root else None
    for err in doc.iter("error"):
        code = err.get("id", "unknown")
        if code in _IGNORED_IDS:
            continue
        severity = _SEVERITY.get(err.get("severity", "warning"), DiagnosticSeverity.WARNING)
        message = err.get("msg", "").strip()
        locations = err.findall("location")
        file = line = column = None
        notes = []
        for i, loc in enumerate(locations):
            lfile = loc.get("file")
            if lfile and real_root and os.path.isabs(lfile):
                rel = os.path.relpath(lfile, real_root)
                lfile = rel if not rel.startswith("..") else lfile
            lline = _int(loc.get("line"))
            lcol = _int(loc.get("column"))
            if i == 0:
                file, line, column = lfile, lline, lcol
            elif loc.get("info"):
                notes.append(
                    ParsedDiagnostic(
                        DiagnosticSeverity.NOTE, loc.get("info", ""), lfile, lline, lcol
                    )
                )
        out.append(
            ParsedDiagnostic(
                severity=severity,
                message=message,
                file=file,
                line=line,
                column=column,
                code=code,
                tool="cppcheck",
                notes=tuple(notes),
                semantic_signature=make_signature(severity, "cppcheck", code, message),
            )
        )
    return out


@dataclass(frozen=True)
class CppcheckInput:
    workspace: str
    build_dir: str = "build"
    paths: list[str] = field(default_factory=list)
    """Checked when the build dir has no compile_commands.json (default: the workspace)."""
    enable: str = "warning,style,performance,portability"
    timeout_s: float = 600.0


@dataclass(frozen=True)
class CppcheckOutput:
    ok: bool
    exit_code: int
    diagnostics: list[ParsedDiagnostic]
    used_compile_commands: bool
    command_run_id: str | None = None
    report: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "exit_code": self.exit_code,
            "errors": sum(1 for d in self.diagnostics if d.severity == DiagnosticSeverity.ERROR),
            "diagnostics": [d.summary() for d in self.diagnostics[:100]],
            "used_compile_commands": self.used_compile_commands,
            "command_run_id": self.command_run_id,
        }


_ENABLE = frozenset({"all", "warning", "style", "performance", "portability", "information"})


class CppcheckRunner:
    """Runs cppcheck over the workspace (SDD §15)."""

    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner

    def argv(self, input: CppcheckInput, compile_commands: str | None) -> list[str]:
        if not set(input.enable.split(",")) <= _ENABLE:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"enable={input.enable!r} names an unknown cppcheck check group",
                user_action=f"Use a comma-separated subset of {sorted(_ENABLE)}.",
            )
        args = [
            "cppcheck",
            "--xml",
            "--xml-version=2",
            f"--enable={input.enable}",
            "--inline-suppr",
            "--quiet",
        ]
        if compile_commands:
            return [*args, f"--project={compile_commands}"]
        paths = input.paths or ["."]
        for p in paths:
            if os.path.isabs(p) or ".." in os.path.normpath(p).split(os.sep) or p.startswith("-"):
                raise AirException.of(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message=f"path {p!r} must be relative and inside the workspace",
                    user_action="Pass workspace-relative paths such as 'src'.",
                )
        return [*args, "-i", ".air", "-i", ".git", *paths]

    async def run(self, input: CppcheckInput) -> CppcheckOutput:
        build_dir = safe_build_dir(input.workspace, input.build_dir)
        cc = os.path.join(build_dir, "compile_commands.json")
        use_cc = is_plain_file(input.workspace, cc) and not input.paths
        result = await self.runner.run(
            self.argv(input, cc if use_cc else None), cwd=input.workspace, timeout_s=input.timeout_s
        )
        diagnostics = (
            parse_cppcheck_xml(result.stderr, input.workspace)
            if "<results" in result.stderr
            else []
        )
        if result.exit_code != 0 and not diagnostics:
            raise AirException.of(
                kind=ErrorKind.TOOL_ERROR,
                message=f"cppcheck exited {result.exit_code}: {result.stderr[-500:]}",
                user_action="Check the paths and the compile database, then run it again.",
            )
        return CppcheckOutput(
            ok=not any(d.severity == DiagnosticSeverity.ERROR for d in diagnostics),
            exit_code=result.exit_code,
            diagnostics=diagnostics,
            used_compile_commands=use_cc,
            command_run_id=result.command_run_id,
            report=result.stderr,
        )
