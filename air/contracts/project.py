"""Projects and sessions: where air keeps its state and how a session is opened.

Owns: ``ProjectContext``, ``ProjectInitOptions``, ``SessionContext``, ``OpenSessionOptions``,
``SessionStatus`` (contracts §8; layout baselines §A.1).
"""

from enum import StrEnum

from air.contracts.ids import Contract, ProjectID, SessionID

__all__ = [
    "PROJECT_SCHEMA_VERSION",
    "OpenSessionOptions",
    "ProjectContext",
    "ProjectInitOptions",
    "SessionContext",
    "SessionStatus",
]

PROJECT_SCHEMA_VERSION = 1


class ProjectContext(Contract):
    project_id: ProjectID
    project_root: str
    shared_root: str
    """``<root>/.air/shared`` (git-shareable)."""
    local_root: str
    """``<root>/.air/local`` (gitignored)."""
    name: str
    schema_version: int = PROJECT_SCHEMA_VERSION


class ProjectInitOptions(Contract):
    name: str | None = None
    default_rules: bool = True
    update_gitignore: bool = True


class SessionStatus(StrEnum):
    ACTIVE = "active"
    CLOSED = "closed"
    ARCHIVED = "archived"
    DELETED = "deleted"


class OpenSessionOptions(Contract):
    session_id: SessionID | None = None
    title: str | None = None
    model_provider_id: str | None = None
    model_id: str | None = None
    mode: str = "interactive"
    """``interactive`` or ``headless``."""
    host: str | None = None
    """The run's ``--host NAME``, recorded in ``session.created`` (IMPL-REMOTE-6)."""
    isolation: str | None = None
    """The run's ``--isolation``, recorded unless ``auto``; ``air resume`` keeps it, as the
    three below (IMPL-RESUME-2)."""
    permission_mode: str | None = None
    """The run's ``--permission-mode``, recorded unless ``default``."""
    branch: str | None = None
    """The run's ``--branch NAME``."""
    review: bool = False
    """The run's ``--review``."""


class SessionContext(Contract):
    session_id: SessionID
    project_id: ProjectID
    project_root: str
    db_path: str
    artifact_root: str
    model_provider_id: str | None = None
    model_id: str | None = None
