"""The one error tree of air: AirError (the contract), its kinds, and the exception that carries it.

Owns: ``ErrorKind``, ``ErrorSeverity``, ``Retryability``, the ``AirError`` record (SDD §18.1),
``make_air_error`` and ``AirException``. A failure that crosses a boundary is translated into
an ``AirError`` here; bad user input always carries a ``user_action``.

Also owns the one table of exit codes (IMPL-SPINE-3): ``CliExit`` (the ``air`` command) and
``WorkerExit`` (a worker process, baselines §A.4), and the rule that maps an error onto the
command's code (``exit_code_for``: bad input 2, anything else 1).
"""

import errno
import functools
import hashlib
import re
from enum import IntEnum, StrEnum
from typing import Any, Self

from air.contracts.ids import UUID, Contract, JsonObject, new_uuid
from air.contracts.utf8 import utf8_safe

__all__ = [
    "BAD_INPUT_KINDS",
    "AirError",
    "AirException",
    "CliExit",
    "ErrorKind",
    "ErrorSeverity",
    "Retryability",
    "WorkerExit",
    "exit_code_for",
    "first_air_exception",
    "is_bad_input",
    "machine_failure",
    "make_air_error",
    "normalize_message",
    "semantic_signature_for",
]


class ErrorKind(StrEnum):
    """Closed set of failure kinds (IMPL, baselines §A.22 gap 3; see docs/decisions.md)."""

    SYSTEM_ERROR = "system_error"
    """A programmer or infrastructure error: unknown event type, projection failure, bad enum."""
    TOOL_ERROR = "tool_error"
    POLICY_ERROR = "policy_error"
    PERMISSION_DENIED = "permission_denied"
    VALIDATION_ERROR = "validation_error"
    """Bad input from a user, a file or a model: an invalid payload, argument or batch entry."""
    CONFIG_ERROR = "config_error"
    STORAGE_ERROR = "storage_error"
    SCHEMA_ERROR = "schema_error"
    """A database written by a newer air, or a schema this code cannot open."""
    CORRUPT_DATABASE = "corrupt_database"
    NOT_FOUND = "not_found"
    PROTOCOL_ERROR = "protocol_error"
    WORKER_CRASHED = "worker_crashed"
    WORKER_STALLED = "worker_stalled"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    BUDGET_EXCEEDED = "budget_exceeded"
    PROVIDER_ERROR = "provider_error"
    RATE_LIMITED = "rate_limited"
    AUTH_ERROR = "auth_error"
    CONTEXT_OVERFLOW = "context_overflow"
    VERIFICATION_FAILED = "verification_failed"
    WORKSPACE_ERROR = "workspace_error"
    MERGE_CONFLICT = "merge_conflict"
    ENVIRONMENT_ERROR = "environment_error"
    """Something the machine lacks (a tool, a permission, disk): retrying will not help."""
    ARCHITECTURE_MISMATCH = "architecture_mismatch"
    TASK_FAILED = "task_failed"
    WRITE_AREA_VIOLATION = "write_area_violation"
    """A task changed paths outside its write area (or air's own state / instruction files):
    nothing of it is merged, the worktree is kept for inspection."""
    RESOURCE_LIMIT = "resource_limit"
    """A sandboxed command hit its process, memory, file-size or CPU-time bound and was ended."""
    UNTRUSTED_CONFIG = "untrusted_config"
    """Project configuration that could widen what air does has not been trusted by the user."""


class ErrorSeverity(StrEnum):
    """How bad a failure is for the run (IMPL)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    FATAL = "fatal"


class Retryability(StrEnum):
    """Whether repeating the same action may succeed (IMPL)."""

    TRANSIENT = "transient"
    """Retry the same thing, possibly after a delay (rate limits, stalls, dropped connections)."""
    AFTER_CHANGE = "after_change"
    """Retry only after changing one dimension (model, context, command, serialization)."""
    NEVER = "never"
    UNKNOWN = "unknown"


class AirError(Contract):
    """A failure as a value (contracts §3). Embedded in events, results and envelopes."""

    error_id: UUID
    kind: ErrorKind
    severity: ErrorSeverity = ErrorSeverity.ERROR
    message: str
    detail: str | None = None
    retryability: Retryability = Retryability.UNKNOWN
    semantic_signature: str
    """Stable grouping key: kind + hash of the normalised message unless given."""
    cause_ref: Any | None = None
    """An EntityRef-shaped mapping ({entity_type, entity_id}) naming the cause."""
    cause_refs: list[Any] | None = None
    user_action: str | None = None
    """What the person should do next, in one sentence."""
    metadata: JsonObject | None = None


_VOLATILE_SOURCES = (
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I, "<uuid>"),
    (r"\b[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}\b", re.I, "<id>"),  # the text is lower-cased
    (r"0x[0-9a-fA-F]+", 0, "<hex>"),
    (r"\b[0-9a-f]{12,64}\b", 0, "<hash>"),
    (r"\d+", 0, "<n>"),
    (r"\s+", 0, " "),
)


@functools.cache
def _volatile() -> list[tuple[re.Pattern[str], str]]:
    """The compiled ``_VOLATILE_SOURCES``, at the first ``normalize_message`` (not at import:
    most runs build no error before their first model request)."""
    return [(re.compile(p, flags), to) for p, flags, to in _VOLATILE_SOURCES]


def normalize_message(message: str) -> str:
    """Strip the volatile parts of a message (ids, numbers, hashes, spacing) and lower-case it."""
    text = message.strip().lower()
    for pattern, replacement in _volatile():
        text = pattern.sub(replacement, text)
    return text


def semantic_signature_for(kind: ErrorKind | str, message: str) -> str:
    """Return ``<kind>:<sha256(normalised message)[:16]>``, stable across runs and machines."""
    digest = hashlib.sha256(normalize_message(message).encode("utf-8")).hexdigest()[:16]
    return f"{ErrorKind(kind).value}:{digest}"


def make_air_error(
    *,
    kind: ErrorKind | str,
    message: str,
    severity: ErrorSeverity | str = ErrorSeverity.ERROR,
    detail: str | None = None,
    retryability: Retryability | str = Retryability.UNKNOWN,
    semantic_signature: str | None = None,
    cause_ref: Any | None = None,
    cause_refs: list[Any] | None = None,
    user_action: str | None = None,
    metadata: JsonObject | None = None,
) -> AirError:
    """Build an AirError with the SDD §18.1 defaults.

    Args:
        kind: the ErrorKind.
        message: one line for people; the signature is derived from it when not given.

    Returns:
        A frozen AirError with a fresh ``error_id``; its text UTF-8 can hold (a message naming a
        file whose name is no UTF-8 has U+FFFD there: the record must be storable).
    """
    message, detail, user_action = utf8_safe(message), utf8_safe(detail), utf8_safe(user_action)
    metadata = utf8_safe(metadata)
    return AirError(
        error_id=new_uuid(),
        kind=ErrorKind(kind),
        severity=ErrorSeverity(severity),
        message=message,
        detail=detail,
        retryability=Retryability(retryability),
        semantic_signature=semantic_signature or semantic_signature_for(kind, message),
        cause_ref=cause_ref,
        cause_refs=cause_refs,
        user_action=user_action,
        metadata=metadata,
    )


class AirException(Exception):
    """The exception that carries an AirError across a call stack.

    Raise it with ``raise AirException.of(kind=..., message=..., user_action=...)`` or wrap an
    existing record with ``AirException(error)``.
    """

    def __init__(self, error: AirError) -> None:
        super().__init__(error.message)
        self.error = error

    @classmethod
    def of(cls, **kwargs: Any) -> Self:
        """Build the record with ``make_air_error(**kwargs)`` and wrap it."""
        return cls(make_air_error(**kwargs))

    @property
    def kind(self) -> ErrorKind:
        return self.error.kind

    @property
    def user_action(self) -> str | None:
        return self.error.user_action

    def __str__(self) -> str:
        text = f"{self.error.kind.value}: {self.error.message}"
        if self.error.detail:
            text += f" ({self.error.detail})"
        return text


class CliExit(IntEnum):
    """Exit codes of the ``air`` command: the one table (every command uses these)."""

    OK = 0
    """Every task completed (``run``/``resume``); the command did what was asked."""
    FAILED = 1
    """A task failed or is blocked; a check found a problem; a runtime failure."""
    BAD_INPUT = 2
    """Bad input: refused before anything was created."""
    INTERNAL = 3
    """A bug of air's own."""
    E2E_BASE = 32
    """``air e2e``: 32 + the sum of 2**i over the failed examples."""
    CANCELLED = 130
    """Cancelled by a signal (128 + SIGINT; SIGHUP too)."""
    TERMINATED = 143
    """Cancelled by SIGTERM (128 + SIGTERM, the convention of service managers)."""


class WorkerExit(IntEnum):
    """Exit codes of a worker process (``python -m air.roles``; baselines §A.4, SDD §8.1)."""

    OK = 0
    """Protocol-level completion, including a task failed/blocked reported in its result."""
    CRASH = 1
    """An uncaught exception."""
    PROTOCOL = 2
    """A start-up or protocol error."""
    PERMISSION = 3
    PARENT_CANCELLED = 4
    HARD_TIMEOUT = 5
    """Killed by the parent at the task's hard timeout."""


BAD_INPUT_KINDS = frozenset(
    {
        ErrorKind.VALIDATION_ERROR,
        ErrorKind.CONFIG_ERROR,
        ErrorKind.NOT_FOUND,
        ErrorKind.SCHEMA_ERROR,
        ErrorKind.CORRUPT_DATABASE,
        ErrorKind.UNTRUSTED_CONFIG,
    }
)
"""The kinds that are the user's input to fix (exit 2) rather than a failure (exit 1)."""


def is_bad_input(exc: AirException) -> bool:
    """Whether an AirException is the user's input to fix (exit 2) rather than a failure."""
    return exc.kind in BAD_INPUT_KINDS


def exit_code_for(exc: AirException) -> CliExit:
    """The ``air`` exit code of a run that ended with ``exc``: 2 for bad input, else 1."""
    return CliExit.BAD_INPUT if is_bad_input(exc) else CliExit.FAILED


def first_air_exception(exc: BaseException) -> AirException | None:
    """The first ``AirException`` in ``exc`` or its (nested) exception groups, else None."""
    if isinstance(exc, AirException):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_air_exception(inner)
            if found is not None:
                return found
    return None


_DISK = {
    errno.ENOSPC: "no space is left on the device",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EIO: "the disk reported an I/O error",
}
_SQLITE_DISK = {13: "no space is left on the device", 10: "the disk reported an I/O error"}
"""SQLite's primary result codes SQLITE_FULL and SQLITE_IOERR (``sqlite_errorcode & 0xff``)."""
_MACHINE = {
    errno.EMFILE: "air has as many files open as it may",
    errno.ENFILE: "the system has as many files open as it may",
    errno.ENOMEM: "the machine is out of memory",
}


def machine_failure(exc: BaseException, path: str | None = None) -> AirException | None:
    """A full, read-only or failing disk (``storage_error``), or no file descriptor or memory
    left (``environment_error``), as what the user fixes (the run stops where it was, its log
    kept; ``air resume`` goes on); None for any other exception. Several tasks meet it at
    once, so it reached the command as a group of raw OSErrors: a traceback. ``path``: the
    file written, when the exception does not name it (SQLite's never do)."""
    code = getattr(exc, "sqlite_errorcode", None)
    number = exc.errno if isinstance(exc, OSError) else None
    if number in _MACHINE:
        import resource

        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        memory = number == errno.ENOMEM
        return AirException.of(
            kind=ErrorKind.ENVIRONMENT_ERROR,
            message=_MACHINE[number]
            + ("" if memory else f" (open files: at most {files}, `ulimit -n`)"),
            user_action=(
                ("Free memory" if memory else "Raise the limit (`ulimit -n 4096`)")
                + " or run fewer workers (--max-workers N), then run the command again; "
                "`air resume` finishes a run it stopped."
            ),
            metadata={"errno": number},
        )
    if isinstance(exc, OSError) and number in _DISK:
        what, where = _DISK[number], exc.filename or path
    elif isinstance(code, int) and code & 0xFF in _SQLITE_DISK:
        what, where = _SQLITE_DISK[code & 0xFF], path
    else:
        return None
    return AirException.of(
        kind=ErrorKind.STORAGE_ERROR,
        message=f"air could not write {where or 'a file'}: {what}",
        user_action=(
            "Free space on (or repair) that file system (`df -h` shows it), then run the "
            "command again; `air resume` finishes a run it stopped."
        ),
        metadata={"errno": number} if number is not None else {"sqlite": code},
    )
