"""DoctorService (SDD §16.1): self-bootstrap, then every capability check; ``fix`` repairs.

Owns: ``DoctorService.run`` (bootstrap first — Python, SQLite with WAL, a shell, ``.air``
writable; on failure one blocking issue and nothing else runs), the ``DoctorCheck`` protocol,
``Problem``/``Fix`` (an issue and the repair it may get), ``CheckResult`` (one line per check
made: its result and what it found, e.g. the version — the report lists them all, not only the
problems), the fix gate (every repair names the
paths it writes; ``authorize`` — the PermissionEngine's path classification, wired by the CLI —
refuses any that is not air's own state, IMPL-DOC-1) and the ``doctor.*`` events, recorded in
the project's doctor log ``.air/local/doctor/doctor.db`` (IMPL-DOC-2). The checks themselves are
passed in: the generic ones live in ``air.doctor.checks``, ``provider_check`` and
``database_check``; the ones that need the sandbox, the run records or the workspaces are built
by ``air.cli.doctor``.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from air.air_home import mend_open, open_to_others
from air.contracts.doctor_report import (
    DoctorIssue,
    DoctorMode,
    DoctorRunInput,
    DoctorRunOutput,
    PlatformTier,
)
from air.contracts.error import AirException
from air.contracts.event import EventSource, new_event
from air.contracts.ids import new_uuid, utc_now_iso

__all__ = [
    "DOCTOR_SESSION_ID",
    "CheckResult",
    "DoctorCheck",
    "DoctorReport",
    "DoctorService",
    "Fix",
    "FixOutcome",
    "Problem",
    "doctor_db_path",
    "issue",
]

DOCTOR_SESSION_ID = "doctor"
"""The session id of the doctor log's events (one log per project, not a user session)."""

MIN_PYTHON = (3, 11)

log = logging.getLogger("air.doctor")

Severity = Literal["info", "warning", "blocking"]


def issue(
    check: str, severity: Severity, message: str, user_action: str | None, fix: str | None = None
) -> DoctorIssue:
    """A DoctorIssue; ``fix`` says what ``air doctor --fix`` would do about it."""
    return DoctorIssue(
        check=check, severity=severity, message=message, user_action=user_action, fix_hint=fix
    )


@dataclass(frozen=True)
class Fix:
    """A repair: what it does, every path it writes, moves or deletes, and the action."""

    description: str
    writes: tuple[str, ...]
    apply: Callable[[], Awaitable[str]]
    """Performs the repair; returns one line saying what was done."""


@dataclass(frozen=True)
class Problem:
    issue: DoctorIssue
    fix: Fix | None = None


@dataclass(frozen=True)
class FixOutcome:
    check: str
    status: Literal["fixed", "refused", "failed"]
    detail: str


Outcome = Literal["ok", "info", "warning", "blocking", "skipped"]


@dataclass(frozen=True)
class CheckResult:
    """One check the doctor made: its result and what it found (a version, a count)."""

    check: str
    result: Outcome
    found: str


class DoctorCheck(Protocol):
    """One capability check (SDD ``check_capability``). A check may also have
    ``found() -> str``: one line saying what it saw (the version, what it counted), or
    ``skipped``: why it does not apply here (listed as ``skipped``). A check that reads what
    ``.air/local`` holds has ``reads_state = True``; one that found that state is not air's own
    here sets ``refuses_state`` (why): the later state checks are then not run, and nothing
    is recorded into that state (IMPL-TRUST-3)."""

    @property
    def name(self) -> str: ...

    async def run(self) -> list[Problem]: ...


_RANK = {"ok": 0, "info": 1, "warning": 2, "blocking": 3}


def outcome(check: str, issues: Sequence[DoctorIssue]) -> Outcome:
    """The worst severity among the issues of ``check`` (or of its sub-checks
    ``check.<name>``), ``ok`` when it found none."""
    worst: Outcome = "ok"
    for found in issues:
        if found.check == check or found.check.startswith(check + "."):
            if _RANK[found.severity] > _RANK[worst]:
                worst = found.severity
    return worst


@dataclass
class DoctorReport:
    """``DoctorRunOutput`` plus what ``--fix`` did and what the checks measured."""

    tier: PlatformTier
    mode: DoctorMode
    issues: list[DoctorIssue] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    """Check name → what it saw (versions, table counts), for ``--json`` and the bundle."""
    checks: list[CheckResult] = field(default_factory=list)
    """Every check made (bootstrap first), in order, with its result and what it found."""
    doctor_run_id: str = ""

    @property
    def problems(self) -> list[DoctorIssue]:
        """The issues that need attention (warnings and blocking ones)."""
        return [i for i in self.issues if i.severity != "info"]

    def to_output(self) -> DoctorRunOutput:
        """The contract view (SDD ``DoctorRunOutput``)."""
        return DoctorRunOutput(tier=self.tier, issues=list(self.issues))

    def to_json(self) -> dict[str, Any]:
        return {
            "doctor_run_id": self.doctor_run_id,
            "tier": self.tier.value,
            "mode": self.mode.value,
            "ok": not self.problems,
            "issues": [i.model_dump(mode="json") for i in self.issues],
            "fixes": [f.__dict__ for f in self.fixes],
            "checks": [c.__dict__ for c in self.checks],
            "facts": self.facts,
        }


def doctor_db_path(project_root: str) -> str:
    return os.path.join(project_root, ".air", "local", "doctor", "doctor.db")


def platform_tier() -> PlatformTier:
    if sys.platform.startswith("linux"):
        return PlatformTier.TIER1
    if sys.platform == "darwin":
        return PlatformTier.TIER2
    return PlatformTier.UNSUPPORTED


Authorize = Callable[[Fix], str | None]
"""Returns None when the repair may run, else why not."""


class DoctorService:
    """Run the doctor over one project (or none: then only the machine is checked).

    Args:
        project_root: the project, or None outside any project.
        checks: the capability checks, in the order they run after the bootstrap.
        authorize: the fix gate (see the module docstring).
        home: the home directory whose ``.air`` is checked (default ``~``).
    """

    def __init__(
        self,
        project_root: str | None,
        checks: Sequence[DoctorCheck],
        *,
        authorize: Authorize,
        home: str | None = None,
    ) -> None:
        self.project_root = project_root
        self.checks = list(checks)
        self.authorize = authorize
        self.home = home or os.path.expanduser("~")

    # -- the bootstrap --------------------------------------------------------------------

    def air_dirs(self) -> list[str]:
        """The ``.air`` directories air writes: ``~/.air`` and the project's ``.air/local``."""
        dirs = [os.path.join(self.home, ".air")]
        if self.project_root is not None:
            dirs.append(os.path.join(self.project_root, ".air", "local"))
        return dirs

    def self_bootstrap(self) -> list[DoctorIssue]:
        """SDD ``self_bootstrap``: Python, SQLite with WAL, a shell, ``.air`` writability."""
        found: list[DoctorIssue] = []
        if sys.version_info[:2] < MIN_PYTHON:
            found.append(
                issue(
                    "bootstrap.python",
                    "blocking",
                    f"Python {sys.version.split()[0]} is too old (air needs 3.11 or newer)",
                    "Install Python 3.11+ and reinstall air into it.",
                )
            )
        found += self._check_sqlite()
        shell = shutil.which("sh") or ("/bin/sh" if os.path.exists("/bin/sh") else None)
        ok = False
        if shell is not None:
            try:
                done = subprocess.run(
                    [shell, "-c", "exit 0"], capture_output=True, timeout=30, check=False
                )
                ok = done.returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        if not ok:
            found.append(
                issue(
                    "bootstrap.shell",
                    "blocking",
                    "no working POSIX shell (sh) on PATH",
                    "Put /bin on PATH (air's commands and tools run through sh).",
                )
            )
        for directory in self.air_dirs():
            problem = _writable_problem(directory)
            if problem is not None:
                found.append(
                    issue(
                        "bootstrap.air_writable",
                        "blocking",
                        f"{directory} is not writable: {problem}",
                        f"Make {directory} writable by you (chmod -R u+w, or remount the file "
                        "system read-write); air keeps its sessions and logs there.",
                    )
                )
        opened = open_to_others(os.path.join(self.home, ".air"))
        if opened is not None:
            path, why = opened
            found.append(
                issue(
                    "bootstrap.air_private",
                    "blocking",
                    f"{path}: {why}; every other air command refuses to act on it",
                    f"{mend_open(path)}.",
                )
            )
        return found

    def bootstrap_found(self) -> list[tuple[str, str]]:
        """What the bootstrap looked at, one line per check (its issues give the result)."""
        shell = shutil.which("sh") or "/bin/sh"
        return [
            ("bootstrap.python", f"Python {sys.version.split()[0]} ({sys.executable})"),
            (
                "bootstrap.sqlite",
                f"SQLite {sqlite3.sqlite_version}, a test database in WAL journal mode",
            ),
            ("bootstrap.shell", f"{shell} -c 'exit 0'"),
            ("bootstrap.air_writable", ", ".join(self.air_dirs())),
            ("bootstrap.air_private", f"who can change {self.air_dirs()[0]} and its configuration"),
        ]

    def _check_sqlite(self) -> list[DoctorIssue]:
        try:
            with tempfile.TemporaryDirectory(prefix="air-doctor-") as tmp:
                conn = sqlite3.connect(os.path.join(tmp, "probe.db"))
                try:
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    conn.execute("CREATE TABLE t (x)")
                    conn.execute("INSERT INTO t VALUES (1)")
                    conn.commit()
                finally:
                    conn.close()
        except (sqlite3.Error, OSError) as exc:
            return [
                issue(
                    "bootstrap.sqlite",
                    "blocking",
                    f"SQLite does not work here: {exc}",
                    "Reinstall Python with its sqlite3 module.",
                )
            ]
        if str(mode).lower() != "wal":
            return [
                issue(
                    "bootstrap.sqlite",
                    "blocking",
                    f"SQLite {sqlite3.sqlite_version} cannot use WAL journaling (got {mode!r})",
                    "Use a local file system for the temporary directory and the project.",
                )
            ]
        return []

    # -- the run --------------------------------------------------------------------------

    async def run(self, run_input: DoctorRunInput) -> DoctorReport:
        """Bootstrap, check, and (``mode=fix``) repair what may be repaired.

        Returns:
            The report. In fix mode ``issues`` are those found before repairing; run the
            doctor again to see what is left.
        """
        report = DoctorReport(
            tier=platform_tier(),
            mode=run_input.mode,
            doctor_run_id=f"doc_{new_uuid().replace('-', '')[:12]}",
        )
        report.facts["python"] = sys.version.split()[0]
        report.facts["sqlite"] = sqlite3.sqlite_version
        report.facts["started_at"] = utc_now_iso()
        boot = self.self_bootstrap()
        report.issues += boot
        report.checks += [
            CheckResult(name, outcome(name, boot), found) for name, found in self.bootstrap_found()
        ]
        if any(i.severity == "blocking" for i in boot):
            report.facts["skipped"] = [c.name for c in self.checks]
            report.checks += [
                CheckResult(c.name, "skipped", "not run: the bootstrap failed") for c in self.checks
            ]
            self._record(report)
            return report
        fixes: list[tuple[DoctorIssue, Fix]] = []
        refused: str | None = None
        for check in self.checks:
            if refused is not None and getattr(check, "reads_state", False):
                report.checks.append(CheckResult(check.name, "skipped", f"not run: {refused}"))
                continue
            try:
                problems = await check.run()
            except AirException as exc:
                problems = [
                    Problem(
                        issue(
                            check.name,
                            "warning",
                            f"the check failed: {exc.error.message}",
                            exc.user_action,
                        )
                    )
                ]
            for problem in problems:
                report.issues.append(problem.issue)
                if problem.fix is not None:
                    fixes.append((problem.issue, problem.fix))
            facts = getattr(check, "facts", None)
            if facts:
                report.facts[check.name] = facts
            refused = refused or getattr(check, "refuses_state", None)
            skipped = getattr(check, "skipped", None)
            if skipped:
                report.checks.append(CheckResult(check.name, "skipped", str(skipped)))
                continue
            result = outcome(check.name, [p.issue for p in problems])
            report.checks.append(CheckResult(check.name, result, _found(check)))
        if run_input.mode == DoctorMode.FIX:
            for found, fix in fixes:
                report.fixes.append(await self._apply(found, fix))
        self._record(report, refused)
        return report

    async def _apply(self, found: DoctorIssue, fix: Fix) -> FixOutcome:
        refusal = self.authorize(fix)
        if refusal is not None:
            return FixOutcome(found.check, "refused", f"{fix.description}: {refusal}")
        try:
            done = await fix.apply()
        except (AirException, OSError, sqlite3.Error) as exc:
            text = exc.error.message if isinstance(exc, AirException) else str(exc)
            return FixOutcome(found.check, "failed", f"{fix.description}: {text}")
        return FixOutcome(found.check, "fixed", done)

    # -- events ---------------------------------------------------------------------------

    def _record(self, report: DoctorReport, refused: str | None = None) -> None:
        """Log the run, then append ``doctor.run.started``, one ``doctor.issue.found`` per issue and
        ``doctor.run.completed`` to the doctor log (nothing when ``.air`` is not writable, nor
        when ``refused`` says ``.air/local`` is not air's own here)."""
        for found in report.issues:
            level = logging.INFO if found.severity == "info" else logging.WARNING
            log.log(level, "doctor %s: %s: %s", found.severity, found.check, found.message)
        for fix in report.fixes:
            log.warning("doctor fix %s: %s: %s", fix.status, fix.check, fix.detail)
        log.info("doctor run %s: %d problem(s)", report.doctor_run_id, len(report.problems))
        log.debug("doctor facts: %s", report.facts)
        if self.project_root is None:
            return
        if any(i.check == "bootstrap.air_writable" for i in report.issues):
            report.facts["events"] = "not recorded: .air is not writable"
            return
        if refused is not None:  # never into another's .air/local
            report.facts["events"] = f"not recorded: {refused}"
            return
        from air.events.store import EventStore
        from air.store.session_db import open_session_database

        path = doctor_db_path(self.project_root)
        source = EventSource(kind="system", id="doctor")
        rid = report.doctor_run_id
        events = [
            new_event(
                "doctor.run.started",
                {"doctor_run_id": rid, "checks": [c.name for c in self.checks]},
                session_id=DOCTOR_SESSION_ID,
                source=source,
            )
        ]
        for found in report.issues:
            events.append(
                new_event(
                    "doctor.issue.found",
                    {
                        "doctor_run_id": rid,
                        "check": found.check,
                        "severity": "error" if found.severity == "blocking" else found.severity,
                        "message": found.message,
                        "user_action": found.user_action,
                    },
                    session_id=DOCTOR_SESSION_ID,
                    source=source,
                )
            )
        events.append(
            new_event(
                "doctor.run.completed",
                {
                    "doctor_run_id": rid,
                    "ok": not report.problems,
                    "issue_count": len(report.issues),
                },
                session_id=DOCTOR_SESSION_ID,
                source=source,
            )
        )
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            db = open_session_database(path)
        except (AirException, OSError) as exc:
            report.facts["events"] = f"not recorded: {exc}"
            return
        try:
            EventStore(db).append_many(events)
        finally:
            db.close()
        report.facts["events"] = {"db": path, "count": len(events)}


def _found(check: DoctorCheck) -> str:
    """The check's own line of what it saw, if it has one."""
    found = getattr(check, "found", None)
    return str(found()) if callable(found) else ""


def _writable_problem(directory: str) -> str | None:
    """None when a file can be created (and removed) in ``directory`` (made if missing)."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".air-doctor-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
