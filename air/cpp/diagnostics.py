"""DiagnosticParser: compiler, linker and CMake output → diagnostics with semantic signatures.

Owns ``ParsedDiagnostic`` (a diagnostic with its notes and collapsed backtrace),
``DiagnosticParser`` (``parse_compiler_output``, ``semantic_signature``) and
``DiagnosticStream``, the incremental form a build uses to hand diagnostics out as the output
arrives, and ``DiagnosticCollector``, which keeps them and hands each to a ``DiagnosticSink``
(SDD §15, contracts §21).

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

import hashlib
import json
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from air.contracts.tool import DiagnosticSeverity
from air.contracts.tool_runs import Diagnostic

__all__ = [
    "DiagnosticCollector",
    "DiagnosticParser",
    "DiagnosticSink",
    "DiagnosticStream",
    "ParsedDiagnostic",
    "make_signature",
    "normalize_for_signature",
    "strip_ansi",
]

SIGNATURE_VERSION = "cppdiag1"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z@`~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_HEADER = re.compile(
    r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s"
    r"(?P<sev>fatal error|error|warning|note|remark):\s(?P<msg>.*)$"
)
_DRIVER = re.compile(
    r"^(?P<prog>(?:[\w./-]*/)?(?:[\w.+-]*-)?(?:g\+\+|gcc|c\+\+|cc|cc1plus|cc1|clang\+\+|clang|"
    r"collect2|ld(?:\.\w+)?|lld)(?:-\d+(?:\.\d+)*)?):\s(?P<sev>fatal error|error|warning|note):\s"
    r"(?P<msg>.*)$"
)
_LINKER_REF = re.compile(
    r"^(?P<file>[^\s:][^:]*?):(?:\((?P<section>[^)]*)\)|(?P<line>\d+))?:\s"
    r"(?P<msg>(?:undefined reference to|multiple definition of) .*)$"
)
_LINKER_PLAIN = re.compile(
    r"^(?P<prog>(?:[\w./-]*/)?(?:ld(?:\.\w+)?|lld|ld\.lld)):\s(?P<msg>(?:error: )?"
    r"(?:cannot find|undefined symbol|duplicate symbol).*)$"
)
_LINKER_CONTEXT = re.compile(r"^(?:[\w./-]*/)?ld(?:\.\w+)?: .*: in function .*:$")
_CMAKE = re.compile(
    r"^CMake (?P<sev>Error|Warning|Deprecation Warning|Deprecation Error)(?: \(dev\))?"
    r"(?: at (?P<file>.+?):(?P<line>\d+)(?: \((?P<cmd>[^)]*)\))?| in (?P<file2>.+?))?:\s*"
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
_OPTION = re.compile(r"\s\[(?P<opt>-[A-Za-z][^\]]*)\]$")
_SEVERITY = {
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
_SARIF_LEVEL = {
    "error": DiagnosticSeverity.ERROR,
    "warning": DiagnosticSeverity.WARNING,
    "note": DiagnosticSeverity.NOTE,
    "none": DiagnosticSeverity.NOTE,
}


def strip_ansi(text: str) -> str:
    """``text`` without ANSI colour and OSC (hyperlink) escapes."""
    return _ANSI.sub("", text) if "\x1b" in text else text


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
            _option_family(self.code) if self.tool == "compiler" else self.code,
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


# -- signatures ------------------------------------------------------------------------------

_QUOTED = re.compile(r"‘[^’]*’|“[^”]*”|`[^'`]*'|'[^']*'|\"[^\"]*\"")
_PATHLIKE = re.compile(
    r"(?:[\w.+-]*/)+[\w.+-]+|\b[\w.+-]+\.(?:c|cc|cpp|cxx|h|hh|hpp|hxx|o|a|so|txt|cmake)\b"
)
_LIBRARY = re.compile(r"(?<!\S)-l\S+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(r"\b\d+\b")
_SPACE = re.compile(r"\s+")


def normalize_for_signature(message: str) -> str:
    """The message with what varies between occurrences of one error replaced by placeholders:
    quoted identifiers and types, paths and file names, numbers, spacing."""
    text = _QUOTED.sub("<q>", message)
    text = _LIBRARY.sub("-l<lib>", text)
    text = _PATHLIKE.sub("<path>", text)
    text = _HEX.sub("<n>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip().lower()


def _option_family(code: str | None) -> str:
    if not code:
        return ""
    parts = [p.strip() for p in code.split(",")]
    names = []
    for part in parts:
        if part == "-Werror":
            continue
        if part.startswith("-Werror="):
            part = "-W" + part[len("-Werror=") :]
        names.append(part)
    return ",".join(names)


_CMAKE_COMMANDS = frozenset(
    """add_compile_definitions add_compile_options add_custom_command add_custom_target
    add_definitions add_dependencies add_executable add_library add_link_options add_subdirectory
    add_test aux_source_directory cmake_minimum_required cmake_policy configure_file enable_testing
    execute_process export file find_file find_library find_package find_path find_program
    foreach function get_filename_component get_property get_target_property if include
    include_directories install list macro math message option project set set_property
    set_target_properties string target_compile_definitions target_compile_features
    target_compile_options target_include_directories target_link_directories
    target_link_libraries target_link_options target_sources try_compile try_run while""".split()
)


def _code_family(tool: str, code: str | None) -> str:
    if tool == "cmake":
        # a user function or an unknown command is an identifier that varies; CMake's own
        # commands say which kind of error it is
        return code if code in _CMAKE_COMMANDS else ("<cmd>" if code else "")
    return _option_family(code)


_USER_TEXT = re.compile(r"^(static assertion failed|#error|#warning)\b.*", re.IGNORECASE)


def make_signature(severity: DiagnosticSeverity, tool: str, code: str | None, message: str) -> str:
    """The semantic signature of one diagnostic from its parts (see ``normalize_for_signature``)."""
    return _signature(severity, tool, code, message)


def _signature(severity: DiagnosticSeverity, tool: str, code: str | None, message: str) -> str:
    if tool == "cmake" and code == "message":
        message = "<user message>"  # message(FATAL_ERROR ...): the text is the project's own
    else:
        message = _USER_TEXT.sub(lambda m: f"{m.group(1)} <user message>", message)
    basis = "|".join(
        (
            SIGNATURE_VERSION,
            tool,
            severity.value,
            _code_family(tool, code),
            normalize_for_signature(message),
        )
    )
    return f"{SIGNATURE_VERSION}:{hashlib.sha256(basis.encode()).hexdigest()[:20]}"


# -- the incremental parser ------------------------------------------------------------------


def _norm_file(path: str, root: str | None) -> str:
    path = path.strip()
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            path = rel
    return os.path.normpath(path)


def _split_option(message: str) -> tuple[str, str | None]:
    m = _OPTION.search(message)
    if m is None:
        return message, None
    return message[: m.start()], m.group("opt")


@dataclass
class _Pending:
    diag: ParsedDiagnostic
    notes: list[ParsedDiagnostic] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    """CMake: the indented lines of the message."""
    backtrace: list[str] = field(default_factory=list)


DiagnosticSink = Callable[[ParsedDiagnostic], Awaitable[None]]
"""Receives each finished diagnostic as soon as it is parsed."""


@dataclass
class DiagnosticCollector:
    """Keeps every diagnostic of one command and hands each on to ``on_diagnostic`` at once."""

    on_diagnostic: DiagnosticSink | None = None
    diagnostics: list[ParsedDiagnostic] = field(default_factory=list)

    async def deliver(self, found: Iterable[ParsedDiagnostic]) -> None:
        for d in found:
            self.diagnostics.append(d)
            if self.on_diagnostic is not None:
                await self.on_diagnostic(d)


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
        """Parse the complete lines of ``chunk``; return the diagnostics finished by them."""
        self._buffer += chunk
        if "\n" not in self._buffer:
            return []
        *lines, self._buffer = self._buffer.split("\n")
        out: list[ParsedDiagnostic] = []
        for line in lines:
            out.extend(self._line(line))
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
            parsed = _parse_json_line(stripped, self._root)
            if parsed is not None:
                return [*self._flush(), *parsed]
        m = _HEADER.match(line)
        if m is not None:
            return self._header(
                m.group("sev"),
                m.group("msg"),
                _norm_file(m.group("file"), self._root),
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
                _make(DiagnosticSeverity.ERROR, msg, None, None, None, None, "linker", False)
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
        severity = _SEVERITY[sev]
        message, code = _split_option(msg)
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
            _make(severity, message, file, line, col, code, "compiler", sev == "fatal error")
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
            name = _norm_file(name, self._root)
        self._pending = self._new(
            _make(
                DiagnosticSeverity.ERROR,
                message,
                _norm_file(name, self._root),
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
            _make(
                _SEVERITY[m.group("sev")],
                m.group("rest") or "",
                _norm_file(file, self._root) if file else None,
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
        severity = _SEVERITY[sev]
        summary = "ld returned" in msg or "linker command failed" in msg
        if (summary or severity == DiagnosticSeverity.NOTE) and self._pending is not None:
            self._pending.notes.append(ParsedDiagnostic(DiagnosticSeverity.NOTE, msg.strip()))
            return []
        if summary:
            return []
        tool = "linker" if base.startswith(("ld", "lld", "collect2")) else "compiler"
        out = self._flush()
        self._pending = self._new(
            _make(severity, msg, None, None, None, None, tool, sev == "fatal error")
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
            semantic_signature=_signature(diag.severity, diag.tool, diag.code, message),
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


def _make(
    severity: DiagnosticSeverity,
    message: str,
    file: str | None,
    line: int | None,
    column: int | None,
    code: str | None,
    tool: str,
    fatal: bool,
) -> ParsedDiagnostic:
    return ParsedDiagnostic(severity, message.strip(), file, line, column, code, tool, fatal)


# -- structured forms ------------------------------------------------------------------------


def _parse_json_line(text: str, root: str | None) -> list[ParsedDiagnostic] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    try:
        if isinstance(data, dict) and "runs" in data:
            return list(_from_sarif(data, root))
        if isinstance(data, list) and all(isinstance(x, dict) and "kind" in x for x in data):
            return list(_from_gcc_json(data, root))
    except (AttributeError, TypeError, ValueError, KeyError):
        # output a build printed is not trusted: a JSON line of another shape is just text
        return None
    return None


def _gcc_location(
    item: dict[str, Any], root: str | None
) -> tuple[str | None, int | None, int | None]:
    for loc in item.get("locations") or []:
        caret = loc.get("caret") or {}
        if "file" in caret:
            return _norm_file(str(caret["file"]), root), caret.get("line"), caret.get("column")
    return None, None, None


def _from_gcc_json(items: list[dict[str, Any]], root: str | None) -> Iterator[ParsedDiagnostic]:
    flat: list[dict[str, Any]] = []

    def walk(item: dict[str, Any]) -> None:
        flat.append(item)
        for child in item.get("children") or []:
            walk(child)

    for item in items:
        walk(item)
    current: ParsedDiagnostic | None = None
    notes: list[ParsedDiagnostic] = []
    for item in flat:
        kind = str(item.get("kind", "error"))
        severity = _SEVERITY.get(kind, DiagnosticSeverity.ERROR)
        file, line, col = _gcc_location(item, root)
        message = str(item.get("message", "")).strip()
        code = item.get("option")
        if severity == DiagnosticSeverity.NOTE and current is not None:
            notes.append(ParsedDiagnostic(severity, message, file, line, col, code))
            continue
        if current is not None:
            yield _finish(current, notes)
        notes = []
        current = _make(severity, message, file, line, col, code, "compiler", kind == "fatal error")
    if current is not None:
        yield _finish(current, notes)


def _finish(diag: ParsedDiagnostic, notes: list[ParsedDiagnostic]) -> ParsedDiagnostic:
    return replace(
        diag,
        notes=tuple(notes),
        semantic_signature=_signature(diag.severity, diag.tool, diag.code, diag.message),
    )


def _from_sarif(log: dict[str, Any], root: str | None) -> Iterator[ParsedDiagnostic]:
    for run in log.get("runs") or []:
        rules = {
            str(r.get("id")): r
            for r in ((run.get("tool") or {}).get("driver") or {}).get("rules") or []
        }
        for result in run.get("results") or []:
            level = str(result.get("level", "warning"))
            severity = _SARIF_LEVEL.get(level, DiagnosticSeverity.WARNING)
            text = str((result.get("message") or {}).get("text", "")).strip()
            message, code = _split_option(text)
            rule = result.get("ruleId")
            if code is None and rule and str(rule).startswith("-"):
                code = str(rule)
            elif code is None and rule in rules and str(rule).startswith("-"):
                code = str(rule)
            file, line, col = _sarif_location(result.get("locations") or [], root)
            notes = []
            for rel in result.get("relatedLocations") or []:
                nfile, nline, ncol = _sarif_location([rel], root)
                ntext = str((rel.get("message") or {}).get("text", "")).strip()
                notes.append(ParsedDiagnostic(DiagnosticSeverity.NOTE, ntext, nfile, nline, ncol))
            diag = _make(severity, message, file, line, col, code, "compiler", False)
            yield _finish(diag, notes)


def _sarif_location(
    locations: list[dict[str, Any]], root: str | None
) -> tuple[str | None, int | None, int | None]:
    for loc in locations:
        phys = loc.get("physicalLocation") or {}
        uri = str((phys.get("artifactLocation") or {}).get("uri", ""))
        region = phys.get("region") or {}
        if uri:
            path = uri.removeprefix("file://")
            return _norm_file(path, root), region.get("startLine"), region.get("startColumn")
    return None, None, None


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
            except ValueError:
                log = None
            if isinstance(log, dict):
                try:
                    return list(
                        _from_sarif(log, os.path.realpath(self.root) if self.root else None)
                    )
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
        return _signature(
            diagnostic.severity, diagnostic.tool or "compiler", diagnostic.code, diagnostic.message
        )
