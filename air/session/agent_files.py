"""Named agent files (runner contract ``agents.ts``, invariant 24; IMPL-AGENTFILE-1).

Owns where agent files live (``<project>/.air/agents/NAME.md`` over ``~/.air/agents/NAME.md``),
their format (YAML frontmatter between ``---`` lines, then a markdown persona body), reading
them (``scan_agents`` for every one, ``find_agent`` for one name) and what a file gives a task
(``agent_overlay``). Nothing is cached: every call reads the directories again, so a file added
mid-session is seen at its first use. A symbolic link, a file over ``MAX_AGENT_BYTES``, or a
name air cannot use is skipped with a warning; a file with a bad frontmatter is a warning when
listing and an ``AirException(validation_error)`` when a task names it. A project's agent
files are project configuration (IMPL-TRUST-1): one is used only while the project's set of
widening files is trusted (``require_trust``), so a file added after the trust is refused.

Frontmatter fields: ``description``, ``role`` (executor, reviewer, debugger, compactor,
experience_miner), ``model``, ``tools`` (narrows the role's tools; checked by
``air.nursery.agent_tools``), ``max_turns``, ``soft_timeout_ms``, ``hard_timeout_ms``,
``max_cost_usd``. Any other field is refused (fail closed).
"""

import os
import re
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import Field, ValidationError

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import Contract
from air.contracts.runtime import AgentType
from air.contracts.task import TaskAgent, TaskType
from air.small_file import NotRegular, TooLarge, read_small

__all__ = [
    "AGENT_DIR",
    "MAX_AGENT_BYTES",
    "AgentCatalog",
    "AgentFile",
    "AgentFrontmatter",
    "agent_dirs",
    "agent_overlay",
    "find_agent",
    "parse_agent",
    "scan_agents",
]

AGENT_DIR = ".air/agents"
"""The project's agent files, relative to its root (``~/.air/agents`` for the user's)."""
MAX_AGENT_BYTES = 64 * 1024
"""A larger agent file is skipped with a warning (it would crowd out the task's context)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TASK_TYPE_FOR_ROLE = {
    AgentType.EXECUTOR: TaskType.EXECUTE,
    AgentType.REVIEWER: TaskType.REVIEW,
    AgentType.DEBUGGER: TaskType.DEBUG,
    AgentType.COMPACTOR: TaskType.COMPACT,
    AgentType.EXPERIENCE_MINER: TaskType.MINE_EXPERIENCE,
}

Source = Literal["project", "user"]


class AgentFrontmatter(Contract):
    """The frontmatter of an agent file: per-field defaults for the tasks that name it."""

    description: str | None = None
    role: AgentType | None = None
    model: str | None = Field(default=None, min_length=1)
    """``provider/model`` or a model id; becomes the task's ``constraints.model_id``."""
    tools: list[str] | None = None
    max_turns: int | None = None
    soft_timeout_ms: int | None = None
    hard_timeout_ms: int | None = None
    max_cost_usd: float | None = None


class AgentFile(NamedTuple):
    name: str
    source: Source
    path: str
    front: AgentFrontmatter
    persona: str

    def task_agent(self) -> TaskAgent:
        """What a task that names this file carries to its worker."""
        return TaskAgent(
            name=self.name,
            source=self.source,
            path=self.path,
            persona=self.persona,
            tools=list(self.front.tools) if self.front.tools is not None else None,
        )


class AgentCatalog(NamedTuple):
    agents: dict[str, AgentFile]
    """By name; a project file hides the user's file of the same name."""
    warnings: list[str]
    """Files skipped (links, too large, bad names, bad frontmatter), one line each."""


def agent_dirs(project_root: str | None, home: str | None = None) -> list[tuple[Source, str]]:
    """The directories searched, first wins: the project's, then the user's."""
    user = os.path.join(home or os.path.expanduser("~"), ".air", "agents")
    dirs: list[tuple[Source, str]] = []
    if project_root is not None:
        dirs.append(("project", os.path.join(project_root, AGENT_DIR)))
    dirs.append(("user", user))
    return dirs


def _bad(path: str, reason: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.VALIDATION_ERROR,
        message=f"{path}: {reason}",
        user_action=f"Fix {path} (YAML frontmatter between --- lines, then the persona; "
        "see docs/decisions.md IMPL-AGENTFILE-1).",
        metadata={"file": path, "reason": reason},
    )


def parse_agent(text: str, path: str, name: str, source: Source) -> AgentFile:
    """An agent file's text as an ``AgentFile``.

    Raises:
        AirException: ``validation_error`` naming the file and the field.
    """
    from air.yamlload import load

    front: Any = {}
    body = text
    if text.startswith("---\n") or text.startswith("---\r\n"):
        head, sep, rest = text.split("\n", 1)[1].partition("\n---")
        if not sep:
            raise _bad(path, "the frontmatter has no closing --- line")
        body = rest.split("\n", 1)[1] if "\n" in rest else ""
        try:
            front = load(head) if head.strip() else {}
        except (yaml.YAMLError, RecursionError) as exc:
            raise _bad(
                path, f"the frontmatter is not valid YAML ({exc.__class__.__name__})"
            ) from None
        if not isinstance(front, dict):
            raise _bad(path, "the frontmatter is a mapping of fields")
    try:
        fields = AgentFrontmatter.model_validate(front)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "frontmatter"
        raise _bad(path, f"{where}: {first['msg']}") from None
    return AgentFile(name=name, source=source, path=path, front=fields, persona=body.strip())


def _read(path: str) -> tuple[str | None, str | None]:
    """(text, None) for a usable file; (None, why it is skipped) otherwise. The file is opened
    without following a link and checked on the open descriptor (``air.small_file``)."""
    try:
        data = read_small(path, MAX_AGENT_BYTES, follow=False)
    except (NotRegular, TooLarge) as exc:
        return None, f"is {exc.strerror}"
    except OSError as exc:
        if os.path.islink(path):
            return None, "is a symbolic link (never followed)"
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"


def _candidates(directory: str) -> list[str]:
    if os.path.islink(directory) or not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if n.endswith(".md"))


def scan_agents(project_root: str | None, *, home: str | None = None) -> AgentCatalog:
    """Every usable agent file now (read again on each call: nothing is cached)."""
    agents: dict[str, AgentFile] = {}
    warnings: list[str] = []
    for source, directory in agent_dirs(project_root, home):
        if os.path.islink(directory):
            warnings.append(f"{directory}: is a symbolic link (never followed); skipped")
            continue
        for file_name in _candidates(directory):
            path = os.path.join(directory, file_name)
            name = file_name[: -len(".md")]
            if not _NAME.match(name):
                warnings.append(f"{path}: {name!r} is not an agent name air can use; skipped")
                continue
            text, why = _read(path)
            if text is None:
                warnings.append(f"{path}: {why}; skipped")
                continue
            try:
                agent = parse_agent(text, path, name, source)
            except AirException as exc:
                warnings.append(f"{exc.error.message}; skipped")
                continue
            agents.setdefault(name, agent)
    return AgentCatalog(agents=agents, warnings=warnings)


def find_agent(
    name: str, project_root: str | None, *, home: str | None = None, use: bool = True
) -> tuple[AgentFile, list[str]]:
    """The agent file ``name`` (the project's before the user's), read now. ``use``: a task
    will run as it, so a project file needs the project's trust (False: only to show it).

    Returns:
        The file and the warnings about files skipped on the way.

    Raises:
        AirException: ``not_found`` for no usable file of that name (skipped ones are named);
            ``validation_error`` for a bad frontmatter; ``untrusted_config`` for a project
            file while the project's configuration is not trusted as it is now (IMPL-TRUST-1).
    """
    warnings: list[str] = []
    for source, directory in agent_dirs(project_root, home):
        path = os.path.join(directory, f"{name}.md")
        if not _NAME.match(name) or os.path.islink(directory) or not os.path.lexists(path):
            continue
        text, why = _read(path)
        if text is None:
            warnings.append(f"{path}: {why}; skipped")
            continue
        if use and source == "project" and project_root is not None:
            from air.session.trust import require_trust

            require_trust(project_root, home=home)  # the set as it is now, this file too
        return parse_agent(text, path, name, source), warnings
    known = sorted(scan_agents(project_root, home=home).agents)
    skipped = f" ({'; '.join(warnings)})" if warnings else ""
    raise AirException.of(
        kind=ErrorKind.NOT_FOUND,
        message=f"no agent file {name!r}{skipped}; known: {', '.join(known) or 'none'}",
        user_action=(
            f"Create {AGENT_DIR}/{name}.md (or ~/.air/agents/{name}.md), or name one "
            if _NAME.match(name)
            else "An agent's name is its file's, NAME.md: letters, digits, '_', '.' and '-' "
            "(at most 64, a letter or digit first); name one "
        )
        + "that `air agents list` shows.",
        metadata={"agent": name},
    )


def agent_overlay(agent: AgentFile) -> dict[str, Any]:
    """What the file sets of a task, as batch-file fields (``type`` and ``constraints``): the
    task's own fields go over it, it goes over the batch's ``defaults`` (invariant 24)."""
    front = agent.front
    constraints: dict[str, Any] = {
        key: value
        for key, value in (
            ("model_id", front.model),
            ("max_turns", front.max_turns),
            ("soft_timeout_ms", front.soft_timeout_ms),
            ("hard_timeout_ms", front.hard_timeout_ms),
            ("max_cost_usd", front.max_cost_usd),
        )
        if value is not None
    }
    overlay: dict[str, Any] = {"constraints": constraints}
    if front.role is not None:
        overlay["type"] = _TASK_TYPE_FOR_ROLE[front.role].value
    return overlay
