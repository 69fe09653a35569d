"""The doctor's generic checks: tools on PATH, a probe given as a callable, and a check that
does not apply here.

Owns ``ToolCheck`` (a program on PATH and its version: ``program_version``), ``ProbeCheck`` (a
callable that raises ``AirException`` when the capability is missing), ``NotApplicable`` (listed
with why it was left out), ``is_cpp_project`` and ``search_paths`` (relative ``PATH``,
``PYTHONPATH``... entries in the user's environment, IMPL-PATH-1). Each check's ``found()`` says
what it saw (the version, what it counted), for the report's list of checks made. The provider
and database checks have modules of their own (``provider_check``, ``database_check``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from air.contracts.error import AirException
from air.doctor.service import Problem, Severity, issue

__all__ = [
    "NotApplicable",
    "ProbeCheck",
    "ToolCheck",
    "is_cpp_project",
    "program_version",
    "search_paths",
]


def search_paths() -> str:
    """What air's search paths (``PATH``, ``PYTHONPATH``, ``LD_LIBRARY_PATH``, ``TMPDIR``)
    held: only absolute entries, or an ``environment_error`` naming the relative ones (air
    ignores them, other programs do not)."""
    from air.contracts.error import ErrorKind
    from air.search_path import dropped

    found = dropped()
    if not found:
        return "PATH, PYTHONPATH, LD_LIBRARY_PATH and TMPDIR: absolute directories only"
    named = "; ".join(f"{name}={value!r}" for name, value in sorted(found.items()))
    raise AirException.of(
        kind=ErrorKind.ENVIRONMENT_ERROR,
        message=(
            f"relative or empty entries in {named}: each names the directory a program starts "
            "in. air ignores them, but any other program, and Python before air starts (a "
            "project's sitecustomize.py, a library the loader finds there), runs or loads a "
            "cloned project's files from there"
        ),
        user_action=(
            "Remove the empty (leading, trailing or doubled ':') and relative entries from "
            "your shell profile, e.g. export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/opt/lib"
        ),
    )


def is_cpp_project(project_root: str) -> bool:
    """CMakeLists.txt, meson.build or a Makefile next to C/C++ sources at the top level."""
    try:
        names = set(os.listdir(project_root))
    except OSError:
        return False
    if "CMakeLists.txt" in names or "meson.build" in names:
        return True
    sources = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp"}
    has_src = any(os.path.splitext(n)[1] in sources for n in names)
    if not has_src and os.path.isdir(os.path.join(project_root, "src")):
        has_src = any(
            os.path.splitext(n)[1] in sources for n in os.listdir(os.path.join(project_root, "src"))
        )
    return has_src and bool(names & {"Makefile", "makefile", "GNUmakefile"})


class NotApplicable:
    """A check that does not apply here, listed with why (e.g. the C++ tools outside a C++
    project), so the report shows it was considered and not silently left out."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.skipped = why

    async def run(self) -> list[Problem]:
        return []


class ToolCheck:
    """One program air runs: found on PATH, and its version (``facts``)."""

    def __init__(
        self,
        name: str,
        program: str | Sequence[str],
        *,
        severity: Severity,
        why: str,
        user_action: str,
        version_args: Sequence[str] = ("--version",),
    ) -> None:
        self.name = name
        self.programs = [program] if isinstance(program, str) else list(program)
        self.severity: Severity = severity
        self.why = why
        self.user_action = user_action
        self.version_args = list(version_args)
        self.facts: dict[str, Any] = {}

    async def run(self) -> list[Problem]:
        for program in self.programs:
            path = shutil.which(program)
            if path is None:
                continue
            self.facts = {"path": path, "version": program_version(path, self.version_args)}
            return []
        wanted = " or ".join(self.programs)
        self.facts = {"path": None, "looked_for": self.programs}
        return [
            Problem(
                issue(
                    self.name,
                    self.severity,
                    f"{wanted} is not on PATH ({self.why})",
                    self.user_action,
                )
            )
        ]

    def found(self) -> str:
        """The version and path found, or what was looked for."""
        if self.facts.get("path"):
            return f"{self.facts['version']} ({self.facts['path']})"
        return f"{' or '.join(self.programs)} not on PATH"


def program_version(path: str, args: Sequence[str] = ("--version",)) -> str:
    """The first line ``path ARGS`` prints (its version), or why there is none."""
    try:
        done = subprocess.run(
            [path, *args], capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"
    out = (done.stdout or done.stderr).strip().splitlines()
    return out[0][:200] if out else f"exit code {done.returncode}"


class ProbeCheck:
    """A check given as a callable that raises ``AirException`` when the capability is
    missing (e.g. the bubblewrap sandbox probe); the error's message and user_action become
    the issue."""

    def __init__(
        self,
        name: str,
        probe: Callable[[], object],
        *,
        severity: Severity = "blocking",
        describe: Callable[[object], str] = str,
    ) -> None:
        self.name = name
        self.probe = probe
        self.severity: Severity = severity
        self.describe = describe
        """What the report says the probe found, from its result."""
        self.facts: dict[str, Any] = {}

    async def run(self) -> list[Problem]:
        try:
            result = self.probe()
        except AirException as exc:
            self.facts = {"failed": exc.error.message}
            return [Problem(issue(self.name, self.severity, exc.error.message, exc.user_action))]
        self.facts = {"result": str(result), "found": self.describe(result)}
        return []

    def found(self) -> str:
        return str(self.facts.get("found") or self.facts.get("failed", "not run"))
