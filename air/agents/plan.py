"""The Main Agent's structured model outputs: intent, task plan, requirement change (SDD §14.1).

Owns ``TaskPlan`` (the task specs a task request becomes, validated against ``TaskSpec`` plus
the plan rules: at least one task, ids and constraints as a batch file may have them, unique
ids, every dependency inside the plan or already known), ``parse_plan`` (JSON text → plan or
the list of validation errors the repair round sends back), ``parse_intent`` and
``parse_change`` (the two classifications; anything unreadable falls back to the side without
side effects, IMPL-AGENT-3) and ``render_plan`` (the text shown to the person). Pure
functions: no I/O, no Trio.
"""

import json
import re
from collections.abc import Collection
from typing import Any, Literal

from pydantic import Field, ValidationError

from air.contracts.ids import Contract
from air.contracts.task import TASK_ID_PATTERN, RequestedConstraints, TaskSpec

__all__ = [
    "ChangeClass",
    "Intent",
    "TaskPlan",
    "extract_json",
    "parse_change",
    "parse_intent",
    "parse_plan",
    "plan_schema_text",
    "render_plan",
]

Intent = Literal["chat", "task"]
ChangeClass = Literal["execution", "possible_design", "design_interface_goal"]


class TaskPlan(Contract):
    """What a task request turns into."""

    summary: str
    """One or two sentences for the person."""
    needs_plan: bool = False
    """True for an architecture-level change (interfaces, schemas, package boundaries): the
    plan is shown for confirmation before anything runs."""
    tasks: list[TaskSpec] = Field(min_length=1)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in a model reply: the whole text, a fenced block, or the outermost object.

    Raises:
        ValueError: when no JSON object can be read.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # a model's text: any depth
            continue
    raise ValueError("the reply holds no JSON object")


def parse_plan(
    text: str, known_task_ids: Collection[str] = ()
) -> tuple[TaskPlan | None, list[str]]:
    """Validate a plan reply.

    Returns:
        ``(plan, [])`` when valid, else ``(None, errors)`` — one readable line per problem, as
        sent back to the model in the repair round.
    """
    try:
        raw = extract_json(text)
    except ValueError as exc:
        return None, [f"{exc}: reply with one JSON object only"]
    try:
        plan = TaskPlan.model_validate(raw)
    except ValidationError as exc:
        errors = []
        for err in exc.errors()[:20]:
            where = ".".join(str(p) for p in err["loc"]) or "(root)"
            errors.append(f"{where}: {err['msg']}")
        return None, errors
    errors = _requested(plan)
    ids = [t.id for t in plan.tasks]
    seen: set[str] = set()
    for task_id in ids:
        if task_id in seen:
            errors.append(f"tasks: id {task_id!r} is used twice")
        if task_id in known_task_ids:
            errors.append(f"tasks: id {task_id!r} already exists in this session; pick a new id")
        seen.add(task_id)
    forks = [t.id for t in plan.tasks if t.context == "fork"]
    if len(forks) > 1:
        errors.append(f"tasks: {', '.join(forks)} have context fork; at most one task may fork")
    for task in plan.tasks:
        for dep in task.dependencies:
            if dep.depends_on_task_id not in seen and dep.depends_on_task_id not in known_task_ids:
                errors.append(
                    f"tasks.{task.id}.dependencies: unknown task {dep.depends_on_task_id!r}"
                )
            if dep.depends_on_task_id == task.id:
                errors.append(f"tasks.{task.id}.dependencies: a task cannot depend on itself")
    return (None, errors) if errors else (plan, [])


_TASK_ID = re.compile(TASK_ID_PATTERN)


def _requested(plan: TaskPlan) -> list[str]:
    """What a batch file could not ask for either: an id that is no plain name (it names
    branches and commit trailers) and constraints that cannot work (a model's ``"hard_timeout_ms":
    1e400`` ended the console with an OverflowError)."""
    errors = []
    for i, task in enumerate(plan.tasks):
        if not _TASK_ID.fullmatch(task.id):
            errors.append(
                f"tasks.{i}.id: {task.id!r} is no task id: 1-64 letters, digits, '_', '.' and "
                "'-', a letter or digit first"
            )
        try:
            RequestedConstraints.model_validate(task.constraints.model_dump())
        except ValidationError as exc:
            for err in exc.errors()[:5]:
                where = ".".join(str(p) for p in err["loc"])
                errors.append(f"tasks.{i}.constraints.{where}: {err['msg']}")
    return errors


def parse_intent(text: str) -> Intent:
    """``chat`` or ``task`` from a classification reply; unreadable → ``chat`` (IMPL-AGENT-3)."""
    try:
        raw = extract_json(text)
    except ValueError:
        return "chat"
    if isinstance(raw, dict) and raw.get("intent") == "task":
        return "task"
    return "chat"


def parse_change(text: str, running: Collection[str]) -> tuple[ChangeClass, list[str]]:
    """The class of a requirement change and the tasks it touches.

    Unreadable → ``possible_design`` (a replan the person confirms, never a silent resume;
    IMPL-AGENT-3). Impacted ids outside ``running`` are dropped.
    """
    try:
        raw = extract_json(text)
    except ValueError:
        return "possible_design", []
    if not isinstance(raw, dict):
        return "possible_design", []
    value = raw.get("change_class")
    change: ChangeClass = "possible_design"
    if value in ("execution", "design_interface_goal"):
        change = value
    impacted = raw.get("impacted_task_ids")
    ids = [str(i) for i in impacted if str(i) in running] if isinstance(impacted, list) else []
    return change, ids


def plan_schema_text() -> str:
    """The JSON schema of ``TaskPlan``, as given to the model."""
    return json.dumps(TaskPlan.model_json_schema(), separators=(",", ":"))


def render_plan(plan: TaskPlan) -> str:
    """The plan as the person reads it."""
    lines = [plan.summary, ""]
    for number, task in enumerate(plan.tasks, start=1):
        deps = ", ".join(d.depends_on_task_id for d in task.dependencies)
        after = f" (after {deps})" if deps else ""
        lines.append(f"{number}. [{task.id}] {task.title}{after}")
    return "\n".join(lines)
