"""DiagnosticParser: compiler, linker and CMake output → diagnostics with semantic signatures.

Owns the text parser: ``DiagnosticStream``, the incremental form a build uses to hand
diagnostics out as the output arrives, ``DiagnosticParser`` (``parse_compiler_output``,
``semantic_signature``) over it, ``DiagnosticCollector``, which keeps them and hands each to a
``DiagnosticSink``, and ``strip_ansi`` (SDD §15, contracts §21). The record is
``air.cpp.parsed_diagnostic``, the signatures ``air.cpp.signatures``, the gcc JSON and SARIF
forms ``air.cpp.json_diagnostics``.

What it reads, in one pass and mixed freely (a build log interleaves them):
- gcc and clang text (ANSI colour stripped), ``file:line:col: severity: message [option]``;
- gcc ``-fdiagnostics-format=json`` (one JSON array per translation unit, one line each);
- SARIF 2.1.0 logs (gcc >= 13 ``-fdiagnostics-format=sarif-*``, clang >= 15
  ``-fdiagnostics-format=sarif``), one JSON document per line or per whole output;
- GNU ld / lld errors (undefined reference, multiple definition, cannot find -l...);
- CMake ``CMake Error at file:line (command):`` blocks.

Rules that make the text and the structured forms of one build agree: every error or warning is
one diagnostic, in output order (a nested error of a gcc JSON diagnostic is flattened into its
own diagnostic, as the text prints it); a note belongs to the diagnostic before it; context
lines (``In file included from``, ``In instantiation of``, ``required from``) collapse into the
backtrace of the diagnostic that follows them. Deterministic, no model (SDD §15).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace

from air.contracts.tool import DiagnosticSeverity
from air.contracts.tool_runs import Diagnostic
from air.cpp.json_diagnostics import from_sarif, parse_json_line
from air.cpp.parsed_diagnostic import (
    SEVERITY,
    ParsedDiagnostic,
    new_diagnostic,
    norm_file,
    split_option,
)
from air.cpp.signatures import make_signature

__all__ = [
    "DIAGNOSTICS_KEPT",
    "LINE_MAX",
    "DiagnosticCollector",
    "DiagnosticParser",
    "DiagnosticSink",
    "DiagnosticStream",
    "severity_counts",
    "strip_ansi",
]

LINE_MAX = 1 << 16
"""The characters of one output line the parser reads (gcc's longest template errors fit)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z@`~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_HEADER = re.compile(
    r"^(?P<file>[^\s:][^:]*?):(?P<line>\d{1,9}):(?:(?P<col>\d{1,9}):)?\s"
    r"(?P<sev>fatal error|error|warning|note|remark):\s(?P<msg>.*)$"
)
_DRIVER = re.compile(
    r"^(?P<prog>(?:[\w./-]*/)?(?:[\w.+-]*-)?(?:g\+\+|gcc|c\+\+|cc|cc1plus|cc1|clang\+\+|clang|"
    r"collect2|ld(?:\.\w+)?|lld)(?:-\d+(?:\.\d+)*)?):\s(?P<sev>fatal error|error|warning|note):\s"
    r"(?P<msg>.*)$"
)
_LINKER_REF = re.compile(
    r"^(?P<file>[^\s:][^:]*?):(?:\((?P<section>[^)]*)\)|(?P<line>\d{1,9}))?:\s"
    r"(?P<msg>(?:undefined reference to|multiple definition of) .*)$"
)
_LINKER_PLAIN = re.compile(
    r"^(?P<prog>(?:[\w./-]*/)?(?:ld(?:\.\w+)?|lld|ld\.lld)):\s(?P<msg>(?:error: )?"
    r"(?:cannot find|undefined symbol|duplicate symbol).*)$"
)
_LINKER_CONTEXT = re.compile(r"^(?:[\w./-]*/)?ld(?:\.\w+)?: .*: in function .*:$")
_CMAKE = re.compile(
    r"^CMake (?P<sev>Error|Warning|Deprecation Warning|Deprecation Error)(?: \(dev\))?"
    r"(?: at (?P<file>.+?):(?P<line>\d{1,9})(?: \((?P<cmd>[^)]*)\))?| in (?P<file2>.+?))?:\s*"
    r"(?P<rest>.*)$"
)
_CONTEXT = re.compile(
    r"^(?:In file included from .*|\s+from .*[:,]|[^\s:][^:]*: In (?:function|member function|"
    r"instantiation|constructor|destructor|static member function|lambda function|"
    r"substitution|copy constructor|member|static|explicit) .*:|[^\s:][^:]*: At (?:global|"
    r"top level).*:|[^\s:][^:]*:\d+:\d+:\s+(?:required|recursively required|in|instantiated) "
    r"(?:from|by) .*|[^\s:][^:]*:\d+:\d+:\s+required by substitution .*)$"
)
_BACKTRACE_NOTES = ("in instantiation of", "in file included from", "while substituting")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI colour and OSC (hyperlink) escapes."""
    return _ANSI.sub("", text) if "\x1b" in text else text


@dataclass
class _Pending:
    diag: ParsedDiagnostic
    notes: list[ParsedDiagnostic] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    """CMake: the indented lines of the message."""
    backtrace: list[str] = field(default_factory=list)


DiagnosticSink = Callable[[ParsedDiagnostic], Awaitable[None]]
"""Receives each finished diagnostic as soon as it is parsed."""


DIAGNOSTICS_KEPT = 1000
"""The most diagnostics one command's collector keeps and hands on (each one a durable
``diagnostic.created``); the rest are counted by severity."""


@dataclass
class DiagnosticCollector:
    """Keeps the first ``DIAGNOSTICS_KEPT`` diagnostics of one command and hands each on to
    ``on_diagnostic`` at once; counts the rest (``not_kept``: severity -> how many). A build
    step that prints diagnostics without end (a generator gone wrong, a task's loop) no longer
    grows the session's event log and the parent with them."""

    on_diagnostic: DiagnosticSink | None = None
    diagnostics: list[ParsedDiagnostic] = field(default_factory=list)
    not_kept: dict[str, int] = field(default_factory=dict)
    limit: int = DIAGNOSTICS_KEPT

    async def deliver(self, found: Iterable[ParsedDiagnostic]) -> None:
        for d in found:
            if len(self.diagnostics) >= self.limit:
                severity = d.severity.value
                self.not_kept[severity] = self.not_kept.get(severity, 0) + 1
                continue
            self.diagnostics.append(d)
            if self.on_diagnostic is not None:
                await self.on_diagnostic(d)


def severity_counts(
    diagnostics: Iterable[ParsedDiagnostic], not_kept: dict[str, int]
) -> dict[str, int]:
    """A command's ``errors`` and ``warnings``: the kept ``diagnostics`` and the ones counted in
    ``not_kept`` (``DiagnosticCollector``)."""
    counts = {"errors": 0, "warnings": 0}
    names = {DiagnosticSeverity.ERROR: "errors", DiagnosticSeverity.WARNING: "warnings"}
    for d in diagnostics:
        if d.severity in names:
            counts[names[d.severity]] += 1
    for severity, name in names.items():
        counts[name] += not_kept.get(severity.value, 0)
    return counts


class DiagnosticStream:
    """Feed output as it arrives; get each diagnostic once its notes are complete.

    Args:
        root: paths under it are reported relative to it (the workspace).
    """

    def __init__(self, root: str | None = None) -> None:
        self._root = os.path.realpath(root) if root else None
        self._buffer = ""
        self._pending: _Pending | None = None
        self._context: list[str] = []
        self._cmake = False

    # -- public ---------------------------------------------------------------------------

    def feed(self, chunk: str) -> list[ParsedDiagnostic]:
        """Parse the complete lines of ``chunk``; return the diagnostics finished by them.

        A line is parsed from its first ``LINE_MAX`` characters; the rest of a longer one is
        dropped as it arrives, so output that never ends a line neither grows the parser nor
        makes each chunk rescan what came before."""
        *complete, rest = chunk.split("\n")
        if not complete:
            if len(self._buffer) < LINE_MAX:
                self._buffer = (self._buffer + chunk)[:LINE_MAX]
            return []
        lines = [self._buffer + complete[0][:LINE_MAX], *complete[1:]]
        self._buffer = rest[:LINE_MAX]
        out: list[ParsedDiagnostic] = []
        for line in lines:
            out.extend(self._line(line[:LINE_MAX]))
        return out

    def close(self) -> list[ParsedDiagnostic]:
        """Flush: the last partial line and the diagnostic still collecting notes."""
        out: list[ParsedDiagnostic] = []
        if self._buffer:
            rest, self._buffer = self._buffer, ""
            out.extend(self._line(rest))
        out.extend(self._flush())
        return out

    # -- lines ----------------------------------------------------------------------------

    def _line(self, raw: str) -> list[ParsedDiagnostic]:
        line = strip_ansi(raw).rstrip("\r")
        stripped = line.strip()
        if self._cmake:
            if line.startswith((" ", "\t")) or not stripped:
                assert self._pending is not None
                self._pending.body.append(line)
                return []
            self._cmake = False
        if not stripped or ":" not in stripped:
            return []  # blank, a caret line, "ninja: ..."-less progress: nothing to parse
        if line[0] in " \t":
            # source snippets and their carets; only gcc's "                 from x.h:3,"
            if (
                stripped.startswith("from ")
                and self._context
                and self._context[-1].startswith(("In file included from", "from "))
            ):
                self._context.append(stripped)
            return []
        if stripped.startswith(("[{", "{")) and stripped.endswith(("}]", "}", "]")):
            parsed = parse_json_line(stripped, self._root)
            if parsed is not None:
                return [*self._flush(), *parsed]
        m = _HEADER.match(line)
        if m is not None:
            return self._header(
                m.group("sev"),
                m.group("msg"),
                norm_file(m.group("file"), self._root),
                int(m.group("line")),
                int(m.group("col")) if m.group("col") else None,
            )
        m = _LINKER_REF.match(line)
        if m is not None:
            return self._linker(m.group("msg"), m.group("file"), m.group("line"))
        m = _CMAKE.match(line)
        if m is not None:
            return self._cmake_header(m)
        m = _DRIVER.match(line)
        if m is not None:
            return self._driver(m.group("prog"), m.group("sev"), m.group("msg"))
        m = _LINKER_PLAIN.match(line)
        if m is not None:
            msg = m.group("msg").removeprefix("error: ")
            out = self._flush()
            self._pending = self._new(
                new_diagnostic(
                    DiagnosticSeverity.ERROR, msg, None, None, None, None, "linker", False
                )
            )
            return out
        if _LINKER_CONTEXT.match(line) or _CONTEXT.match(line):
            # context belongs to the diagnostic (or note) that follows it
            self._context.append(stripped)
        return []

    def _new(self, diag: ParsedDiagnostic, notes: list[ParsedDiagnostic] | None = None) -> _Pending:
        context, self._context = self._context, []
        return _Pending(diag, notes=notes or [], backtrace=context)

    def _header(
        self, sev: str, msg: str, file: str, line: int, col: int | None
    ) -> list[ParsedDiagnostic]:
        severity = SEVERITY[sev]
        message, code = split_option(msg)
        if severity == DiagnosticSeverity.NOTE and self._pending is not None:
            self._context = []
            text = message.strip()
            if text.startswith(_BACKTRACE_NOTES):
                self._pending.backtrace.append(f"{file}:{line}:{col or 0}: {text}")
            else:
                self._pending.notes.append(ParsedDiagnostic(severity, text, file, line, col, code))
            return []
        out = self._flush()
        self._pending = self._new(
            new_diagnostic(
                severity, message, file, line, col, code, "compiler", sev == "fatal error"
            )
        )
        return out

    def _linker(self, msg: str, file: str, line: str | None) -> list[ParsedDiagnostic]:
        out = self._flush()
        message, _, rest = msg.partition("; ")
        notes = []
        if rest:
            notes.append(ParsedDiagnostic(DiagnosticSeverity.NOTE, rest.strip()))
        name = os.path.normpath(file)
        if name.endswith(".o") or "(" in name:
            name = norm_file(name, self._root)
        self._pending = self._new(
            new_diagnostic(
                DiagnosticSeverity.ERROR,
                message,
                norm_file(name, self._root),
                int(line) if line else None,
                None,
                None,
                "linker",
                False,
            ),
            notes=notes,
        )
        return out

    def _cmake_header(self, m: re.Match[str]) -> list[ParsedDiagnostic]:
        file = m.group("file") or m.group("file2")
        rest = m.group("rest") or ""
        if file is None and rest.startswith("Error processing file") and self._pending:
            self._pending.notes.append(ParsedDiagnostic(DiagnosticSeverity.NOTE, rest.strip()))
            return []
        out = self._flush()
        self._pending = self._new(
            new_diagnostic(
                SEVERITY[m.group("sev")],
                m.group("rest") or "",
                norm_file(file, self._root) if file else None,
                int(m.group("line")) if m.group("line") else None,
                None,
                m.group("cmd"),
                "cmake",
                False,
            )
        )
        self._cmake = True
        return out

    def _driver(self, prog: str, sev: str, msg: str) -> list[ParsedDiagnostic]:
        base = os.path.basename(prog)
        severity = SEVERITY[sev]
        summary = "ld returned" in msg or "linker command failed" in msg
        if (summary or severity == DiagnosticSeverity.NOTE) and self._pending is not None:
            self._pending.notes.append(ParsedDiagnostic(DiagnosticSeverity.NOTE, msg.strip()))
            return []
        if summary:
            return []
        tool = "linker" if base.startswith(("ld", "lld", "collect2")) else "compiler"
        out = self._flush()
        self._pending = self._new(
            new_diagnostic(severity, msg, None, None, None, None, tool, sev == "fatal error")
        )
        return out

    def _flush(self) -> list[ParsedDiagnostic]:
        pending, self._pending = self._pending, None
        self._cmake = False
        if pending is None:
            return []
        diag = pending.diag
        message = diag.message
        backtrace = tuple(pending.backtrace)
        if pending.body:
            body, trace = _cmake_body(pending.body)
            message = " ".join(x for x in (message, body) if x).strip()
            backtrace = (*backtrace, *trace)
        notes = tuple(pending.notes)
        done = replace(
            diag,
            message=message,
            notes=notes,
            backtrace=backtrace,
            semantic_signature=make_signature(diag.severity, diag.tool, diag.code, message),
        )
        return [done]


def _cmake_body(lines: list[str]) -> tuple[str, list[str]]:
    text: list[str] = []
    trace: list[str] = []
    in_stack = False
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s.startswith("Call Stack (most recent call first):"):
            in_stack = True
            continue
        if s.startswith("This warning is for project developers"):
            continue
        (trace if in_stack else text).append(s)
    return " ".join(text), trace


class DiagnosticParser:
    """Deterministic extraction of diagnostics and their semantic signatures (SDD §15).

    Args:
        root: paths under it are reported relative to it (the workspace).
    """

    def __init__(self, root: str | None = None) -> None:
        self.root = root

    def parse_compiler_output(self, output: str) -> list[ParsedDiagnostic]:
        """Every error and warning in ``output`` (text, gcc JSON, SARIF, ld, CMake, mixed)."""
        stripped = output.strip()
        if stripped.startswith("{") and '"runs"' in stripped[:4000]:
            try:
                log = json.loads(stripped)
            except (ValueError, RecursionError):  # output is not trusted: its depth neither
                log = None
            if isinstance(log, dict):
                try:
                    return list(from_sarif(log, os.path.realpath(self.root) if self.root else None))
                except (AttributeError, TypeError, ValueError, KeyError):
                    pass  # not a SARIF log after all: parse it as text
        stream = DiagnosticStream(self.root)
        return [*stream.feed(output), *stream.close()]

    def parse_lines(self, lines: Iterable[str]) -> list[ParsedDiagnostic]:
        """Like ``parse_compiler_output`` over lines already split (no trailing newlines)."""
        stream = DiagnosticStream(self.root)
        out: list[ParsedDiagnostic] = []
        for line in lines:
            out.extend(stream.feed(line + "\n"))
        return [*out, *stream.close()]

    @staticmethod
    def semantic_signature(diagnostic: ParsedDiagnostic | Diagnostic) -> str:
        """Stable across paths, lines, varying identifiers and machines; differs between errors."""
        return make_signature(
            diagnostic.severity, diagnostic.tool or "compiler", diagnostic.code, diagnostic.message
        )
