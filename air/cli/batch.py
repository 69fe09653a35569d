"""Batch files for ``air run --headless BATCH``: a YAML list of task specs.

Owns: the batch file models (``BatchFile``, ``BatchTask``, ``BatchDefaults``), ``load_batch``
(YAML → validated ``TaskSpec`` list) and ``batch_json_schema`` (the JSON Schema shipped as
``air/cli/schemas/batch.schema.json``). Every problem — bad YAML, an unknown field, a bad
value, a duplicate id, a missing dependency, a dependency cycle — is an ``AirException`` of
kind ``validation_error`` naming the file, the line (from the YAML node marks) and the reason.
Values that cannot work are refused here, not when a worker meets them (``RequestedConstraints``,
IMPL-CLI-2): timeouts and ``max_turns`` out of range, a task larger than one IPC line, a batch
path that is not a regular file (a FIFO would block, a directory cannot be read), YAML nested
too deeply to parse.

Format (see ``examples/`` for a commented example)::

    version: 1                 # optional, only 1 is known
    name: repair the parser    # optional
    defaults:                  # optional, merged under every task (task fields win)
      constraints: {max_turns: 8, hard_timeout_ms: 120000}
      verification: {commands: ["python -m pytest -q"], required: true}
    tasks:
      - id: fix-tokenizer      # [A-Za-z0-9][A-Za-z0-9_.-]*, unique in the file
        type: execute          # execute | review | debug | docs | compact | mine_experience
        title: Fix the tokenizer
        description: ...       # defaults to the title
        scope: {write_area: ["src/tokenizer.py"]}
        depends_on: [other-id] # hard dependencies (shorthand)
        agent: strict-reviewer # .air/agents/strict-reviewer.md (or ~/.air/agents/): its
                               # fields go under the task's, over the defaults (IMPL-AGENTFILE-1)
        dependencies:          # any dependency type
          - {depends_on_task_id: other-id, dependency_type: soft}
"""

import json
import os
import sys
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import Field, ValidationError

from air.cli.batch_errors import describe_error, first_error, key_node, node_at, yaml_line
from air.contracts.display import shown
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import Contract, empty_list
from air.contracts.task import (
    OUTPUT_CONTRACT_FOR_TASK,
    TASK_ID_PATTERN,
    DependencySource,
    DependencyType,
    RequestedConstraints,
    TaskAgent,
    TaskConstraints,
    TaskContextMode,
    TaskContextRefs,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskType,
    VerificationPolicy,
    WorkerOutputContract,
)
from air.ipc.framing import DEFAULT_MAX_LINE_BYTES
from air.nursery.agent_tools import check_agent_tools
from air.nursery.graph import find_cycle
from air.session.agent_files import agent_overlay, find_agent
from air.small_file import read_small
from air.yamlload import compose_and_load

__all__ = [
    "BatchDefaults",
    "BatchFile",
    "BatchTask",
    "LoadedBatch",
    "batch_json_schema",
    "load_batch",
    "load_batch_text",
]


MAX_BATCH_BYTES = 8 * 1024 * 1024
"""The largest batch file air reads (and, in characters, the longest batch text it parses)."""
TASK_SPEC_BYTES = DEFAULT_MAX_LINE_BYTES - 64 * 1024
"""A task spec as JSON must fit one IPC line (it travels in ``agent.start``) with room left
for the envelope and the rest of the start request."""


class BatchDefaults(Contract):
    """Fields merged under every task of the file (the task's own values win, per field)."""

    constraints: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    scope: dict[str, Any] | None = None


class BatchTask(Contract):
    """One task of a batch file; becomes a ``TaskSpec``."""

    id: str = Field(pattern=TASK_ID_PATTERN)
    type: TaskType = TaskType.EXECUTE
    title: str = Field(min_length=1)
    description: str | None = None
    acceptance_criteria: list[str] = Field(default_factory=empty_list)
    scope: TaskScope = Field(default_factory=TaskScope)
    depends_on: list[str] = Field(default_factory=empty_list)
    """Hard dependencies by task id (shorthand for ``dependencies``)."""
    dependencies: list[TaskDependencySpec] = Field(default_factory=empty_list)
    verification: VerificationPolicy = Field(default_factory=VerificationPolicy)
    constraints: RequestedConstraints = Field(default_factory=RequestedConstraints)
    context_refs: TaskContextRefs = Field(default_factory=TaskContextRefs)
    output_contract: WorkerOutputContract | None = None
    agent: str | None = Field(default=None, pattern=TASK_ID_PATTERN)
    """The named agent file the task runs as (``.air/agents/NAME.md``, ``~/.air/agents/``)."""
    host: str | None = Field(default=None, pattern=r"^[A-Za-z0-9-]{1,40}$")
    """The host (``hosts.yaml``) the task runs on; default here, or the run's ``--host``."""
    context: TaskContextMode = "fresh"
    """``fork``: start from a branched copy of the Main Agent's conversation (IMPL-FORK-1)."""

    def to_spec(self, agent: TaskAgent | None = None) -> TaskSpec:
        deps = [
            TaskDependencySpec(
                depends_on_task_id=d,
                dependency_type=DependencyType.HARD,
                source=DependencySource.USER,
            )
            for d in self.depends_on
        ]
        deps.extend(
            d if d.source is not None else d.model_copy(update={"source": DependencySource.USER})
            for d in self.dependencies
        )
        return TaskSpec(
            id=self.id,
            type=self.type,
            title=self.title,
            description=self.description or self.title,
            acceptance_criteria=self.acceptance_criteria,
            scope=self.scope,
            dependencies=deps,
            verification=self.verification,
            constraints=TaskConstraints.model_validate(self.constraints.model_dump()),
            context_refs=self.context_refs,
            output_contract=self.output_contract or OUTPUT_CONTRACT_FOR_TASK[self.type],
            agent=agent,
            host=self.host,
            context=self.context,
        )


class BatchFile(Contract):
    """The whole batch file."""

    version: Literal[1] = 1
    name: str | None = None
    defaults: BatchDefaults = Field(default_factory=BatchDefaults)
    tasks: list[BatchTask] = Field(min_length=1)


class LoadedBatch(NamedTuple):
    path: str
    name: str | None
    specs: list[TaskSpec]
    warnings: list[str] = []  # noqa: RUF012 (a NamedTuple default, never mutated)
    """Agent files skipped on the way (links, too large), one line each."""

    def warned(self, stream: Any) -> list[TaskSpec]:
        """The specs, once the ``warnings`` are said on ``stream`` (stderr), one line each, as
        exact text (``shown``: they name a project's files)."""
        for line in self.warnings:
            print(f"air: warning: {shown(line)}", file=stream)
        return self.specs


def batch_json_schema() -> dict[str, Any]:
    """The JSON Schema of a batch file (what ``schemas/batch.schema.json`` holds)."""
    schema = BatchFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://air.local/schemas/batch.schema.json"
    schema["title"] = "air batch file"
    schema["description"] = "Tasks for `air run --headless BATCH` (YAML or JSON)."
    return schema


def _fail(path: str, line: int | None, reason: str) -> AirException:
    where = f"{path}:{line}" if line is not None else path
    return AirException.of(
        kind=ErrorKind.VALIDATION_ERROR,
        message=f"{where}: {reason}",
        user_action=f"Fix {where} and run again (format: air/cli/schemas/batch.schema.json).",
        metadata={"file": path, "line": line, "reason": reason},
    )


def _merge(defaults: dict[str, Any] | None, value: Any) -> Any:
    if defaults is None:
        return value
    if value is None:
        return dict(defaults)
    if isinstance(value, dict):
        return {**defaults, **value}
    return value


def load_batch_text(
    text: str, path: str = "<batch>", project_root: str | None = None
) -> LoadedBatch:
    """Parse and validate batch text.

    Args:
        text: YAML (or JSON) text.
        path: the file name used in messages.
        project_root: where a task's ``agent:`` is looked up (``.air/agents/``, then
            ``~/.air/agents/``; None: the user's only).

    Returns:
        The batch with its specs in file order.

    Raises:
        AirException: kind ``validation_error`` with ``metadata`` {file, line, reason}.
    """
    try:
        # one parse: nodes for the lines, and the data (refused unparsed past the limits)
        root, data = compose_and_load(text, max_chars=MAX_BATCH_BYTES)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise _fail(path, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from exc
    except RecursionError:
        raise _fail(path, None, "invalid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise _fail(path, yaml_line(root), "a batch file is a mapping with a 'tasks' list")
    raw_tasks = data.get("tasks")
    header_data = dict(data)
    if isinstance(raw_tasks, list) and raw_tasks:
        header_data["tasks"] = [{"id": "x", "title": "x"}]  # tasks are validated one by one
    try:
        header = BatchFile.model_validate(header_data)
    except ValidationError as exc:
        err = first_error(exc)
        loc = [p for p in err["loc"] if isinstance(p, (int, str))]
        node = key_node(root, loc) if err["type"] == "extra_forbidden" else node_at(root, loc)[0]
        raise _fail(path, yaml_line(node), describe_error(dict(err))) from exc
    assert isinstance(raw_tasks, list)
    tasks: list[BatchTask] = []
    agents: list[TaskAgent | None] = []
    warnings: list[str] = []
    for index, raw in enumerate(raw_tasks):
        task_loc: list[int | str] = ["tasks", index]
        if not isinstance(raw, dict):
            raise _fail(path, yaml_line(node_at(root, task_loc)[0]), "each task is a mapping")
        merged = dict(raw)
        agent_line = yaml_line(node_at(root, [*task_loc, "agent"])[0])
        agent, skipped = _agent_of(raw, path, agent_line, project_root)
        warnings += skipped
        overlay = agent_overlay(agent) if agent is not None else {"constraints": {}}
        if agent is not None:
            if "type" in overlay and "type" not in raw:  # the task's own type wins
                merged["type"] = overlay["type"]
        for name in ("constraints", "verification", "scope"):
            under = getattr(header.defaults, name)
            if name == "constraints" and overlay["constraints"]:
                under = {**(under or {}), **overlay["constraints"]}  # the file over the defaults
            merged[name] = _merge(under, raw.get(name))
            if merged[name] is None:
                del merged[name]
        agents.append(agent.task_agent() if agent is not None else None)
        try:
            tasks.append(BatchTask.model_validate(merged))
        except ValidationError as exc:
            err = first_error(exc)
            loc = task_loc + [p for p in err["loc"] if isinstance(p, (int, str))]
            if err["type"] == "extra_forbidden":
                node = key_node(root, loc)
            else:
                node = node_at(root, loc)[0]
            detail = dict(err)
            detail["loc"] = tuple(loc)
            raise _fail(path, yaml_line(node), describe_error(detail)) from exc
    ids: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.id in ids:
            node = node_at(root, ["tasks", index, "id"])[0]
            raise _fail(path, yaml_line(node), f"duplicate task id {task.id!r}")
        ids[task.id] = index
    specs = [t.to_spec(a) for t, a in zip(tasks, agents, strict=True)]
    for index, spec in enumerate(specs):
        if spec.agent is not None:
            where = spec.agent.path or path
            try:
                check_agent_tools(spec, where)
            except AirException as exc:
                line = yaml_line(node_at(root, ["tasks", index, "agent"])[0])
                raise _located(exc, path, line) from None
    for index, spec in enumerate(specs):
        size = len(spec.model_dump_json().encode("utf-8"))
        if size > TASK_SPEC_BYTES:
            node = node_at(root, ["tasks", index])[0]
            raise _fail(
                path,
                yaml_line(node),
                f"task {spec.id!r} is {size} bytes as JSON; a task must fit one worker message "
                f"({TASK_SPEC_BYTES} bytes): put long text in a file and name it",
            )
    for index, task in enumerate(tasks):
        for field_name, targets in (
            ("depends_on", list(task.depends_on)),
            ("dependencies", [d.depends_on_task_id for d in task.dependencies]),
        ):
            for j, target in enumerate(targets):
                if target not in ids:
                    dep_loc: list[int | str] = ["tasks", index, field_name, j]
                    if field_name == "dependencies":
                        dep_loc.append("depends_on_task_id")
                    node = node_at(root, dep_loc)[0]
                    raise _fail(
                        path,
                        yaml_line(node),
                        f"task {task.id!r} depends on unknown task {target!r}",
                    )
                if target == task.id:
                    node = node_at(root, ["tasks", index, field_name, j])[0]
                    raise _fail(path, yaml_line(node), f"task {task.id!r} depends on itself")
    gating = [
        (s.id, d.depends_on_task_id)
        for s in specs
        for d in s.dependencies
        if d.dependency_type in (DependencyType.HARD, DependencyType.SERIALIZATION)
    ]
    forks = [i for i, s in enumerate(specs) if s.context == "fork"]
    if len(forks) > 1:  # one task per batch may fork the conversation (IMPL-FORK-1)
        node = node_at(root, ["tasks", forks[1], "context"])[0]
        names = ", ".join(specs[i].id for i in forks)
        raise _fail(path, yaml_line(node), f"tasks {names} have context: fork; one task may")
    cycle = find_cycle(gating)
    if cycle:
        node = node_at(root, ["tasks", ids[cycle[0]]])[0]
        raise _fail(path, yaml_line(node), "dependency cycle: " + " -> ".join(cycle))
    return LoadedBatch(path=path, name=header.name, specs=specs, warnings=warnings)


def _agent_of(
    raw: dict[str, Any], path: str, line: int | None, root: str | None
) -> tuple[Any, list[str]]:
    """The agent file a raw task names (None: none) and the files skipped on the way; the
    file's own values are checked first (against the batch limits, naming the file).

    Raises:
        AirException: the file's problem (not found, bad frontmatter, untrusted project,
            values out of range), its kind kept, the batch file's line in front.
    """
    name = raw.get("agent")
    if not isinstance(name, str):
        return None, []  # no agent, or a wrong type: BatchTask's validation says so
    try:
        agent, skipped = find_agent(name, root)
        RequestedConstraints.model_validate(agent_overlay(agent)["constraints"])
    except ValidationError as exc:
        raise _fail(agent.path, None, describe_error(dict(first_error(exc)))) from None
    except AirException as exc:
        raise _located(exc, path, line, "agent: ") from None
    return agent, skipped


def _located(exc: AirException, path: str, line: int | None, what: str = "") -> AirException:
    """``exc`` (an agent file's problem) with the batch file's line in front, kind and what to
    do kept."""
    where = f"{path}:{line}" if line is not None else path
    return AirException.of(
        kind=exc.kind,
        message=f"{where}: {what}{exc.error.message}",
        user_action=exc.user_action or "",
        metadata={**(exc.error.metadata or {}), "file": path, "line": line},
    )


def prompt_batch(prompt: str) -> LoadedBatch:
    """``air -p PROMPT``: a batch of one task (id ``prompt``) whose description is the prompt
    and whose title is its first line, validated like any batch file.

    Raises:
        AirException: ``validation_error`` for an empty prompt or one a task cannot hold.
    """
    text = prompt.strip()
    if not text:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message="the prompt is empty",
            user_action='Say what the task is, e.g. air -p "fix the failing test".',
            metadata={"file": "<prompt>", "line": None, "reason": "empty prompt"},
        )
    title = " ".join(text.splitlines()[0].split())
    if len(title) > 72:
        title = title[:71].rstrip() + "…"
    task = {"id": "prompt", "title": title, "description": text}
    return load_batch_text(json.dumps({"tasks": [task]}), "<prompt>")


def load_batch(path: str | os.PathLike[str], project_root: str | None = None) -> LoadedBatch:
    """Read and validate a batch file (see ``load_batch_text``, ``project_root`` too); ``-``
    reads it from stdin.

    Raises:
        AirException: ``validation_error`` for bad content, ``not_found`` for a missing file.
    """
    name = os.fspath(path)
    if name == "-":
        text = sys.stdin.read(MAX_BATCH_BYTES + 1)
        if len(text) > MAX_BATCH_BYTES:
            raise _fail("<stdin>", None, f"a batch has at most {MAX_BATCH_BYTES} bytes (8 MiB)")
        return load_batch_text(text, "<stdin>", project_root)
    try:
        # a regular file only (a FIFO would block the read forever), at most 8 MiB, unread else
        text = read_small(name, MAX_BATCH_BYTES).decode("utf-8")
    except FileNotFoundError as exc:
        raise AirException.of(
            kind=ErrorKind.NOT_FOUND,
            message=f"{name}: no such batch file",
            user_action="Check the path of the batch file.",
            metadata={"file": name, "line": None, "reason": "no such file"},
        ) from exc
    except UnicodeDecodeError as exc:
        raise _fail(name, None, f"not UTF-8 text (byte {exc.start}): a batch file is YAML") from exc
    except OSError as exc:
        raise _fail(name, None, f"cannot read the file: {exc.strerror or exc}") from exc
    return load_batch_text(text, name, project_root)


def schema_text() -> str:
    """The schema as the JSON text stored in the package."""
    return json.dumps(batch_json_schema(), indent=2, sort_keys=True) + "\n"
