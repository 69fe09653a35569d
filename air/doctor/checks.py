"""The doctor's generic checks: tools on PATH, a probe given as a callable, provider
configuration and reachability, and the integrity of every database of a project.

Owns: ``ToolCheck``, ``ProbeCheck``, ``NotApplicable``, ``ProviderCheck``, ``DatabaseCheck``
(``PRAGMA integrity_check``, schema introspection with sqlite-utils, the FK-off
``referential_check``, and the projection compared with a replay of the log; ``--fix``
rebuilds a session database from its events, keeping the old file in quarantine) and
``quarantine`` (air never deletes what it cannot account for: it moves it to
``.air/local/quarantine/<stamp>/``). Each check's ``found()`` says what it saw (the version,
what it counted), for the report's list of checks made.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

import sqlite_utils
import trio

from air.contracts.error import AirException
from air.contracts.ids import utc_now_iso
from air.contracts.provider import ModelsConfig
from air.doctor.service import Fix, Problem, Severity, issue
from air.doctor.snapshot_check import snapshot_problems

__all__ = [
    "DatabaseCheck",
    "NotApplicable",
    "ProbeCheck",
    "ProviderCheck",
    "ToolCheck",
    "is_cpp_project",
    "program_version",
    "quarantine",
    "quarantine_root",
    "session_lock_held",
]


def quarantine_root(project_root: str) -> str:
    return os.path.join(project_root, ".air", "local", "quarantine")


def quarantine(project_root: str, path: str, stamp: str | None = None) -> str:
    """Move ``path`` (a file or directory under ``.air/local``) into the quarantine, keeping
    its path relative to ``.air/local``; returns where it went."""
    local = os.path.join(os.path.realpath(project_root), ".air", "local")
    real = os.path.realpath(path)
    rel = os.path.relpath(real, local)
    if rel.startswith(".."):
        raise AirException.of(
            kind="validation_error",
            message=f"{path} is not inside {local}",
            user_action="Only air's own files are quarantined; move it yourself.",
        )
    stamp = stamp or utc_now_iso().replace(":", "").replace(".", "")
    target = os.path.join(quarantine_root(project_root), stamp, rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.move(real, target)
    return target


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


def _is_local(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ProviderCheck:
    """Provider configuration: models.yaml loads (``load`` raises ``config_error``), each
    ``auth_ref`` names a set variable (the value is never read into the report), and a local
    ``base_url`` (127.0.0.1, localhost) answers HTTP."""

    name = "providers"

    def __init__(
        self,
        load: Callable[[], ModelsConfig],
        environ: Mapping[str, str],
        *,
        timeout_s: float = 3.0,
    ) -> None:
        self.load = load
        self.environ = environ
        self.timeout_s = timeout_s
        self.facts: dict[str, Any] = {}

    async def run(self) -> list[Problem]:
        try:
            config = self.load()
        except AirException as exc:
            return [Problem(issue(self.name, "blocking", exc.error.message, exc.user_action))]
        problems: list[Problem] = []
        self.facts = {"sources": list(config.sources), "default": config.default, "providers": {}}
        if not config.providers:
            problems.append(
                Problem(
                    issue(
                        self.name,
                        "info",
                        "no model provider is configured",
                        "Set ANTHROPIC_API_KEY or OPENAI_API_KEY (OPENAI_BASE_URL for a local "
                        "server), or write ~/.air/models.yaml (`air init --models` writes a "
                        "template) to run real tasks.",
                    )
                )
            )
        for pid, provider in config.providers.items():
            seen: dict[str, Any] = {"kind": str(provider.kind), "base_url": provider.base_url}
            if provider.auth_ref:
                present = bool(self.environ.get(provider.auth_ref))
                seen["auth_ref"] = provider.auth_ref
                seen["auth_ref_set"] = present
                if not present:
                    problems.append(
                        Problem(
                            issue(
                                f"{self.name}.{pid}",
                                "warning",
                                f"provider {pid}: the variable {provider.auth_ref} is not set",
                                f"Export {provider.auth_ref} with the API key before `air run`.",
                            )
                        )
                    )
            if provider.base_url and _is_local(provider.base_url):
                reached = await self._reach(provider.base_url)
                seen["reachable"] = reached is None
                if reached is not None:
                    problems.append(
                        Problem(
                            issue(
                                f"{self.name}.{pid}",
                                "warning",
                                f"provider {pid}: {provider.base_url} does not answer ({reached})",
                                "Start the local model server, or fix base_url in models.yaml.",
                            )
                        )
                    )
            self.facts["providers"][pid] = seen
        return problems

    def found(self) -> str:
        """The client libraries' versions and each configured provider's state."""
        from importlib.metadata import PackageNotFoundError, version

        libs = []
        for lib in ("anthropic", "httpx"):
            try:
                libs.append(f"{lib} {version(lib)}")
            except PackageNotFoundError:
                libs.append(f"{lib} not installed")
        if "providers" not in self.facts:
            return "the model configuration does not load; " + ", ".join(libs)
        seen = []
        for pid, p in self.facts["providers"].items():
            bits = [p["kind"]]
            if "auth_ref" in p:
                bits.append(f"{p['auth_ref']} {'set' if p['auth_ref_set'] else 'NOT set'}")
            if "reachable" in p:
                bits.append(f"{p['base_url']} {'answers' if p['reachable'] else 'does not answer'}")
            seen.append(f"{pid} ({', '.join(bits)})")
        configured = "; ".join(seen) if seen else "no provider configured"
        return f"{configured}; default {self.facts['default'] or 'none'}; {', '.join(libs)}"

    async def _reach(self, url: str) -> str | None:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, trust_env=False) as client:
                await client.get(url)
        except httpx.HTTPError as exc:
            return type(exc).__name__
        return None


def session_lock_held(project_root: str, session_id: str) -> bool:
    """True when a live air process holds the session's lock (it is running now)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
    path = os.path.join(
        project_root, ".air", "local", "state", "runs", "owners", f"session-{safe}.lock"
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


class DatabaseCheck:
    """Every session database and project knowledge database of the project."""

    name = "databases"

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root
        self.local = os.path.join(project_root, ".air", "local")
        self.facts: dict[str, Any] = {}
        self.counted = (0, 0)
        """Session databases and project databases the last run looked at."""

    def session_dbs(self) -> list[tuple[str, str]]:
        root = os.path.join(self.local, "sessions")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        out = []
        for sid in names:
            path = os.path.join(root, sid, "session.db")
            if os.path.isfile(path):
                out.append((sid, path))
        return out

    async def run(self) -> list[Problem]:
        return await trio.to_thread.run_sync(self.check_all)

    def check_all(self) -> list[Problem]:
        """Every database, synchronously (``run`` calls this in a worker thread)."""
        problems: list[Problem] = []
        sessions = self.session_dbs()
        for sid, path in sessions:
            problems += self._check_session(sid, path)
        project_dbs = 0
        for name in ("debug-records.db", "learned-memory.db"):
            path = os.path.join(self.local, name)
            if os.path.isfile(path):
                project_dbs += 1
                problems += self._check_project_db(name, path)
        self.counted = (len(sessions), project_dbs)
        return problems

    def found(self) -> str:
        sessions, project_dbs = self.counted
        running = sum(f == {"skipped": "running now"} for f in self.facts.values())
        text = (
            f"{sessions} session database(s) and {project_dbs} project database(s): "
            "integrity, schema, references, log replay"
        )
        return text + (f" ({running} running now, not opened)" if running else "")

    def _check_project_db(self, name: str, path: str) -> list[Problem]:
        try:
            facts, result = _introspect(path)
        except sqlite3.DatabaseError as exc:
            result = str(exc)
            facts = {}
        self.facts[name] = facts
        if result == "ok":
            return []
        return [
            Problem(
                issue(
                    f"{self.name}.{name}",
                    "warning",
                    f"{path} fails the integrity check: {result[:300]}",
                    f"Move {path} aside; air starts an empty one (it holds learned hints only).",
                    fix="quarantine the file",
                ),
                Fix(
                    f"quarantine {path}",
                    (path, quarantine_root(self.project_root)),
                    _async(lambda: f"moved to {quarantine(self.project_root, path)}"),
                ),
            )
        ]

    def _check_session(self, sid: str, path: str) -> list[Problem]:
        check = f"{self.name}.session.{sid}"
        if session_lock_held(self.project_root, sid):
            self.facts[sid] = {"skipped": "running now"}
            return []
        rebuild = Fix(
            f"rebuild session {sid} from its event log",
            (os.path.dirname(path), quarantine_root(self.project_root)),
            _async(lambda: rebuild_session_db(self.project_root, path)),
        )
        try:
            facts, result = _introspect(path)
        except sqlite3.DatabaseError as exc:
            facts, result = {}, str(exc)
        self.facts[sid] = facts
        if result != "ok":
            return [
                Problem(
                    issue(
                        check,
                        "blocking",
                        f"session database {path} is corrupt: {result[:300]}",
                        "Run `air doctor --fix`: it keeps the file in .air/local/quarantine and "
                        "rebuilds the session from the events that can still be read.",
                        fix="rebuild from the event log, quarantine the damaged file",
                    ),
                    rebuild,
                )
            ]
        missing = _schema_gaps(facts)
        if missing:
            return [
                Problem(
                    issue(
                        check,
                        "warning",
                        f"session database {path} lacks {', '.join(missing)}",
                        "Run `air doctor --fix` to rebuild it from its event log.",
                        fix="rebuild from the event log",
                    ),
                    rebuild,
                )
            ]
        return self._check_consistency(check, path, rebuild)

    def _check_consistency(self, check: str, path: str, rebuild: Fix) -> list[Problem]:
        from air.events.store import replay_events
        from air.store.integrity import dump_tables
        from air.store.repositories import SessionStore
        from air.store.session_db import open_session_database

        try:
            db = open_session_database(path, must_exist=True)
        except AirException as exc:
            return [Problem(issue(check, "blocking", exc.error.message, exc.user_action), rebuild)]
        try:
            store = SessionStore(db)
            orphans = store.referential_check()
            records = store.events.list_all()
            scratch = open_session_database(":memory:")
            try:
                try:
                    replay_events(records, scratch)
                    replayed = dump_tables(scratch)
                    drift = [t for t, rows in dump_tables(db).items() if rows != replayed[t]]
                except AirException as exc:
                    drift = [f"replay fails ({exc.error.message})"]
            finally:
                scratch.close()
            stale = snapshot_problems(check, path, db, rebuild)
        finally:
            db.close()
        problems = stale
        if not orphans.clean:
            shown = ", ".join(
                f"{v.table}.{v.column}={v.missing_id}" for v in orphans.violations[:5]
            )
            problems.append(
                Problem(
                    issue(
                        f"{check}.references",
                        "warning",
                        f"{len(orphans.violations)} dangling reference(s) in {path}: {shown}",
                        "Run `air doctor --fix` to rebuild the tables from the event log.",
                        fix="rebuild from the event log",
                    ),
                    rebuild,
                )
            )
        if drift:
            problems.append(
                Problem(
                    issue(
                        f"{check}.projection",
                        "warning",
                        f"the tables of {path} differ from a replay of its log: {', '.join(drift)}",
                        "Run `air doctor --fix` to rebuild the tables from the event log.",
                        fix="rebuild from the event log",
                    ),
                    None if orphans.violations else rebuild,
                )
            )
        return problems


def _async(fn: Callable[[], str]) -> Callable[[], Any]:
    async def run() -> str:
        return fn()

    return run


def _introspect(path: str) -> tuple[dict[str, Any], str]:
    """Tables with their row counts and indexes (sqlite-utils) and ``integrity_check``.

    Raises:
        sqlite3.DatabaseError: the file is not a readable database.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        result = "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
        db = sqlite_utils.Database(conn)
        tables = {}
        for name in db.table_names():
            table = db.table(name)
            tables[name] = {"rows": table.count, "indexes": sorted(i.name for i in table.indexes)}
        return {"tables": tables}, result
    finally:
        conn.close()


def _schema_gaps(facts: Mapping[str, Any]) -> list[str]:
    from air.store.schema import SESSION_INDEXES, SESSION_TABLES

    tables = facts.get("tables", {})
    gaps = [f"table {t}" for t in SESSION_TABLES if t not in tables]
    indexes = {i for t in tables.values() for i in t["indexes"]}
    for sql in SESSION_INDEXES:
        words = sql.split()
        name = words[words.index("EXISTS") + 1] if "EXISTS" in words else words[2]
        if name not in indexes:
            gaps.append(f"index {name}")
    return gaps


def _read_events(path: str) -> list[dict[str, Any]] | None:
    """The rows of a (possibly damaged) database's ``events`` table, or None."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY seq")]
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def rebuild_session_db(project_root: str, path: str) -> str:
    """Replay the readable events of ``path`` into a new database put in its place; the old
    file (with its -wal/-shm) goes to quarantine. Returns what was done."""
    from air.events.store import replay_events
    from air.store.session_db import open_session_database

    records = _read_events(path)
    fresh = f"{path}.rebuild"
    for leftover in (fresh, fresh + "-wal", fresh + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    replayed: int | None = None
    if records:
        db = open_session_database(fresh)
        try:
            replayed = replay_events(records, db)
        except AirException:
            replayed = None
        finally:
            db.close()
        if replayed is None:
            for leftover in (fresh, fresh + "-wal", fresh + "-shm"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
    stamp = utc_now_iso().replace(":", "").replace(".", "")
    kept = quarantine(project_root, path, stamp)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            quarantine(project_root, path + suffix, stamp)
    if replayed is None:
        return f"no readable event log; the damaged file is kept at {kept}"
    os.replace(fresh, path)
    return f"rebuilt from {replayed} events; the old file is kept at {kept}"
