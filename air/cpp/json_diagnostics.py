"""The structured forms of compiler output: gcc ``-fdiagnostics-format=json`` and SARIF 2.1.0.

Owns reading them into ``ParsedDiagnostic`` values by the rules of the text parser: every error
or warning one diagnostic in output order (a nested gcc error flattened into its own), notes
attached to the diagnostic before them. ``parse_json_line`` takes one line a build printed
(gcc JSON: one array per translation unit; SARIF: one document) and returns None for JSON of
another shape, which is then just text; ``from_sarif`` reads a whole SARIF log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from air.contracts.tool import DiagnosticSeverity
from air.cpp.parsed_diagnostic import (
    SEVERITY,
    ParsedDiagnostic,
    new_diagnostic,
    norm_file,
    position,
    split_option,
)
from air.cpp.signatures import make_signature

__all__ = ["finish", "from_gcc_json", "from_sarif", "parse_json_line"]

_SARIF_LEVEL = {
    "error": DiagnosticSeverity.ERROR,
    "warning": DiagnosticSeverity.WARNING,
    "note": DiagnosticSeverity.NOTE,
    "none": DiagnosticSeverity.NOTE,
}


def parse_json_line(text: str, root: str | None) -> list[ParsedDiagnostic] | None:
    """The diagnostics of one printed gcc JSON or SARIF line; None when it is neither."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # a line a build printed: [[[... 3,000 deep
        return None
    try:
        if isinstance(data, dict) and "runs" in data:
            return list(from_sarif(data, root))
        if isinstance(data, list) and all(isinstance(x, dict) and "kind" in x for x in data):
            return list(from_gcc_json(data, root))
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
            file = norm_file(str(caret["file"]), root)
            return file, position(caret.get("line")), position(caret.get("column"))
    return None, None, None


def from_gcc_json(items: list[dict[str, Any]], root: str | None) -> Iterator[ParsedDiagnostic]:
    """The diagnostics of one gcc JSON array (children flattened, notes attached)."""
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
        severity = SEVERITY.get(kind, DiagnosticSeverity.ERROR)
        file, line, col = _gcc_location(item, root)
        message = str(item.get("message", "")).strip()
        code = item.get("option")
        if severity == DiagnosticSeverity.NOTE and current is not None:
            notes.append(ParsedDiagnostic(severity, message, file, line, col, code))
            continue
        if current is not None:
            yield finish(current, notes)
        notes = []
        current = new_diagnostic(
            severity, message, file, line, col, code, "compiler", kind == "fatal error"
        )
    if current is not None:
        yield finish(current, notes)


def finish(diag: ParsedDiagnostic, notes: list[ParsedDiagnostic]) -> ParsedDiagnostic:
    """``diag`` with its notes and its semantic signature."""
    return replace(
        diag,
        notes=tuple(notes),
        semantic_signature=make_signature(diag.severity, diag.tool, diag.code, diag.message),
    )


def from_sarif(log: dict[str, Any], root: str | None) -> Iterator[ParsedDiagnostic]:
    """The results of every run of a SARIF log (related locations as notes)."""
    for run in log.get("runs") or []:
        rules = {
            str(r.get("id")): r
            for r in ((run.get("tool") or {}).get("driver") or {}).get("rules") or []
        }
        for result in run.get("results") or []:
            level = str(result.get("level", "warning"))
            severity = _SARIF_LEVEL.get(level, DiagnosticSeverity.WARNING)
            text = str((result.get("message") or {}).get("text", "")).strip()
            message, code = split_option(text)
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
            diag = new_diagnostic(severity, message, file, line, col, code, "compiler", False)
            yield finish(diag, notes)


def _sarif_location(
    locations: list[dict[str, Any]], root: str | None
) -> tuple[str | None, int | None, int | None]:
    for loc in locations:
        phys = loc.get("physicalLocation") or {}
        uri = str((phys.get("artifactLocation") or {}).get("uri", ""))
        region = phys.get("region") or {}
        if uri:
            path = uri.removeprefix("file://")
            line, column = position(region.get("startLine")), position(region.get("startColumn"))
            return norm_file(path, root), line, column
    return None, None, None
