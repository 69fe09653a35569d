"""Tasks, their graph and the Scheduler's contracts.

Owns: ``TaskSpec`` and its parts (scope, dependencies, verification, constraints, context
refs), the closed enums of tasks / dependencies / workspaces, and the scheduler symbols merged
here by SDD §3 (``SchedulerState``, ``SchedulerWavePlan``, ``SchedulerRunResult``,
``RetryDecision``, ``WorkspacePlan``, ``WorkspaceRef``, ``MergeResult``), but the three results
(``SchedulerRunResult``, ``RetryDecision``, ``MergeResult``): ``air.contracts.task_results`` owns
them, so a run builds them only once a task ends (IMPL-BOOT-12).
"""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from air.contracts.ids import (
    AgentID,
    Contract,
    ISOTimeString,
    SessionID,
    TaskID,
    WorkspaceID,
    empty_list,
)
from air.contracts.runtime import AgentType

__all__ = [
    "AGENT_TYPE_FOR_TASK",
    "MAX_RETRY_BUDGET",
    "MAX_TIMEOUT_MS",
    "MAX_TURNS",
    "OUTPUT_CONTRACT_FOR_TASK",
    "TASK_ID_PATTERN",
    "TERMINAL_TASK_STATUSES",
    "DependencySource",
    "DependencyType",
    "ModelPolicy",
    "RequestedConstraints",
    "RetryAction",
    "SchedulerState",
    "SchedulerWavePlan",
    "TaskAgent",
    "TaskConstraints",
    "TaskContextMode",
    "TaskContextRefs",
    "TaskDependencySpec",
    "TaskScope",
    "TaskSpec",
    "TaskStatus",
    "TaskType",
    "VerificationPolicy",
    "WavePlanEntry",
    "WorkerOutputContract",
    "WorkspacePlan",
    "WorkspaceRef",
    "WorkspaceStatus",
    "WorkspaceStrategy",
]


class TaskType(StrEnum):
    EXECUTE = "execute"
    REVIEW = "review"
    DEBUG = "debug"
    COMPACT = "compact"
    MINE_EXPERIENCE = "mine_experience"
    DOCS = "docs"


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


TERMINAL_TASK_STATUSES = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.BLOCKED, TaskStatus.CANCELLED}
)


class DependencyType(StrEnum):
    HARD = "hard"
    """Must be completed before the dependent starts."""
    SOFT = "soft"
    """Orders work (priority) but never gates it."""
    CONFLICT = "conflict"
    """The two tasks never run at the same time."""
    SERIALIZATION = "serialization"
    """The dependent runs after the other has ended, whatever its outcome."""


class DependencySource(StrEnum):
    ARCHITECTURE = "architecture"
    SCHEDULER = "scheduler"
    WORKER = "worker"
    USER = "user"
    SYSTEM = "system"


class TaskScope(Contract):
    write_area: list[str] | None = None
    """Path globs (relative to the project root) the task may write; None = whole project.
    AGENTS.md, CLAUDE.md and `.git*` files only where an entry names them (IMPL-MERGE-1)."""
    expected_files: list[str] | None = None
    allowed_paths: list[str] | None = None
    denied_paths: list[str] | None = None


class TaskDependencySpec(Contract):
    depends_on_task_id: TaskID
    dependency_type: DependencyType = DependencyType.HARD
    reason: str | None = None
    source: DependencySource | None = None


class VerificationPolicy(Contract):
    commands: list[str] | None = None
    required: bool = False
    fallback_allowed: bool = False


class ModelPolicy(StrEnum):
    SCHEDULER_FORCED = "scheduler_forced"
    AGENT_SELECT = "agent_select"


class TaskConstraints(Contract):
    max_turns: int = 20
    soft_timeout_ms: int = 600_000
    hard_timeout_ms: int = 900_000
    retry_budget: int = 1
    model_policy: ModelPolicy = ModelPolicy.SCHEDULER_FORCED
    model_id: str | None = None
    max_cost_usd: float | None = None
    """IMPL: cost budget for runner-contract invariant 14 (None = no cost budget)."""


TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""A task id someone other than air chooses (a batch file, a model's plan): it names branches,
commit trailers and lines of text, so no path separators, spaces, newlines or leading ``-``."""
MAX_TURNS = 1000
"""The most model turns a task may ask for (the default is 20)."""
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
"""The longest soft or hard timeout of a task: one week."""
MAX_RETRY_BUDGET = 10


class RequestedConstraints(TaskConstraints):
    """``TaskConstraints`` as someone other than air asks for them — a batch file, an agent
    file, the Main Agent's model in a plan: only values that can work (a model's
    ``"hard_timeout_ms": 1e400`` ended the console with an OverflowError; a negative timeout
    failed the task at once). ``TaskConstraints`` itself stays unbounded: it is also read back
    from sessions written before these bounds."""

    max_turns: int = Field(default=20, ge=1, le=MAX_TURNS)
    soft_timeout_ms: int = Field(default=600_000, ge=1, le=MAX_TIMEOUT_MS)
    hard_timeout_ms: int = Field(default=900_000, ge=1, le=MAX_TIMEOUT_MS)
    retry_budget: int = Field(default=1, ge=0, le=MAX_RETRY_BUDGET)
    max_cost_usd: float | None = Field(default=None, gt=0)


class TaskContextRefs(Contract):
    plan_ref: str | None = None
    arc_ref: str | None = None
    parent_task_results: list[str] | None = None
    artifacts: list[str] | None = None


TaskContextMode = Literal["fresh", "fork"]
"""What a worker's conversation starts from: its task only, or a fork of the Main Agent's."""


class TaskAgent(Contract):
    """IMPL-AGENTFILE-1: the named agent file (``.air/agents/NAME.md``, ``~/.air/agents/NAME.md``) a
    task runs as, resolved by the parent (``air.session.agent_files``); a worker never reads one.
    Its model, turns, timeouts and budget are merged into the spec's constraints already."""

    name: str = Field(pattern=TASK_ID_PATTERN)
    source: Literal["project", "user"] | None = None
    """Where the file was found (None: named but not resolved yet, e.g. by the Main Agent)."""
    path: str | None = None
    persona: str = ""
    """The file's markdown body: reaches the worker's system prompt after its role prompt."""
    tools: list[str] | None = None
    """The only tools the task may use (None: its role's); never more than the role's."""


WorkerOutputContract = Literal[
    "ExecutorResult", "ReviewerResult", "DebuggerResult", "CompactorResult", "ExperienceMinerResult"
]


AGENT_TYPE_FOR_TASK: dict[TaskType, AgentType] = {
    TaskType.EXECUTE: AgentType.EXECUTOR,
    TaskType.DOCS: AgentType.EXECUTOR,
    TaskType.REVIEW: AgentType.REVIEWER,
    TaskType.DEBUG: AgentType.DEBUGGER,
    TaskType.COMPACT: AgentType.COMPACTOR,
    TaskType.MINE_EXPERIENCE: AgentType.EXPERIENCE_MINER,
}
"""The worker role of each task type (SDD §8.3; ``docs`` runs the ExecutorRole)."""

OUTPUT_CONTRACT_FOR_TASK: dict[TaskType, WorkerOutputContract] = {
    TaskType.EXECUTE: "ExecutorResult",
    TaskType.DOCS: "ExecutorResult",
    TaskType.REVIEW: "ReviewerResult",
    TaskType.DEBUG: "DebuggerResult",
    TaskType.COMPACT: "CompactorResult",
    TaskType.MINE_EXPERIENCE: "ExperienceMinerResult",
}
"""The result contract each task type's role returns (SDD §8.3)."""


class TaskSpec(Contract):
    id: TaskID
    type: TaskType
    title: str
    description: str
    acceptance_criteria: list[str] = Field(default_factory=empty_list)
    scope: TaskScope = Field(default_factory=TaskScope)
    dependencies: list[TaskDependencySpec] = Field(default_factory=empty_list)
    verification: VerificationPolicy = Field(default_factory=VerificationPolicy)
    constraints: TaskConstraints = Field(default_factory=TaskConstraints)
    context_refs: TaskContextRefs = Field(default_factory=TaskContextRefs)
    output_contract: WorkerOutputContract = "ExecutorResult"
    context: TaskContextMode = "fresh"
    """``fork``: the worker starts from a branched copy of the Main Agent's conversation, then
    its task (runner contract ``context: "fork"``; one task per batch or plan, IMPL-FORK-1)."""

    agent: TaskAgent | None = None
    """IMPL-AGENTFILE-1: the named agent file the task runs as (None: its role's defaults)."""
    host: str | None = Field(default=None, pattern=r"^[A-Za-z0-9-]{1,40}$")
    """IMPL-REMOTE-6: the hosts.yaml host the task runs on (None: here, or the run's --host)."""


class WorkspaceStrategy(StrEnum):
    MAIN = "main"
    WORKTREE = "worktree"
    ISOLATED_COPY = "isolated_copy"


class WorkspaceStatus(StrEnum):
    ACTIVE = "active"
    MERGED = "merged"
    CONFLICTED = "conflicted"
    ABANDONED = "abandoned"
    CLEANED = "cleaned"


class WorkspacePlan(Contract):
    task_id: TaskID
    strategy: WorkspaceStrategy
    base_ref: str | None = None


class WorkspaceRef(Contract):
    workspace_id: WorkspaceID
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    strategy: WorkspaceStrategy
    path: str
    branch: str | None = None
    base_commit: str | None = None


class SchedulerState(StrEnum):
    IDLE = "IDLE"
    LOADING_GRAPH = "LOADING_GRAPH"
    PLANNING_WAVE = "PLANNING_WAVE"
    DISPATCHING = "DISPATCHING"
    MONITORING = "MONITORING"
    COLLECTING_RESULTS = "COLLECTING_RESULTS"
    MERGING = "MERGING"
    REVIEWING_WAVE = "REVIEWING_WAVE"
    REPAIRING_OR_CONTINUING = "REPAIRING_OR_CONTINUING"
    COMPLETED = "COMPLETED"
    BLOCKED = "BLOCKED"
    CANCELLED = "CANCELLED"


class WavePlanEntry(Contract):
    task_id: TaskID
    workspace: WorkspacePlan
    model_id: str | None = None


class SchedulerWavePlan(Contract):
    session_id: SessionID
    wave_index: int
    entries: list[WavePlanEntry]
    serialized_task_ids: list[TaskID] = Field(default_factory=empty_list)
    """Runnable tasks held back because they conflict with a task in this wave."""
    planned_at: ISOTimeString


class RetryAction(StrEnum):
    RETRY = "retry"
    RETRY_SERIAL = "retry_serial"
    DEBUG = "debug"
    SKIP = "skip"
    BLOCK = "block"
    CANCEL = "cancel"
