"""The ArchitectureDesigner: the architecture review gate (SDD §14.2, §19.4).

Owns the project's architecture declaration (``.air/shared/architecture.yaml``: the architecture
documents and the path globs of contracts, schemas, events, package boundaries, security and runtime
semantics; built-in defaults without it, IMPL-ARCH-1), ``triggers`` (which of a change's paths touch
the architecture), ``assess_impact`` (one read-only model call through the ProviderManager port with
the L4 architecture pack, which holds only what ``fs.read`` would let a worker read; the answer is
one of the four result classes, an unreadable or failed answer is ``reject_or_escalate``; the
decision is recorded as durable ``architecture.impact.completed``), ``update_architecture_docs``
(writes only through the ToolRegistry port, inside the declared documents' write area, then
``architecture.plan.updated``) and ``SchedulerGate``, the adapter the Scheduler holds a worker
result on before merge, with ``PromptConfirm``: a ``requires_user_confirmation`` asked as a
permission prompt (the console's).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from air.agents.direct import ToolPort
from air.agents.doc_globs import doc_files, matches
from air.agents.plan import extract_json
from air.agents.turns import EventSink, ModelPort, TurnRunner
from air.context.loader import builtin_resource, read_text_file, read_yaml_file
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import new_id
from air.contracts.permission import PermissionAction
from air.contracts.permission_records import PermissionDecision, PermissionPromptRequest
from air.contracts.prompt import FailClosedPrompt, PermissionPrompt
from air.contracts.provider import CanonicalMessage, ModelAssignment, ModelRequirement, TextBlock
from air.contracts.runtime import PermissionTemplate
from air.contracts.task import TaskSpec
from air.contracts.tool_runs import ToolExecutionContext
from air.contracts.worker_result import WorkerResult

__all__ = [
    "ARCHITECTURE_FILE",
    "AREAS",
    "ArchitectureChange",
    "ArchitectureDeclaration",
    "ArchitectureDesigner",
    "ArchitectureImpact",
    "DocumentUpdate",
    "GateVerdict",
    "PromptConfirm",
    "ResultClass",
    "SchedulerGate",
    "architecture_reference",
    "load_declaration",
]

ResultClass = Literal[
    "silent_continue", "requires_user_confirmation", "requires_replan", "reject_or_escalate"
]
RESULT_CLASSES: tuple[str, ...] = get_args(ResultClass)
ARCHITECTURE_FILE = ".air/shared/architecture.yaml"
AREAS = ("contracts", "schemas", "events", "boundaries", "security", "runtime")
"""The architecture areas of SDD §19.4 a path may touch."""
AGENT_ID = "architecture_designer"
_DOC_CHARS = 6_000
_PACK_CHARS = 24_000

_DEFAULT_DOCS = ("ARCHITECTURE.md", "docs/architecture", "docs/adr", "docs/decisions.md")
_DEFAULT_AREAS: dict[str, tuple[str, ...]] = {
    "contracts": ("**/contracts/**", "**/*.proto", "**/openapi*.yaml", "**/openapi*.json"),
    "schemas": ("**/*.schema.json", "**/schema.py", "**/schema.sql", "**/migrations/**"),
    "events": ("**/events/**",),
    "boundaries": ("pyproject.toml", "setup.cfg", ".importlinter", "CMakeLists.txt"),
    "security": ("**/security/**", "**/permissions*.yaml"),
    "runtime": (),
}

_ASSESS = (
    "Assess the change below against the project's architecture documents. Reply with one JSON "
    'object only: {{"result_class": one of {classes}, "summary": "one or two sentences", '
    '"impacted_task_ids": [task ids]}}.\n'
    "silent_continue: consistent with the architecture; requires_user_confirmation: an "
    "acceptable architecture change the person must confirm; requires_replan: the plan must "
    "change to fit the architecture; reject_or_escalate: it breaks the architecture or you "
    "cannot tell."
)


@dataclass(frozen=True)
class ArchitectureDeclaration:
    """Which files are architecture documents and which path globs belong to which area."""

    docs: tuple[str, ...] = _DEFAULT_DOCS
    areas: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(_DEFAULT_AREAS))
    source: str = "builtin"

    def doc_roots(self) -> list[str]:
        """The write area of ``update_architecture_docs``: each doc pattern up to its first
        wildcard (a directory or a file, relative to the project root)."""
        roots: list[str] = []
        for pattern in self.docs:
            literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0].rstrip("/")
            if literal and literal not in roots:
                roots.append(literal)
        return roots


def architecture_reference() -> str:
    """The reference of ``architecture.yaml`` that config errors name: its copy in the
    installed package (an absolute path that exists)."""
    return str(Path(__file__).with_name("resources") / "architecture.md")


def _strings(value: Any, source: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source}: {key} must be a list of path globs",
            user_action=(
                f"Write {key} as a YAML list of non-empty strings in {source} "
                f"(reference: {architecture_reference()})."
            ),
        )
    globs = tuple(v.strip() for v in value)
    for glob in globs:
        # why: the documents go into the model's prompt; a cloned project must not point
        # the designer at ~/.ssh or another project's files
        if glob.startswith(("/", "~")) or ".." in glob.replace("\\", "/").split("/"):
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message=f"{source}: {key} entry {glob!r} leaves the project",
                user_action=(
                    f"Use paths relative to the project root (no '..') in {source} "
                    f"(reference: {architecture_reference()})."
                ),
            )
    return globs


def load_declaration(project_root: str | Path) -> ArchitectureDeclaration:
    """The project's ``.air/shared/architecture.yaml``, or the built-in declaration.

    The file holds ``docs: [globs]`` and ``areas: {contracts|schemas|events|boundaries|
    security|runtime: [globs]}``; an area it names replaces the built-in globs of that area.

    Raises:
        AirException: ``config_error`` for invalid YAML, unknown keys or non-list values.
    """
    path = Path(project_root) / ARCHITECTURE_FILE
    if not path.is_file():
        return ArchitectureDeclaration()
    source = str(path)
    data: Any = read_yaml_file(
        path, user_action=f"Fix the YAML of {source} (reference: {architecture_reference()})."
    )
    if not isinstance(data, dict) or set(data) - {"docs", "areas"}:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source} must be a mapping with the keys docs and areas only",
            user_action=(
                f"Keep only 'docs:' and 'areas:' in {source} "
                f"(reference: {architecture_reference()})."
            ),
        )
    docs = _strings(data["docs"], source, "docs") if "docs" in data else _DEFAULT_DOCS
    areas = dict(_DEFAULT_AREAS)
    raw_areas = data.get("areas") or {}
    if not isinstance(raw_areas, dict) or set(raw_areas) - set(AREAS):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source}: areas may name only {', '.join(AREAS)}",
            user_action=(
                f"Fix the area names under 'areas:' in {source} "
                f"(reference: {architecture_reference()})."
            ),
        )
    for name, globs in raw_areas.items():
        areas[name] = _strings(globs, source, f"areas.{name}")
    return ArchitectureDeclaration(docs=docs, areas=areas, source=source)


@dataclass(frozen=True)
class ArchitectureChange:
    """What the gate looks at: a plan change or a worker result (SDD §19.4 ImpactRequest)."""

    origin: Literal["plan", "worker_result"]
    summary: str
    paths: tuple[str, ...] = ()
    """The paths it writes (a plan's write areas, a result's changed files)."""
    task_ids: tuple[str, ...] = ()
    detail: str = ""
    """The plan as text, or the worker's summary."""

    @classmethod
    def of_plan(cls, summary: str, tasks: Sequence[TaskSpec]) -> ArchitectureChange:
        paths = [a for t in tasks for a in t.scope.write_area or []]
        lines = [
            f"- {t.id}: {t.title} (writes {', '.join(t.scope.write_area or []) or '?'})"
            for t in tasks
        ]
        return cls(
            origin="plan",
            summary=summary,
            paths=tuple(dict.fromkeys(paths)),
            task_ids=tuple(t.id for t in tasks),
            detail="\n".join(lines),
        )

    @classmethod
    def of_result(cls, spec: TaskSpec, result: WorkerResult) -> ArchitectureChange:
        return cls(
            origin="worker_result",
            summary=f"task {spec.id} ({spec.title}) finished: {result.summary}",
            paths=tuple(result.changed_files),
            task_ids=(spec.id,),
            detail=spec.description,
        )


@dataclass(frozen=True)
class ArchitectureImpact:
    """The gate's decision."""

    result_class: ResultClass
    summary: str
    triggers: tuple[str, ...] = ()
    impacted_task_ids: tuple[str, ...] = ()
    requirement_id: str | None = None
    recorded: bool = False
    """True when ``architecture.impact.completed`` was recorded."""


@dataclass(frozen=True)
class DocumentUpdate:
    """One architecture document write (``update_architecture_docs``)."""

    path: str
    content: str
    summary: str
    plan_ref: str | None = None


class ArchitectureDesigner:
    """The architecture gate of one session (see the module docstring).

    Args:
        events: where its durable events go (the EventIngestor).
        models: the ProviderManager port; its model call is read-only (no tools).
        project_root: the main workspace (the declaration and the documents live here).
        session_id / project_id: stamped on every event.
        tools: the ToolRegistry port; None makes ``update_architecture_docs`` refuse.
        model: default ``models.select_model(role="architecture")``.
        document_refusal: why a document (its real path) may not reach the model, or None when
            it may: the runtime's ``document_refusal`` (what ``fs.read`` refuses a worker, e.g.
            a declared document linked to ``.env``); without it, any file of the project may.
    """

    def __init__(
        self,
        *,
        events: EventSink,
        models: ModelPort,
        project_root: str,
        session_id: str,
        project_id: str | None,
        tools: ToolPort | None = None,
        model: ModelAssignment | None = None,
        document_refusal: Callable[[Path], str | None] | None = None,
    ) -> None:
        self.project_root = project_root
        self.session_id = session_id
        self.tools = tools
        self.declaration = load_declaration(project_root)
        self._refusal = document_refusal or (lambda path: None)
        assignment = model or models.select_model(ModelRequirement(role="architecture"))
        self.turns = TurnRunner(
            events,
            models,
            assignment,
            session_id=session_id,
            project_id=project_id,
            agent_id=AGENT_ID,
        )
        self.role_prompt = builtin_resource("role-architecture_designer.md")

    # -- detection -------------------------------------------------------------------------
    def triggers(self, change: ArchitectureChange) -> list[str]:
        """Each ``area: path`` of the change that touches the architecture (docs included)."""
        found: list[str] = []
        for path in change.paths:
            if any(matches(path, d) for d in self.declaration.docs):
                found.append(f"architecture docs: {path}")
            for area, globs in self.declaration.areas.items():
                if any(matches(path, g) for g in globs):
                    found.append(f"{area}: {path}")
        return found

    # -- the gate --------------------------------------------------------------------------
    async def assess_impact(self, change: ArchitectureChange) -> ArchitectureImpact:
        """Classify a change (SDD §19.4).

        A worker result that touches no declared area is ``silent_continue`` without a model
        call or an event; everything else is one model call whose class is recorded as
        ``architecture.impact.completed``. A failed turn or an unreadable answer is
        ``reject_or_escalate`` (the gate fails closed).
        """
        triggers = tuple(self.triggers(change))
        if change.origin == "worker_result" and not triggers:
            return ArchitectureImpact("silent_continue", "touches no declared architecture area")
        turn = await self.turns.hidden(
            self.turns.request(self._system(), [self._message(change, triggers)])
        )
        result_class: ResultClass = "reject_or_escalate"
        impacted: tuple[str, ...] = change.task_ids
        if turn.status != "complete":
            summary = "the architecture review could not run: " + (
                turn.error.message if turn.error else turn.status
            )
        else:
            try:
                answer = extract_json(turn.text)
                if not isinstance(answer, dict) or answer.get("result_class") not in RESULT_CLASSES:
                    raise ValueError("no known result_class")
                result_class = cast(ResultClass, answer["result_class"])
                summary = str(answer.get("summary") or result_class)[:2000]
                listed = answer.get("impacted_task_ids")
                if isinstance(listed, list) and listed:
                    impacted = tuple(str(t) for t in listed if str(t) in change.task_ids)
            except ValueError as exc:
                summary = f"the architecture review's answer was unreadable ({exc})"
        requirement_id = new_id("req") if result_class == "requires_replan" else None
        await self.turns.record(
            "architecture.impact.completed",
            {
                "result_class": result_class,
                "summary": summary,
                "requirement_id": requirement_id,
                "impacted_task_ids": list(impacted),
            },
        )
        return ArchitectureImpact(
            result_class, summary, triggers, impacted, requirement_id, recorded=True
        )

    def _system(self) -> str:
        pack: list[str] = []
        used = 0
        root = Path(self.project_root)
        for pattern in self.declaration.docs:
            for path in sorted(doc_files(root, pattern)):
                if used >= _PACK_CHARS:
                    break
                # a task may have merged a link here: what fs.read would refuse a worker
                # (credentials, git's internals, air's local state) never reaches the model
                real = path.resolve()
                why = self._refusal(real)
                left = f"(left out: it leads to a protected file, {why})" if why else None
                text = left or read_text_file(real, exact=True)[:_DOC_CHARS]
                used += len(text)
                pack.append(f"## {path.relative_to(root).as_posix()}\n{text}")
        docs = "\n\n".join(pack) or "(the project declares no architecture documents yet)"
        classes = ", ".join(RESULT_CLASSES)
        return (
            f"{self.role_prompt}\n\n{_ASSESS.format(classes=classes)}\n\n# L4 architecture\n{docs}"
        )

    @staticmethod
    def _message(change: ArchitectureChange, triggers: Sequence[str]) -> CanonicalMessage:
        lines = [
            f"Change ({change.origin}): {change.summary}",
            "",
            change.detail,
            "",
            "Paths: " + (", ".join(change.paths) or "(none)"),
            "Architecture areas touched: " + ("; ".join(triggers) or "(none detected)"),
        ]
        return CanonicalMessage(role="user", content=[TextBlock(text="\n".join(lines))])

    # -- documents -------------------------------------------------------------------------
    async def update_architecture_docs(self, update: DocumentUpdate) -> str:
        """Write one architecture document through the ToolRegistry, then record
        ``architecture.plan.updated``. Returns the tool run id.

        The write runs under the executor template with the declared documents as its write
        area, headless: the PermissionEngine refuses any other path.

        Raises:
            AirException: ``config_error`` without a ToolRegistry; the tool's own error
                (``permission_denied`` ...) when the registry refuses the write.
        """
        if self.tools is None:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message="the ArchitectureDesigner has no ToolRegistry to write documents with",
                user_action="Build the ArchitectureDesigner with tools=<the session's registry>.",
            )
        context = ToolExecutionContext(
            session_id=self.session_id,
            agent_id=AGENT_ID,
            project_root=self.project_root,
            workspace_root=self.project_root,
            permission_template=PermissionTemplate.EXECUTOR,
            write_area=self.declaration.doc_roots(),
            headless=True,
        )
        envelope = await self.tools.call(
            "fs.write", {"path": update.path, "content": update.content}, context
        )
        if envelope.status != "ok":
            if envelope.error is not None:
                raise AirException(envelope.error)
            raise AirException.of(
                kind=ErrorKind.PERMISSION_DENIED,
                message=f"the architecture document write was {envelope.status}: {update.path}",
                user_action="Write architecture documents only inside the declared docs.",
            )
        await self.turns.record(
            "architecture.plan.updated",
            {
                "plan_ref": update.plan_ref or update.path,
                "summary": update.summary,
                "artifact_ids": [a.artifact_id for a in envelope.artifacts],
            },
        )
        return envelope.tool_run_id


@dataclass(frozen=True)
class GateVerdict:
    """What the Scheduler does with a held worker result."""

    proceed: bool
    result_class: ResultClass
    reason: str


Confirm = Callable[[ArchitectureImpact], Awaitable[bool]]
"""Asks the person to confirm an architecture change (the Main Agent's prompt)."""

CONFIRM_TOOL = "architecture.confirm"
"""The ``tool_name`` of the permission prompt that asks for an architecture confirmation."""


class PromptConfirm:
    """Asks the person to confirm an architecture change through the session's permission
    prompt (SDD §19.4: ``permission.prompt.requested`` via the Main Agent; the console's
    ``ConsolePrompt``), recorded like a tool's question: ``permission.prompt.requested`` with
    the review's summary, then ``permission.prompt.resolved`` with the answer. Any allow
    answer confirms; a denial, or ``FailClosedPrompt`` (nobody there), does not.
    """

    def __init__(self, designer: ArchitectureDesigner, prompts: PermissionPrompt) -> None:
        self.turns = designer.turns
        self.prompts = prompts

    async def __call__(self, impact: ArchitectureImpact) -> bool:
        prompt_id = new_id("prm")
        task_id = impact.impacted_task_ids[0] if impact.impacted_task_ids else None
        summary = f"architecture change needs your confirmation: {impact.summary}"
        await self.turns.record(
            "permission.prompt.requested",
            {
                "prompt_id": prompt_id,
                "tool_name": CONFIRM_TOOL,
                "summary": summary,
                "risk_level": "high",
                "task_id": task_id,
                "agent_id": AGENT_ID,
            },
        )
        answer = await self.prompts.ask(
            PermissionPromptRequest(
                prompt_id=prompt_id,
                tool_name=CONFIRM_TOOL,
                decision=PermissionDecision(
                    action=PermissionAction.ASK_USER,
                    risk_level="high",
                    reason=summary,
                    layer="architecture",
                    required_confirmation=True,
                ),
                items=list(impact.triggers),
                risk_level="high",
                task_id=task_id,
                agent_id=AGENT_ID,
            )
        )
        headless = isinstance(self.prompts, FailClosedPrompt)
        await self.turns.record(
            "permission.prompt.resolved",
            {
                "prompt_id": prompt_id,
                "decision": "allow_once" if answer.approved else "deny",
                "resolved_by": "headless" if headless else "user",
            },
        )
        return answer.approved


class SchedulerGate:
    """The Scheduler's architecture gate over an ArchitectureDesigner (SDD §19.4).

    A worker result is held until its class is known: ``silent_continue`` proceeds;
    ``requires_user_confirmation`` proceeds only when ``confirm`` says yes (no ``confirm``:
    fails closed); ``requires_replan`` and ``reject_or_escalate`` hold the task (it is blocked,
    not merged, its dependents do not run). ``requires_replan`` also records the designer's
    ``requirement.changed`` (the impacted tasks, the requirement id it minted): the durable
    replan trigger. ``headless`` (``air run --headless`` / ``air resume``, IMPL-COMPACT-3):
    nobody can confirm, and each blocked reason says what the person does next.
    """

    def __init__(
        self,
        designer: ArchitectureDesigner,
        confirm: Confirm | None = None,
        *,
        headless: bool = False,
    ) -> None:
        self.designer = designer
        self.confirm = confirm
        self.headless = headless

    async def review(self, spec: TaskSpec, result: WorkerResult) -> GateVerdict:
        impact = await self.designer.assess_impact(ArchitectureChange.of_result(spec, result))
        cls = impact.result_class
        if cls == "silent_continue":
            return GateVerdict(True, cls, impact.summary)
        if cls == "requires_user_confirmation":
            if self.confirm is not None and await self.confirm(impact):
                return GateVerdict(True, cls, f"confirmed: {impact.summary}")
            if self.headless:
                return GateVerdict(False, cls, f"{impact.summary} — {_HEADLESS_CONFIRM}")
            return GateVerdict(False, cls, f"not confirmed: {impact.summary}")
        if cls == "requires_replan":
            await self.designer.turns.record(
                "requirement.changed",
                {
                    "requirement_id": impact.requirement_id or new_id("req"),
                    "description": impact.summary,
                    "change_class": "design_interface_goal",
                    "impacted_task_ids": list(impact.impacted_task_ids or (spec.id,)),
                },
            )
            if self.headless:
                return GateVerdict(False, cls, f"{impact.summary} — {_HEADLESS_REPLAN}")
        elif self.headless:
            return GateVerdict(False, cls, f"{impact.summary} — {_HEADLESS_REJECT}")
        return GateVerdict(False, cls, impact.summary)


_HEADLESS_CONFIRM = (
    "not confirmed: the change needs the person's confirmation and a headless run has nobody "
    "to ask; review the kept workspace, and to accept the change record it in the "
    "architecture documents and run the task again"
)
_HEADLESS_REPLAN = (
    "the plan must change to fit the architecture: change the task (or the architecture "
    "documents) and run it again"
)
_HEADLESS_REJECT = (
    "the architecture review rejected the change (or could not decide): see the kept "
    "workspace and the review's summary, then change the task and run it again"
)
