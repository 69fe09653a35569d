"""``air doctor [--fix] [--bundle FILE] [--json]``: wires the DoctorService (SDD §16.1, §17).

Owns: the list of checks air's capabilities need (built here: they reach the sandbox, run records
and workspaces, which ``air.doctor`` may not import), ``RunRecordsCheck`` (records of dead air
processes; ``--fix`` reaps them), ``ArtifactsCheck`` (artifact files no row records),
the fix gate over the path classifier (IMPL-DOC-1), the printed report (findings as exact text,
``shown``), the exit code (1 on a warning or blocking issue) and ``setup_logging``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.doctor.service import DoctorCheck, DoctorReport, Fix, Problem

__all__ = ["FIXABLE_CATEGORIES", "run_doctor", "setup_logging"]

FIXABLE_CATEGORIES = frozenset({"air_internal"})
"""The only path category a doctor repair may write: air's own state under ``.air``."""


def setup_logging() -> list[str]:
    """Attach ``air.log`` and ``air.developer.log`` (SDD §16.2) with a SecretRedactor that
    knows the secret-looking environment variables. Never fails a command."""
    from air.air_home import home_is_relative
    from air.doctor.logs import configure_logging
    from air.security.redact import SecretRedactor

    if home_is_relative():
        return []  # ~/.air/logs would be made at / or where air was started
    redactor = SecretRedactor()
    redactor.register_environment(os.environ)
    try:
        return configure_logging(redactor)
    except OSError:
        return []


class RunRecordsCheck:
    """Worker run records still marked running whose air process is provably gone."""

    name = "run_records"
    reads_state = True

    def __init__(self, project_root: str) -> None:
        self.root = os.path.join(project_root, ".air", "local", "state", "runs")
        self.facts: dict[str, Any] = {}

    async def run(self) -> list[Problem]:
        from air.doctor.service import Fix, Problem, issue
        from air.supervision.runs import RunRecordStore, owner_alive, reap_orphans

        records = RunRecordStore(self.root).list()
        stale = [
            r
            for r in records
            if r.get("state") == "running" and owner_alive(self.root, r) is not True
        ]
        self.facts = {"records": len(records), "stale": len(stale)}
        root = self.root

        async def reap() -> str:
            from air.remote.recovery import sweep_records

            reaped = await reap_orphans(root, remote=sweep_records)
            return f"marked {len(reaped)} run record(s) terminal: " + ", ".join(
                f"{r.agent_id} ({r.state})" for r in reaped
            )

        problems = []
        for rec in stale:
            owner = rec.get("owner")
            owner = owner if isinstance(owner, dict) else {}
            problems.append(
                Problem(
                    issue(
                        self.name,
                        "warning",
                        f"run record {rec.get('agent_id')} (task {rec.get('task_id')}, worker pid "
                        f"{rec.get('pid')}) is marked running but its air process "
                        f"(pid {owner.get('pid', '?')}) is gone",
                        "Run `air doctor --fix` (or `air resume`): the record is closed and any "
                        "worker it left behind is stopped.",
                        fix="reap the orphaned run",
                    ),
                    Fix("reap orphaned run records", (root,), reap),
                )
            )
        # one reap handles every stale record: keep one fix
        return problems[:1] + [Problem(p.issue) for p in problems[1:]]

    def found(self) -> str:
        return (
            f"{self.facts.get('records', 0)} worker run record(s), "
            f"{self.facts.get('stale', 0)} left running by a dead air process"
        )


class ArtifactsCheck:
    """Files in a session's artifact directory that its ``artifacts`` table does not know
    (SDD §16.3 step 5); ``--fix`` runs ``recover_orphan_artifacts``: a well-named file is
    registered, anything else moved to ``<session>/quarantine/``, stale temp files removed."""

    name = "artifacts"
    reads_state = True

    def __init__(self, project_root: str, project_id: str) -> None:
        self.project_root = project_root
        self.project_id = project_id
        self.sessions = os.path.join(project_root, ".air", "local", "sessions")
        self.facts: dict[str, Any] = {}
        self.scanned = 0
        """Session artifact directories the last run compared with their tables."""

    def found(self) -> str:
        stray = sum(len(v) for v in self.facts.values())
        return f"{self.scanned} session artifact director(ies); {stray} unrecorded file(s)"

    async def run(self) -> list[Problem]:
        import trio

        return await trio.to_thread.run_sync(self._scan)

    def _known(self, db_path: str, root: str) -> set[str] | None:
        """The artifact files the session recorded, where they are now (``artifact_file``)."""
        import sqlite3
        from pathlib import Path

        from air.artifacts.names import artifact_file

        try:
            conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
            try:
                rows = conn.execute("SELECT path FROM artifacts")
                return {str(artifact_file(str(r[0]), Path(root))) for r in rows}
            finally:
                conn.close()
        except sqlite3.Error:
            return None  # the database check reports it

    def _scan(self) -> list[Problem]:
        from air.doctor.database_check import session_lock_held
        from air.doctor.service import Fix, Problem, issue

        problems: list[Problem] = []
        try:
            sids = sorted(os.listdir(self.sessions))
        except OSError:
            return problems
        for sid in sids:
            root = os.path.join(self.sessions, sid, "artifacts")
            db_path = os.path.join(self.sessions, sid, "session.db")
            if not os.path.isdir(root) or session_lock_held(self.project_root, sid):
                continue
            known = self._known(db_path, root) if os.path.isfile(db_path) else None
            if known is None:
                continue
            self.scanned += 1
            stray = [
                n
                for n in sorted(os.listdir(root))
                if os.path.isfile(os.path.join(root, n)) and os.path.join(root, n) not in known
            ]
            if not stray:
                continue
            self.facts[sid] = stray
            problems.append(
                Problem(
                    issue(
                        f"{self.name}.{sid}",
                        "warning",
                        f"{len(stray)} file(s) in {root} are not recorded artifacts: "
                        + ", ".join(stray[:5]),
                        "Run `air doctor --fix`: well-named files are registered, others moved "
                        f"to {os.path.join(self.sessions, sid, 'quarantine')}.",
                        fix="register or quarantine them",
                    ),
                    Fix(
                        f"recover the artifacts of session {sid}",
                        (os.path.join(self.sessions, sid),),
                        self._recover(sid, db_path, root),
                    ),
                )
            )
        return problems

    def _recover(self, sid: str, db_path: str, root: str) -> Any:
        async def recover() -> str:
            import trio

            return await trio.to_thread.run_sync(self._recover_sync, sid, db_path, root)

        return recover

    def _recover_sync(self, sid: str, db_path: str, root: str) -> str:
        from air.artifacts.store import ArtifactStore, recover_orphan_artifacts
        from air.events.store import EventStore
        from air.store.session_db import open_session_database

        db = open_session_database(db_path, must_exist=True)
        try:
            store = ArtifactStore(
                EventStore(db), project_id=self.project_id, session_id=sid, artifact_root=root
            )
            done = recover_orphan_artifacts(store)
        finally:
            db.close()
        return (
            f"registered {len(done.registered)}, quarantined {len(done.quarantined)}, "
            f"removed {len(done.removed_temp)} temporary file(s)"
        )


def build_checks(project_root: str | None, project_id: str | None = None) -> list[DoctorCheck]:
    """Every capability air uses, in the order they are checked."""
    from air.cli.doctor_config import command_limits, load_configuration
    from air.cli.doctor_mcp import mcp_checks
    from air.cli.doctor_owner import TrackedStateCheck
    from air.cli.doctor_views import StoredViewsCheck
    from air.cli.doctor_worktrees import WorktreeCheck
    from air.cli.prepare import load_models_checked
    from air.doctor.checks import (
        NotApplicable,
        ProbeCheck,
        ToolCheck,
        is_cpp_project,
        program_version,
        search_paths,
    )
    from air.doctor.database_check import DatabaseCheck
    from air.doctor.provider_check import ProviderCheck
    from air.tools.sandbox_check import check_sandbox_available

    checks: list[DoctorCheck] = [
        ToolCheck(
            "git",
            "git",
            severity="warning",
            why="worktree isolation, merges and backups need it",
            user_action="Install git (apt-get install git) and put it on PATH.",
        ),
        ProbeCheck(
            "sandbox",
            check_sandbox_available,
            severity="blocking",
            describe=lambda bwrap: (
                f"{program_version(str(bwrap))} ({bwrap}): a sandbox with "
                "its own user namespace, no network and no capabilities started"
            ),
        ),
        ToolCheck(
            "sandbox.network",
            "slirp4netns",
            severity="warning",
            why="a command granted the network runs in a network namespace it connects, which "
            "reaches neither the host's 127.0.0.1 nor a cloud's metadata service "
            "(169.254.0.0/16, 100.100.100.200)",
            user_action="Install slirp4netns (apt-get install slirp4netns).",
        ),
        ProbeCheck("search_paths", search_paths, severity="warning"),
        ToolCheck(
            "tmux",
            "tmux",
            severity="info",
            why="optional: the console's terminal tests and long sessions",
            user_action="Install tmux if you want to keep sessions in a terminal multiplexer.",
            version_args=("-V",),
        ),
    ]
    if project_root is not None and is_cpp_project(project_root):
        cpp = [
            ("cpp.compiler", ("g++", "clang++", "c++"), "blocking", "builds need a C++ compiler"),
            ("cpp.cmake", "cmake", "warning", "CMake projects are configured with it"),
            ("cpp.build_tool", ("ninja", "make"), "warning", "CMake generates Ninja or Make files"),
            ("cpp.cppcheck", "cppcheck", "warning", "static analysis of changes"),
            ("cpp.clangd", "clangd", "info", "symbol queries (optional)"),
        ]
        for name, program, severity, why in cpp:
            checks.append(
                ToolCheck(
                    name,
                    program,
                    severity=severity,  # type: ignore[arg-type]
                    why=why,
                    user_action=f"Install {program if isinstance(program, str) else program[0]} "
                    "with your system's package manager.",
                )
            )
    else:
        checks.append(
            NotApplicable(
                "cpp",
                "the C++ tools (compiler, cmake, ninja/make, cppcheck, clangd) are checked in a "
                "C++ project only (CMakeLists.txt, meson.build, or a Makefile beside C/C++ "
                "sources)",
            )
        )
    from air.llm.lifecycle import retired_refusal

    checks.append(
        ProviderCheck(
            lambda: load_models_checked(project_root), os.environ, retired=retired_refusal
        )
    )
    checks.append(ProbeCheck("config", lambda: load_configuration(project_root)))
    checks.append(
        ProbeCheck("sandbox.limits", lambda: command_limits(project_root), severity="warning")
    )
    checks += mcp_checks(project_root)
    if project_root is not None:
        checks += [
            TrackedStateCheck(project_root),  # first: the checks after it read that state
            RunRecordsCheck(project_root),
            WorktreeCheck(project_root),
            DatabaseCheck(project_root),
            StoredViewsCheck(project_root),
        ]
        if project_id is not None:
            checks.append(ArtifactsCheck(project_root, project_id))
    return checks


def make_gate(project_root: str | None) -> Any:
    """The fix gate: each path a repair writes is classified by the PermissionEngine's
    PathClassifier; only air's own state (``air_internal``) may be written — never credentials,
    system files, the user's sources or anything outside the project."""
    from air.security.paths import PathClassifier

    classifier = PathClassifier()

    def authorize(fix: Fix) -> str | None:
        if project_root is None:
            return "no project"
        for path in fix.writes:
            got = classifier.classify(path, project_root, for_write=True)
            if got.category.value not in FIXABLE_CATEGORIES:
                return f"refused to write {path} ({got.category.value}: {got.reason})"
        return None

    return authorize


def _print(report: DoctorReport, out: Any) -> None:
    from air.contracts.display import shown  # findings quote project files and hosts' output

    marks = {"info": "info", "warning": "WARN", "blocking": "FAIL"}
    results = {"ok": "ok", "skipped": "skip", **marks}
    width = max((len(c.check) for c in report.checks), default=0)
    out.write(f"air doctor: {len(report.checks)} check(s) made\n")
    for made in report.checks:
        out.write(f"  {results[made.result]:<4}  {made.check:<{width}}  {shown(made.found)}\n")
    for found in report.issues:
        out.write(f"{marks[found.severity]:<4}  {found.check}: {shown(found.message)}\n")
        if found.user_action:
            out.write(f"      what to do: {shown(found.user_action)}\n")
    for fix in report.fixes:
        out.write(f"{fix.status:<7} {fix.check}: {shown(fix.detail)}\n")
    if report.facts.get("skipped"):
        out.write("the other checks were skipped: fix the bootstrap problem first\n")
    problems = len(report.problems)
    fixed = sum(f.status == "fixed" for f in report.fixes)
    if not problems:
        out.write(f"air doctor: no problems found ({len(report.checks)} checks, listed above)\n")
    elif report.fixes:
        again = "run `air doctor` again to see what is left"
        out.write(f"air doctor: {problems} problem(s) found, {fixed} repair(s) done; {again}\n")
    else:
        out.write(f"air doctor: {problems} problem(s) found\n")


def run_doctor(args: dict[str, Any]) -> int:
    import trio

    from air import __version__
    from air.cli.doctor_config import locate_project
    from air.contracts.doctor_report import DoctorMode, DoctorRunInput
    from air.contracts.error import AirException, CliExit
    from air.doctor.service import DoctorService, issue

    start = os.path.abspath(args.get("--project") or os.getcwd())
    if args.get("--project") and not os.path.isdir(start):
        raise AirException.of(
            kind="not_found",
            message=f"no directory {start}",
            user_action="Pass --project PATH of an air project (see `air init`).",
        )
    bundle = args.get("--bundle")
    where = os.path.dirname(os.path.abspath(bundle)) if bundle else None
    if where is not None and not os.path.isdir(where):  # said before the checks run
        raise AirException.of(
            kind="not_found",
            message=f"--bundle {bundle}: no directory {where} to write it in",
            user_action="Pass a file in an existing directory, e.g. --bundle air-bundle.tar.gz.",
        )
    project, unreadable = locate_project(start)
    root = project.project_root if project is not None else None
    pid = project.project_id if project is not None else None
    mode = DoctorMode.FIX if args.get("--fix") else DoctorMode.READ_ONLY
    if args.get("--host"):
        from air.cli.doctor_host import run_host_doctor

        checks = run_host_doctor(args, root)
    else:
        checks = build_checks(root, pid)
    service = DoctorService(root, checks, authorize=make_gate(root))
    report = trio.run(service.run, DoctorRunInput(mode=mode))
    if unreadable is not None:
        error = unreadable.error
        report.issues.append(issue("project", "blocking", error.message, error.user_action))
    if root is None:
        report.facts["project"] = f"no air project at or above {start}"
    if bundle:
        from air.doctor.bundle import write_bundle
        from air.security.redact import SecretRedactor

        names = write_bundle(
            bundle,
            report,
            redactor=SecretRedactor(),
            project_root=root,
            environ=os.environ,
            air_version=__version__,
        )
        report.facts["bundle"] = {"path": os.path.abspath(bundle), "members": names}
    if args.get("--json"):
        sys.stdout.write(json.dumps(report.to_json(), default=str) + "\n")
    else:
        _print(report, sys.stdout)
        if bundle:
            print(f"bundle written: {os.path.abspath(bundle)} (local only, secrets redacted)")
    return CliExit.OK if not report.problems else CliExit.FAILED
