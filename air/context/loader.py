"""PromptLayerLoader: the resource-backed prompt layers L0, L1, L3 and L5 (SDD §10.2).

Owns loading the runtime invariant (a built-in resource), the worker role prompts (from an
injected directory or callable, falling back to the built-in resources), the project rules
(``<project>/.air/shared/rules/*.md``, then the usual project instruction files ``AGENTS.md``
and ``CLAUDE.md`` at the project root) and the task-context layers built from a ``TaskSpec``.
Also owns the default priority of every layer level and ``read_text_file``, the bounded reader
all context files go through.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from air.context.tokens import estimate_tokens
from air.contracts.error import AirException, ErrorKind
from air.contracts.project import ProjectContext
from air.contracts.runtime import AgentType, PromptLayer, PromptLayerLevel
from air.contracts.task import TaskContextRefs, TaskSpec
from air.small_file import open_regular

__all__ = [
    "DEFAULT_LAYER_PRIORITIES",
    "IMMUTABLE_LEVELS",
    "MAX_FILE_CHARS",
    "PROJECT_INSTRUCTION_FILES",
    "PromptLayerLoader",
    "RolePromptSource",
    "builtin_resource",
    "read_text_file",
    "read_yaml_file",
]

RolePromptSource = Callable[[AgentType], str | None]
"""Returns the role prompt text for a worker role, or None to fall through to the next source."""

DEFAULT_LAYER_PRIORITIES: dict[PromptLayerLevel, int] = {
    PromptLayerLevel.RUNTIME_INVARIANT: 1000,
    PromptLayerLevel.ROLE: 990,
    PromptLayerLevel.SAFETY: 980,
    PromptLayerLevel.USER_OVERRIDE: 900,
    PromptLayerLevel.SYSTEM_DEBUG: 890,
    PromptLayerLevel.TASK_SPEC: 800,
    PromptLayerLevel.PROJECT_RULES: 700,
    PromptLayerLevel.ARCHITECTURE: 600,
    PromptLayerLevel.EVIDENCE: 500,
    PromptLayerLevel.TOOL_OUTPUT: 400,
    PromptLayerLevel.CONVERSATION: 300,
}
"""IMPL-CTX-1: higher wins under budget pressure. L0-L2 are immutable; the immediate
instruction and the task come next; bulky history (tool output, conversation) goes first."""

IMMUTABLE_LEVELS = frozenset(
    {PromptLayerLevel.RUNTIME_INVARIANT, PromptLayerLevel.ROLE, PromptLayerLevel.SAFETY}
)

PROJECT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
"""IMPL-CTX-6: instruction files other agents read, taken into L3 after the rules files."""

MAX_FILE_CHARS = 200_000
"""A context file longer than this is cut (with a marker); budget fitting does the rest."""


RESOURCES = Path(__file__).parent / "resources"
"""The built-in prompt resources: plain package data next to this module (setup.cfg
``package_data``), read as files (IMPL-BOOT-8: not through ``importlib.resources``)."""


def builtin_resource(name: str) -> str:
    """Return the text of ``air/context/resources/<name>``.

    Raises:
        AirException: ``environment_error`` when the installed package lacks the resource.
    """
    try:
        return (RESOURCES / name).read_text("utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise AirException.of(
            kind=ErrorKind.ENVIRONMENT_ERROR,
            message=f"built-in prompt resource {name!r} is missing",
            detail=str(exc),
            user_action="Reinstall air: the package data air/context/resources is incomplete.",
        ) from exc


def read_text_file(path: Path, *, max_chars: int = MAX_FILE_CHARS, exact: bool = False) -> str:
    """Read a UTF-8 text file for the context, cutting it at ``max_chars``: a regular file
    (``open_regular``: a FIFO put there is refused, not waited on); ``exact``: ``path`` is the
    real path its caller checked, and a link put at it, or above it, since is refused.

    Raises:
        AirException: ``config_error`` when the file cannot be read or is not UTF-8 text.
    """
    try:
        with open(open_regular(path, exact=exact), encoding="utf-8") as handle:
            text = handle.read(max_chars + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"cannot read context file {path}",
            detail=str(exc),
            user_action=f"Make {path} a readable UTF-8 text file, or remove it.",
        ) from exc
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[... cut at {max_chars} characters ...]"
    return text


def read_yaml_file(path: Path, *, user_action: str) -> object:
    """The YAML document of a configuration file (``{}`` when it is empty).

    Raises:
        AirException: ``config_error`` when it cannot be read or is not valid YAML
            (``user_action`` says what to do about the YAML).
    """
    import yaml

    from air.yamlload import load

    try:
        return load(read_text_file(path)) or {}
    except yaml.YAMLError as exc:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{path} is not valid YAML",
            detail=str(exc),
            user_action=user_action,
        ) from exc


def _layer(
    level: PromptLayerLevel, content: str, source_ref: str | None, *, priority: int | None = None
) -> PromptLayer:
    return PromptLayer(
        level=level,
        priority=DEFAULT_LAYER_PRIORITIES[level] if priority is None else priority,
        content=content,
        token_estimate=estimate_tokens(content),
        source_ref=source_ref,
        immutable=level in IMMUTABLE_LEVELS,
    )


class PromptLayerLoader:
    """Loads the prompt layers that come from resources and files (SDD §10.2).

    Args:
        role_prompt_dir: a directory holding ``<role>.md`` per worker role (the roles package
            ships ``air/roles/prompts/``; the composition root passes it in, since air.context
            may not import air.roles).
        role_prompt_source: a callable tried before the directory.
        Both fall back to the built-in ``resources/role-<role>.md``.
    """

    def __init__(
        self,
        *,
        role_prompt_dir: str | os.PathLike[str] | None = None,
        role_prompt_source: RolePromptSource | None = None,
    ) -> None:
        self._role_prompt_dir = Path(role_prompt_dir) if role_prompt_dir is not None else None
        self._role_prompt_source = role_prompt_source

    def load_runtime_invariant(self) -> PromptLayer:
        """L0: the runtime invariant, always from the built-in resource."""
        return _layer(
            PromptLayerLevel.RUNTIME_INVARIANT,
            builtin_resource("runtime_invariant.md").strip(),
            "builtin:runtime_invariant.md",
        )

    def load_role(self, role: AgentType) -> PromptLayer:
        """L1: the role prompt of a worker role (callable → directory → built-in).

        Raises:
            AirException: ``validation_error`` for a value that is not a worker role.
        """
        try:
            role = AgentType(role)
        except ValueError as exc:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"{role!r} is not a worker role",
                user_action="Use one of: " + ", ".join(a.value for a in AgentType) + ".",
            ) from exc
        if self._role_prompt_source is not None:
            text = self._role_prompt_source(role)
            if text and text.strip():
                return _layer(PromptLayerLevel.ROLE, text.strip(), f"injected:{role.value}")
        if self._role_prompt_dir is not None:
            path = self._role_prompt_dir / f"{role.value}.md"
            if path.is_file():
                text = read_text_file(path)
                if text.strip():
                    return _layer(PromptLayerLevel.ROLE, text.strip(), str(path))
        name = f"role-{role.value}.md"
        return _layer(PromptLayerLevel.ROLE, builtin_resource(name).strip(), f"builtin:{name}")

    def load_project_rules(
        self,
        project: ProjectContext,
        refusal: Callable[[Path], str | None] | None = None,
    ) -> list[PromptLayer]:
        """L3: one layer per ``<shared_root>/rules/*.md`` file, in name order, then one per
        project instruction file (``AGENTS.md``, ``CLAUDE.md`` at the project root) that
        exists; empty files are skipped. ``refusal`` (the runtime's ``document_refusal``) says
        why a file's real path may not reach a prompt (``AGENTS.md -> .env``).

        Raises:
            AirException: ``config_error`` when a rules or instruction file cannot be read,
                resolves outside the project, or leads to a file ``refusal`` refuses.
        """
        rules_dir = Path(project.shared_root) / "rules"
        paths = sorted(rules_dir.glob("*.md")) if rules_dir.is_dir() else []
        paths += [Path(project.project_root) / name for name in PROJECT_INSTRUCTION_FILES]
        root = Path(os.path.realpath(project.project_root))
        layers: list[PromptLayer] = []
        for path in paths:
            if not path.is_file():
                continue
            real = Path(os.path.realpath(path))
            if root not in real.parents:
                # a worker may write AGENTS.md; a link out of the project must not carry a
                # file such as a key into the next worker's context (and so to the provider)
                raise AirException.of(
                    kind=ErrorKind.CONFIG_ERROR,
                    message=f"{path} points outside the project (to {real})",
                    user_action=f"Replace the link {path} with a regular file, or remove it.",
                )
            # only a link can lead elsewhere (the names themselves are the user's trusted
            # files); the classes load no pydantic model before the first request otherwise
            linked = real != root / os.path.relpath(path, project.project_root)
            why = refusal(real) if refusal is not None and linked else None
            if why is not None:
                raise AirException.of(
                    kind=ErrorKind.CONFIG_ERROR,
                    message=f"{path} leads to {real}, which may not reach a prompt ({why})",
                    user_action=f"Replace the link {path} with a regular file, or remove it.",
                )
            text = read_text_file(real, exact=True).strip()  # what was checked, nothing since
            if not text:
                continue
            ref = os.path.relpath(path, project.project_root)
            layers.append(_layer(PromptLayerLevel.PROJECT_RULES, text, ref))
        return layers

    def load_task_context(self, spec: TaskSpec, refs: TaskContextRefs) -> list[PromptLayer]:
        """L5: the task specification (scope, verification, constraints, references).

        The description and acceptance criteria are the immediate instruction (L9) and are
        assembled by the ContextAssembler; this layer holds what frames the work.
        """
        lines = [
            f"Task {spec.id} ({spec.type.value}): {spec.title}",
            f"Output contract: {spec.output_contract}",
        ]
        scope = spec.scope
        if scope.write_area is not None:
            lines.append("Write area: " + (", ".join(scope.write_area) or "(nothing)"))
        else:
            lines.append("Write area: the whole project")
        if scope.expected_files:
            lines.append("Expected files: " + ", ".join(scope.expected_files))
        if scope.allowed_paths:
            lines.append("Allowed paths: " + ", ".join(scope.allowed_paths))
        if scope.denied_paths:
            lines.append("Denied paths: " + ", ".join(scope.denied_paths))
        verification = spec.verification
        if verification.commands:
            req = "required" if verification.required else "optional"
            lines.append(f"Verification ({req}):")
            lines.extend(f"  - {command}" for command in verification.commands)
            if verification.fallback_allowed:
                lines.append("  (a fallback with evidence is allowed if they cannot run)")
        constraints = spec.constraints
        lines.append(f"Budget: at most {constraints.max_turns} turns")
        if constraints.max_cost_usd is not None:
            lines.append(f"Cost budget: {constraints.max_cost_usd} USD")
        if spec.dependencies:
            lines.append(
                "Depends on: "
                + ", ".join(
                    f"{d.depends_on_task_id} ({d.dependency_type.value})" for d in spec.dependencies
                )
            )
        layers = [_layer(PromptLayerLevel.TASK_SPEC, "\n".join(lines), f"task:{spec.id}")]
        ref_lines: list[str] = []
        if refs.plan_ref:
            ref_lines.append(f"Plan: {refs.plan_ref}")
        if refs.arc_ref:
            ref_lines.append(f"Architecture: {refs.arc_ref}")
        if refs.parent_task_results:
            ref_lines.append("Results of earlier tasks: " + ", ".join(refs.parent_task_results))
        if refs.artifacts:
            ref_lines.append("Artifacts: " + ", ".join(refs.artifacts))
        if ref_lines:
            layers.append(
                _layer(
                    PromptLayerLevel.TASK_SPEC,
                    "References:\n" + "\n".join(ref_lines),
                    f"task:{spec.id}:refs",
                )
            )
        return layers
