"""``ParsedDiagnostic``: one compiler, linker or CMake diagnostic as every parser produces it.

Owns the record (with its notes, collapsed backtrace and semantic signature; its contracts §21
form and JSON summary) and the field normalisation the text and structured parsers share so
their forms of one build agree: the severity words compilers print (``SEVERITY``), the trailing
``[-Woption]`` (``split_option``), workspace-relative paths (``norm_file``), a line or column
a build printed (``position``: what a build prints is the task's, not trusted) and
``new_diagnostic``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from air.contracts.tool import DiagnosticSeverity
from air.contracts.tool_runs import Diagnostic
from air.cpp.signatures import option_family

__all__ = [
    "POSITION_MAX",
    "SEVERITY",
    "ParsedDiagnostic",
    "new_diagnostic",
    "norm_file",
    "position",
    "split_option",
]

POSITION_MAX = 999_999_999
"""The largest line or column air takes from a build's output (the text parsers read at most 9
digits): a build that printed a line number of 30 digits ended the run storing it."""


def position(value: Any) -> int | None:
    """``value`` if it is a line or column (an int, 0 to ``POSITION_MAX``), else None."""
    return value if type(value) is int and 0 <= value <= POSITION_MAX else None


_OPTION = re.compile(r"\s\[(?P<opt>-[A-Za-z][^\]]*)\]$")
SEVERITY = {
    "fatal error": DiagnosticSeverity.ERROR,
    "error": DiagnosticSeverity.ERROR,
    "warning": DiagnosticSeverity.WARNING,
    "note": DiagnosticSeverity.NOTE,
    "remark": DiagnosticSeverity.NOTE,
    "Error": DiagnosticSeverity.ERROR,
    "Deprecation Error": DiagnosticSeverity.ERROR,
    "Warning": DiagnosticSeverity.WARNING,
    "Deprecation Warning": DiagnosticSeverity.WARNING,
}
"""Severity words of gcc/clang text and JSON and of CMake."""


@dataclass(frozen=True)
class ParsedDiagnostic:
    """One error or warning as a compiler, linker or CMake reported it.

    ``notes`` are the notes that followed it (candidates, "declared here", instantiation
    points); ``backtrace`` the include / instantiation context that led to it, collapsed.
    """

    severity: DiagnosticSeverity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None
    """The option that controls it (``-Werror=unused-variable``) or the CMake command."""
    tool: str = "compiler"
    """``compiler``, ``linker`` or ``cmake`` (the origin, not the vendor: stable across both)."""
    fatal: bool = False
    notes: tuple[ParsedDiagnostic, ...] = ()
    backtrace: tuple[str, ...] = ()
    semantic_signature: str = ""

    def key(self) -> tuple[object, ...]:
        """What the text and structured forms of one build must agree on (the option without
        its ``-Werror`` marker: clang's serialized form keeps only the warning's flag)."""
        return (
            self.severity.value,
            self.file,
            self.line,
            self.column,
            self.message,
            option_family(self.code) if self.tool == "compiler" else self.code,
            self.tool,
            self.semantic_signature,
        )

    def to_contract(self, diagnostic_id: str) -> Diagnostic:
        """The contracts §21 record for the ``diagnostics`` table."""
        return Diagnostic(
            diagnostic_id=diagnostic_id,
            severity=self.severity,
            message=self.message,
            file=self.file,
            line=self.line,
            column=self.column,
            code=self.code,
            tool=self.tool,
            semantic_signature=self.semantic_signature,
        )

    def summary(self) -> dict[str, Any]:
        """A JSON-able view for tool outputs and debug-task context."""
        return {
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "code": self.code,
            "tool": self.tool,
            "semantic_signature": self.semantic_signature,
            "notes": [
                {"file": n.file, "line": n.line, "message": n.message} for n in self.notes[:8]
            ],
            "backtrace": list(self.backtrace[:8]),
        }


def norm_file(path: str, root: str | None) -> str:
    """``path`` normalised, relative to ``root`` when it lies under it."""
    path = path.strip()
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            path = rel
    return os.path.normpath(path)


def split_option(message: str) -> tuple[str, str | None]:
    """The message and its trailing ``[-Woption]`` (None when it has none)."""
    m = _OPTION.search(message)
    if m is None:
        return message, None
    return message[: m.start()], m.group("opt")


def new_diagnostic(
    severity: DiagnosticSeverity,
    message: str,
    file: str | None,
    line: int | None,
    column: int | None,
    code: str | None,
    tool: str,
    fatal: bool,
) -> ParsedDiagnostic:
    """A diagnostic with its message stripped (notes, backtrace and signature come later)."""
    return ParsedDiagnostic(severity, message.strip(), file, line, column, code, tool, fatal)
