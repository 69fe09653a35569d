"""``air run --plan BATCH [--json]``: what a real run would do, without doing it (invariant 28).

Owns ``run_plan`` (the command), ``make_plan`` (the resolved plan of a loaded batch) and its two
renderings (``plan_text``, ``plan_json``). The checks are the real run's own code, in its
order: ``parse_options``, ``load_batch`` (validation, agent files and their tools),
``refusals`` (git, the sandbox, ``--project``, ``--junit``) and ``RuntimeFactory.check`` (trust,
permission policy, provider and model, architecture.yaml, mcp.yaml); a batch a real run refuses
fails here with the same ``AirException`` and exit 2. Then the run's own planners decide:
``WavePlanner`` (waves, write-area conflicts, workspace kinds, models) over a ``TaskGraph`` of
the batch, and the workers' ``WorkerContextBuilder`` (the prompts each first attempt would
get, in a session with no history yet). No session, no ``.air`` directory, no worker, no
model call: the only processes are the run's preflights (``git``, the bubblewrap probe).
Waves are planned as if each ended before the next starts and every task completed; the real
Scheduler also starts a task as soon as a slot frees (IMPL-PLAN-1).
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any, NamedTuple

__all__ = ["console_plan", "make_plan", "plan_json", "plan_text", "run_plan"]


def run_plan(argv_options: dict[str, Any], stdout: IO[str] | None = None) -> int:
    """``air run --plan BATCH``. Returns 0 (the plan is printed) or 2 (a real run would refuse:
    the same message and kind)."""
    from air.cli.batch import load_batch
    from air.cli.checks import refusals, say_uncommitted
    from air.cli.factory import RuntimeFactory
    from air.cli.options import parse_options, report_bad_input
    from air.contracts.error import AirException, CliExit

    out = stdout or sys.stdout
    try:
        options = parse_options(argv_options)
        batch = load_batch(options.batch or "-", options.project)
        say_uncommitted(options, batch.warned(sys.stderr))
        from air.context.fork import fork_refusal

        refusal = fork_refusal(batch.specs, 0)  # a run's new session has no conversation
        if refusal is not None:  # the refusal of Runtime.submit (IMPL-FORK-1)
            raise refusal
        problems = refusals(options)
        for each in problems:
            report_bad_input(each, sys.stderr)
        if problems:
            return CliExit.BAD_INPUT
        prepared, _servers = RuntimeFactory(options).check(warm=False)
        plan = make_plan(options, batch, prepared, git_repo=_git_repo(options.project))
    except AirException as exc:
        report_bad_input(exc, sys.stderr)
        return CliExit.BAD_INPUT
    if options.json_stream:
        print(json.dumps(plan_json(plan), sort_keys=True), file=out)
    else:
        print(plan_text(plan), file=out)
    return CliExit.OK


class _Attempt(NamedTuple):
    """A first attempt as ``WorkerContextBuilder.build`` reads it."""

    session_id: str
    project_id: str
    task_spec: Any
    attempt_index: int = 0


class Plan(NamedTuple):
    batch: str
    project: str
    git_repo: bool
    model: str
    max_workers: int
    isolation: str
    review: bool
    waves: list[list[dict[str, Any]]]
    conflicts: list[dict[str, str]]
    warnings: list[str]


def _git_repo(root: str) -> bool:
    """What the run's WorkspaceManager decides workspaces by (``is_git_repo``)."""
    import trio

    from air.workspace.worktrees import ProjectGit

    return trio.run(ProjectGit(os.path.realpath(root)).is_repo)


async def console_plan(options: Any, path: str, runtime: Any) -> str:
    """``/plan BATCH`` in the console: the batch checked and planned as ``air run --plan``
    does, with the console's project, options and (already checked) configuration; a refusal
    is said with its kind and what to do, never raised (the console goes on)."""
    from air.cli.batch import load_batch
    from air.contracts.error import AirException

    try:
        batch = load_batch(os.path.join(os.getcwd(), path), options.project)
        git_repo = await runtime.workspaces.is_git_repo()
        return plan_text(make_plan(options, batch, runtime.services, git_repo=git_repo))
    except AirException as exc:
        what = f"\n  what to do: {exc.user_action}" if exc.user_action else ""
        return f"/plan {path}: refused: {exc.kind.value}: {exc.error.message}{what}"


def make_plan(options: Any, batch: Any, prepared: Any, *, git_repo: bool) -> Plan:
    """The resolved plan of ``batch`` (loaded and checked) for a run with ``options``;
    ``git_repo``: whether the project is a git repository with a commit.

    Raises:
        AirException: from the context builder (an unreadable rules file, a document ref
            outside the project), as the real first attempt would meet it.
    """
    from air.contracts.task import AGENT_TYPE_FOR_TASK, TaskStatus
    from air.nursery.agent_tools import role_tools
    from air.nursery.graph import TaskGraph
    from air.nursery.planner import ResourceSnapshot, WavePlanner, default_max_workers

    root = options.project
    planner = WavePlanner(isolation=options.isolation, git_repo=git_repo)
    slots = options.max_workers or default_max_workers()
    graph = TaskGraph("plan", project_root=root)
    for spec in batch.specs:
        graph.add_task(spec)
    prompts = _prompts(root, prepared)
    waves: list[list[dict[str, Any]]] = []
    conflicts: list[dict[str, str]] = []
    while True:
        decision = planner.plan(
            graph, ResourceSnapshot(max_workers=slots), wave_index=len(waves), planned_at=""
        )
        for edge in decision.inferred_edges:
            graph.add_edge(edge)
            conflicts.append(
                {"task": edge.task_id, "after": edge.depends_on_task_id, "why": edge.reason or ""}
            )
        entries = decision.plan.entries
        if not entries:
            break
        wave: list[dict[str, Any]] = []
        for entry in entries:
            node = graph.tasks[entry.task_id]
            spec = node.spec
            role = AGENT_TYPE_FOR_TASK[spec.type]
            agent = spec.agent
            system, message = prompts(spec)
            wave.append(
                {
                    "id": spec.id,
                    "title": spec.title,
                    "type": spec.type.value,
                    "role": role.value,
                    "model": entry.model_id or prepared.model,
                    "agent": None
                    if agent is None
                    else {"name": agent.name, "source": agent.source, "path": agent.path},
                    "tools": list(agent.tools)
                    if agent is not None and agent.tools is not None
                    else role_tools(role),
                    "tools_narrowed": agent is not None and agent.tools is not None,
                    "workspace": entry.workspace.strategy.value,
                    "write_area": node.write_area,
                    "depends_on": [d.depends_on_task_id for d in spec.dependencies],
                    "max_turns": spec.constraints.max_turns,
                    "hard_timeout_ms": spec.constraints.hard_timeout_ms,
                    "max_cost_usd": spec.constraints.max_cost_usd,
                    "prompts": {"system": system, "message": message},
                }
            )
            node.status = TaskStatus.COMPLETED  # the next wave as if this one completed
            node.final = True
        waves.append(wave)
    return Plan(
        batch=batch.path,
        project=root,
        git_repo=git_repo,
        model=prepared.model,
        max_workers=slots,
        isolation=options.isolation,
        review=options.review,
        waves=waves,
        conflicts=conflicts,
        warnings=list(batch.warnings),
    )


def _prompts(root: str, prepared: Any) -> Any:
    """``spec -> (system prompt, first message)`` of a first attempt, built by the workers' own
    ``WorkerContextBuilder`` over a session with no history (nothing is read from a database)."""
    from air.context.session_rows import SessionReaders
    from air.context.worker_pack import (
        DEFAULT_CONTEXT_WINDOW,
        DEFAULT_MAX_OUTPUT_TOKENS,
        WorkerContextBuilder,
        context_budget,
    )
    from air.contracts.project import ProjectContext
    from air.nursery.worker_context import ROLE_PROMPTS, document_refusal, model_window
    from air.session.project import ProjectStore

    project = ProjectStore().locate(root)
    if project is None or os.path.realpath(project.project_root) != os.path.realpath(root):
        project = ProjectContext(  # the project a real run would initialise, not written
            project_id="(new)",
            project_root=root,
            shared_root=os.path.join(root, ".air", "shared"),
            local_root=os.path.join(root, ".air", "local"),
            name=os.path.basename(os.path.normpath(root)),
        )
    window = model_window(prepared.provider, prepared.model) if prepared.provider else None
    builder = WorkerContextBuilder(
        project=project,
        readers=SessionReaders(),
        token_budget=context_budget(window or DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS),
        role_prompt_dir=ROLE_PROMPTS,
        document_refusal=document_refusal(root),  # what the run would refuse, refused here
    )

    def build(spec: Any) -> tuple[str, str]:
        pack = builder.build(_Attempt("(plan)", project.project_id, spec))
        messages = pack.messages or []
        first = messages[0].get("content", "") if messages else ""
        if isinstance(first, list):
            first = "\n".join(str(b.get("text", "")) for b in first if isinstance(b, dict))
        return pack.system_prompt or "", str(first)

    return build


def plan_json(plan: Plan) -> dict[str, Any]:
    """The plan as one JSON object (``type: air.plan``)."""
    return {"type": "air.plan", **plan._asdict()}


def _short(text: str, width: int = 96) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def plan_text(plan: Plan) -> str:
    """The plan for a person: one block per wave, one per task."""
    from air.contracts.display import shown

    tasks = sum(len(w) for w in plan.waves)
    lines = [
        f"air plan: {shown(plan.batch)}: {tasks} task{'s' * (tasks != 1)} in "
        f"{len(plan.waves)} wave{'s' * (len(plan.waves) != 1)}; nothing was started",
        f"  project {shown(plan.project)} ({'a git repository' if plan.git_repo else 'no git'}),"
        f" model {shown(plan.model)}, at most {plan.max_workers} workers,"
        f" isolation {plan.isolation}" + (", a review after each wave" if plan.review else ""),
    ]
    for index, wave in enumerate(plan.waves, start=1):
        lines.append(f"wave {index}:")
        for task in wave:
            agent = task["agent"]
            named = f", agent {agent['name']} ({agent['source']})" if agent else ""
            lines.append(
                f"  {task['id']} [{task['role']}] {shown(_short(task['title'], 60))}: model "
                f"{shown(task['model'])}, workspace {task['workspace']}{shown(named)}"
            )
            area = task["write_area"]
            where = "the whole project" if area is None else ", ".join(area) or "(read-only)"
            lines.append(f"      writes: {shown(where)}")
            narrowed = " (narrowed by the agent file)" if task["tools_narrowed"] else ""
            lines.append(f"      tools: {', '.join(task['tools']) or 'none'}{narrowed}")
            system, message = task["prompts"]["system"], task["prompts"]["message"]
            lines.append(
                f"      prompts: system {len(system)} chars, first message {len(message)} chars:"
                f" {shown(_short(message, 70))}"
            )
    for edge in plan.conflicts:
        lines.append(f"  {edge['task']} waits for {edge['after']}: {shown(edge['why'])}")
    lines.append("(`air run --plan BATCH --json` prints the whole prompts)")
    return "\n".join(lines)
