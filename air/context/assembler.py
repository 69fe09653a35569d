"""ContextAssembler: builds the Anthropic-canonical context of one model call (SDD §10.1).

Owns assembling the layers the loader does not (L2 safety, L4 architecture and plan documents,
L6 evidence of the task and of its dependencies, L7 recent conversation, L8 tool output and the
failures of earlier attempts, L9 the immediate instruction), omission reporting, the compaction
request, the rendering into ``system`` + ``messages``, and writing a large context to a
messages artifact through an injected writer. Budget fitting is ``air.context.budget``, the
session rows ``air.context.session_rows``, their text ``air.context.row_text``, the safety
text ``air.context.safety``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from air.context.budget import fit_budget, render_layer
from air.context.compaction import CompactionRules, load_compaction_rules, message_text
from air.context.loader import (
    DEFAULT_LAYER_PRIORITIES,
    IMMUTABLE_LEVELS,
    PromptLayerLoader,
    read_text_file,
)
from air.context.row_text import (
    command_ref,
    cut_text,
    failure_evidence,
    render_blocks,
    render_command_run,
)
from air.context.safety import safety_text
from air.context.session_rows import SessionReaders, maybe_json, row_value
from air.context.tokens import estimate_tokens
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import ArtifactID, SessionID, TaskID
from air.contracts.project import ProjectContext
from air.contracts.runtime import (
    AgentType,
    AssembledContext,
    ContextAssembleInput,
    LayerOmission,
    PromptLayer,
    PromptLayerLevel,
)
from air.contracts.task import TaskSpec
from air.tree_walk import walk_files

__all__ = ["SYSTEM_LEVELS", "ArtifactTextReader", "ArtifactWriter", "ContextAssembler"]

ArtifactTextReader = Callable[[str], str | None]
"""Returns the text of an artifact (by id or ``artifact://`` URI), or None when unknown."""
ArtifactWriter = Callable[[bytes, str], ArtifactID]
"""Stores ``content`` (JSON bytes) as an artifact with the given slug; returns its id."""

SYSTEM_LEVELS = frozenset(
    {
        PromptLayerLevel.RUNTIME_INVARIANT,
        PromptLayerLevel.ROLE,
        PromptLayerLevel.SAFETY,
        PromptLayerLevel.PROJECT_RULES,
    }
)
"""IMPL-CTX-2: these go into ``system``; the rest into one user message, in level order."""

_LEVEL_ORDER = {level: index for index, level in enumerate(PromptLayerLevel)}
_REQUIRED_MUTABLE = frozenset(
    {PromptLayerLevel.TASK_SPEC, PromptLayerLevel.USER_OVERRIDE, PromptLayerLevel.SYSTEM_DEBUG}
)


class ContextAssembler:
    """Builds AssembledContext values for one project (SDD §10.1).

    Args:
        project: the project whose rules, permission file and documents are read.
        loader: the PromptLayerLoader (a default one uses the built-in role prompts).
        readers: session row readers (messages, tool runs, command runs, evidence).
        artifact_reader: resolves artifact refs (L6, and ``artifact://`` plan/arc refs).
        artifact_writer: stores a large context; without it large contexts stay inline.
        user_air_dir: the user's ``~/.air`` (for ``permissions.yaml``); default ``~/.air``.
        conversation_limit: at most this many recent messages are candidates for L7.
        tool_output_limit: at most this many recent tool/command runs are candidates for L8.
        inline_limit_tokens: above this estimate the context goes to a messages artifact.
        priorities: overrides of the default priority per level.
        document_refusal: why a plan/architecture document, rules or instruction file (its real
            path in the project) may not reach a prompt (a credential, git's or air's own
            state), or None when it may; the runtime hands in the permission engine's path
            classes. Without it, any file of the project may.
    The rules and instruction files are read for each context, or once for all with
    ``fix_rules`` (a run's: as the user trusted them when it began, IMPL-TRUST-1).
    """

    def __init__(
        self,
        *,
        project: ProjectContext,
        loader: PromptLayerLoader | None = None,
        readers: SessionReaders | None = None,
        artifact_reader: ArtifactTextReader | None = None,
        artifact_writer: ArtifactWriter | None = None,
        user_air_dir: str | os.PathLike[str] | None = None,
        conversation_limit: int = 20,
        tool_output_limit: int = 20,
        inline_limit_tokens: int = 32_000,
        priorities: Mapping[PromptLayerLevel, int] | None = None,
        document_refusal: Callable[[Path], str | None] | None = None,
    ) -> None:
        self._project = project
        self._document_refusal = document_refusal
        self._rules: list[PromptLayer] | AirException | None = None
        self._loader = loader or PromptLayerLoader()
        self._readers = readers or SessionReaders()
        self._artifact_reader = artifact_reader
        self._artifact_writer = artifact_writer
        self._user_air_dir = (
            Path(user_air_dir) if user_air_dir is not None else Path.home() / ".air"
        )
        self._conversation_limit = conversation_limit
        self._tool_output_limit = tool_output_limit
        self._inline_limit_tokens = inline_limit_tokens
        self._priorities = {**DEFAULT_LAYER_PRIORITIES, **(priorities or {})}
        self._compaction_rules: CompactionRules | None = None

    def fix_rules(self) -> None:
        """Read the rules and instruction files now and give every later context these layers
        (or this read's error). Found: read again for every worker attempt, a file changed
        while the run went on (a `git pull` in another terminal, a task allowed to edit
        AGENTS.md) reached the next prompts untrusted; a change now waits for the next run,
        whose trust check asks about it."""
        try:
            self._rules = self._loader.load_project_rules(self._project, self._document_refusal)
        except AirException as exc:
            self._rules = exc

    async def assemble(self, input: ContextAssembleInput) -> AssembledContext:
        """Assemble, fit and render the context (SDD §10.1). See ``assemble_now``."""
        return self.assemble_now(input)

    def assemble_now(self, input: ContextAssembleInput) -> AssembledContext:
        """Synchronous ``assemble``: all reads are local files and the session DB.

        Raises:
            AirException: ``validation_error`` for a bad task spec, budget or document ref;
                ``config_error`` for an unreadable permission or rules file.
        """
        if input.token_budget < 0:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"token_budget must be >= 0, got {input.token_budget}",
                user_action="Pass a non-negative token budget.",
            )
        spec = self._task_spec(input.task_spec)
        layers, omissions = self.load_layers(input, spec)
        fit = fit_budget(layers, input.token_budget)
        compaction = (
            fit.over_budget
            or bool(fit.dropped_levels & _REQUIRED_MUTABLE)
            or PromptLayerLevel.CONVERSATION in fit.dropped_levels
            or self.history_needs_compaction(input.session_id, input.token_budget)
        )
        ordered = sorted(
            enumerate(fit.kept), key=lambda pair: (_LEVEL_ORDER[pair[1].level], pair[0])
        )
        kept = [layer for _, layer in ordered]
        system = "\n\n".join(render_layer(layer) for layer in kept if layer.level in SYSTEM_LEVELS)
        blocks = [
            {"type": "text", "text": render_layer(layer)}
            for layer in kept
            if layer.level not in SYSTEM_LEVELS
        ]
        messages: list[dict[str, Any]] = [{"role": "user", "content": blocks}] if blocks else []
        artifact_id: ArtifactID | None = None
        if self._artifact_writer is not None and fit.token_estimate > self._inline_limit_tokens:
            payload = {"canonical_format": "anthropic", "system": system, "messages": messages}
            artifact_id = self._artifact_writer(
                json.dumps(payload, ensure_ascii=False).encode("utf-8"), "context-messages"
            )
            messages = []
            kept = [layer.model_copy(update={"content": None}) for layer in kept]
        return AssembledContext(
            system=system,
            messages=messages,
            layers=kept,
            token_estimate=fit.token_estimate,
            omitted=[*omissions, *fit.omitted],
            messages_artifact_id=artifact_id,
            compaction_requested=compaction,
        )

    # -- layer loading ---------------------------------------------------------------------

    def _task_spec(self, value: Any) -> TaskSpec | None:
        if value is None or isinstance(value, TaskSpec):
            return value
        try:
            return TaskSpec.model_validate(value)
        except ValidationError as exc:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message="the task_spec given to the context assembler is not a valid TaskSpec",
                detail=str(exc),
                user_action="Pass a TaskSpec (or its JSON form) that validates.",
            ) from exc

    def _layer(self, level: PromptLayerLevel, content: str, source_ref: str | None) -> PromptLayer:
        layer = PromptLayer(
            level=level,
            priority=self._priorities[level],
            content=content,
            source_ref=source_ref,
            immutable=level in IMMUTABLE_LEVELS,
        )
        return layer.model_copy(update={"token_estimate": estimate_tokens(render_layer(layer))})

    def _adopt(self, layer: PromptLayer) -> PromptLayer:
        """Re-price a loader layer by its rendered size and apply the priority overrides."""
        adopted = layer.model_copy(
            update={
                "priority": self._priorities.get(layer.level, layer.priority),
                "immutable": layer.level in IMMUTABLE_LEVELS or bool(layer.immutable),
            }
        )
        return adopted.model_copy(update={"token_estimate": estimate_tokens(render_layer(adopted))})

    def load_layers(
        self, input: ContextAssembleInput, spec: TaskSpec | None = None
    ) -> tuple[list[PromptLayer], list[LayerOmission]]:
        """All candidate layers L0-L9 in level order, and refs that could not be loaded."""
        layers: list[PromptLayer] = []
        omissions: list[LayerOmission] = []
        layers.append(self._adopt(self._loader.load_runtime_invariant()))
        if input.role_prompt and input.role_prompt.strip():
            layers.append(
                self._layer(
                    PromptLayerLevel.ROLE, input.role_prompt.strip(), f"runtime:{input.purpose}"
                )
            )
        elif input.agent_type is not None:
            layers.append(self._adopt(self._loader.load_role(input.agent_type)))
        agent = spec.agent if spec is not None else None
        if agent is not None and agent.persona.strip():  # IMPL-AGENTFILE-1: the file's persona
            layers.append(
                self._layer(PromptLayerLevel.ROLE, agent.persona.strip(), f"agent:{agent.name}")
            )
        layers.append(self._safety_layer(input.agent_type))
        rules = self._rules
        if rules is None:
            rules = self._loader.load_project_rules(self._project, self._document_refusal)
        elif isinstance(rules, AirException):
            raise rules.with_traceback(None)  # as each context raised it: every attempt fails
        layers.extend(self._adopt(x) for x in rules)
        if spec is not None:
            for label, ref in (
                ("architecture", spec.context_refs.arc_ref),
                ("plan", spec.context_refs.plan_ref),
            ):
                if not ref:
                    continue
                doc = self._resolve_doc(ref)
                if doc is None:
                    omissions.append(
                        LayerOmission(
                            level=PromptLayerLevel.ARCHITECTURE,
                            source_ref=ref,
                            token_estimate=0,
                            reason=f"not_found: {label} document {ref!r}",
                        )
                    )
                else:
                    source, text = doc
                    layers.append(self._layer(PromptLayerLevel.ARCHITECTURE, text, source))
            layers.extend(
                self._adopt(x) for x in self._loader.load_task_context(spec, spec.context_refs)
            )
            layers.extend(self._evidence_layers(spec, omissions))
        if spec is None or spec.context != "fork":  # a fork carries the conversation itself
            layers.extend(self._conversation_layers(input.session_id))
        if spec is not None:
            layers.extend(self._tool_output_layers(spec.id))
        instruction = self._instruction(spec, input.user_instruction)
        if instruction:
            source = f"task:{spec.id}:instruction" if spec is not None else "user"
            layers.append(self._layer(PromptLayerLevel.USER_OVERRIDE, instruction, source))
        if input.system_debug and input.system_debug.strip():
            layers.append(
                self._layer(PromptLayerLevel.SYSTEM_DEBUG, input.system_debug.strip(), "system")
            )
        return layers, omissions

    def _safety_layer(self, agent_type: AgentType | None) -> PromptLayer:
        files = [
            ("~/.air/permissions.yaml", self._user_air_dir / "permissions.yaml"),
            (".air/shared/permissions.yaml", Path(self._project.shared_root) / "permissions.yaml"),
        ]
        return self._layer(PromptLayerLevel.SAFETY, safety_text(agent_type, files), "permissions")

    def _may_read(self, real: Path, ref: str) -> Path:
        """``real`` when ``document_refusal`` lets it reach a prompt; else refused."""
        why = self._document_refusal(real) if self._document_refusal is not None else None
        if why is not None:
            raise AirException.of(
                kind=ErrorKind.PERMISSION_DENIED,
                message=f"context reference {ref!r}: {real} is no document for a prompt ({why})",
                user_action="Point arc_ref/plan_ref at the project's own documents.",
            )
        return real

    def _resolve_doc(self, ref: str) -> tuple[str, str] | None:
        """Resolve a plan/architecture ref: an artifact, or a file/directory in the project."""
        if ref.startswith(("artifact://", "art_")):
            if self._artifact_reader is None:
                return None
            text = self._artifact_reader(ref)
            return (ref, text) if text is not None else None
        root = Path(os.path.realpath(self._project.project_root))
        raw = Path(ref).expanduser()
        candidates = (
            [raw]
            if raw.is_absolute()
            else [root / raw, Path(self._project.shared_root) / "plan" / raw]
        )
        for candidate in candidates:
            real = _inside(root, candidate, ref)
            if real.is_file():
                self._may_read(real, ref)
                return os.path.relpath(real, root), read_text_file(real, exact=True).strip()
            if real.is_dir():
                # a document of the directory is read where it really is: a link named *.md
                # that leads out of the project is refused like a reference that does
                docs = [
                    self._may_read(_inside(root, doc, ref), ref)
                    for doc in sorted(map(Path, walk_files(str(real), ".md")))
                ]
                parts = [
                    f"### {os.path.relpath(doc, root)}\n{read_text_file(doc, exact=True).strip()}"
                    for doc in docs
                    if doc.is_file()
                ]
                if parts:
                    return os.path.relpath(real, root), "\n\n".join(parts)
        return None

    def _evidence_layers(
        self, spec: TaskSpec, omissions: list[LayerOmission]
    ) -> Iterable[PromptLayer]:
        for ref in spec.context_refs.artifacts or []:
            text = self._artifact_reader(ref) if self._artifact_reader is not None else None
            if text is None:
                reason = "not_found" if self._artifact_reader is not None else "no_artifact_reader"
                omissions.append(
                    LayerOmission(
                        level=PromptLayerLevel.EVIDENCE,
                        source_ref=ref,
                        token_estimate=0,
                        reason=f"{reason}: artifact {ref!r}",
                    )
                )
                continue
            yield self._layer(PromptLayerLevel.EVIDENCE, text, ref)
        if self._readers.evidence is None:
            return
        sources = [(spec.id, "this task")] + [
            (dep.depends_on_task_id, f"task {dep.depends_on_task_id}, a dependency of this task")
            for dep in spec.dependencies
        ]
        for task_id, label in sources:
            lines = []
            for row in self._readers.evidence("task", task_id):
                kind = row_value(row, "kind")
                kind_text = getattr(kind, "value", kind)
                lines.append(f"- [{kind_text}] {row_value(row, 'claim')} ({row_value(row, 'ref')})")
            if lines:
                yield self._layer(
                    PromptLayerLevel.EVIDENCE,
                    f"Evidence recorded for {label}:\n" + "\n".join(lines),
                    f"evidence:task:{task_id}",
                )

    # -- L7 and the early compaction request (IMPL-ARCH-4) -------------------------------

    def compaction_rules(self) -> CompactionRules:
        """The merged compaction rules of the project (read once)."""
        if self._compaction_rules is None:
            self._compaction_rules = load_compaction_rules(
                user_air_dir=self._user_air_dir, project=self._project
            )
        return self._compaction_rules

    def _history(self, session_id: SessionID) -> tuple[Any | None, list[Any]]:
        """The latest summary and the messages after the range it covers."""
        rows = list(self._readers.messages(session_id)) if self._readers.messages else []
        summaries = list(self._readers.summaries(session_id)) if self._readers.summaries else []
        summary = summaries[-1] if summaries else None
        cut = row_value(summary, "covers_until_message_id") if summary is not None else None
        ids = [row_value(r, "id", "message_id") for r in rows]
        if cut in ids:
            rows = rows[ids.index(cut) + 1 :]
        return summary, rows

    def history_needs_compaction(self, session_id: SessionID, token_budget: int) -> bool:
        """True once the conversation not yet summarised reaches ``trigger_ratio`` of the
        budget: compaction is asked for before a request would overflow, not after."""
        if self._readers.messages is None or token_budget <= 0:
            return False
        _, rows = self._history(session_id)
        used = sum(
            estimate_tokens(
                message_text(
                    {
                        "role": row_value(r, "role"),
                        "content_json": row_value(r, "content_json", "content"),
                    }
                )
            )
            for r in rows
        )
        return used >= self.compaction_rules().trigger_ratio * token_budget

    def _conversation_layers(self, session_id: SessionID) -> Iterable[PromptLayer]:
        if self._readers.messages is None or self._conversation_limit <= 0:
            return
        summary, rows = self._history(session_id)
        if summary is not None:
            layer = self._layer(
                PromptLayerLevel.CONVERSATION,
                "Summary of the earlier conversation (originals kept in history):\n"
                + str(row_value(summary, "content")),
                f"summary:{row_value(summary, 'summary_id')}",
            )
            # the summary stands for the whole older range: it outlives single messages
            priority = self._priorities[PromptLayerLevel.CONVERSATION] + 50
            yield layer.model_copy(update={"priority": priority})
        rows = rows[-self._conversation_limit :]
        for row in rows:
            content = maybe_json(row_value(row, "content", "content_json"))
            text = render_blocks(content) if content is not None else ""
            if not text.strip():
                continue
            role = row_value(row, "role") or "unknown"
            message_id = row_value(row, "id", "message_id")
            yield self._layer(
                PromptLayerLevel.CONVERSATION,
                f"{role}: {text}",
                f"message:{message_id}" if message_id else None,
            )

    def _failure_layers(self, task_id: TaskID) -> Iterable[PromptLayer]:
        """L8: each earlier attempt of the task that failed, with its error (IMPL-CTX-6)."""
        if self._readers.attempts is None:
            return
        for row in self._readers.attempts(task_id):
            if row_value(row, "status") != "failed":
                continue
            index = row_value(row, "attempt_index")
            error = maybe_json(row_value(row, "failure_error_json"))
            error = error if isinstance(error, Mapping) else {}
            message = row_value(row, "failure_message") or error.get("message") or "no message"
            kind = row_value(row, "failure_kind") or error.get("kind") or "unknown"
            text = f"Attempt {index} of this task failed ({kind}): {message}"
            for key, label in (("detail", "detail"), ("user_action", "what to do")):
                if error.get(key):
                    text += f"\n{label}: {cut_text(str(error[key]))}"
            text += failure_evidence(error.get("metadata"))
            text += "\nAvoid repeating what made it fail."
            layer = self._layer(PromptLayerLevel.TOOL_OUTPUT, text, f"attempt:{task_id}:{index}")
            # the failure is what a retry must not lose: it outranks the bulky tool history
            yield layer.model_copy(
                update={"priority": self._priorities[PromptLayerLevel.TASK_SPEC] - 10}
            )

    def _tool_output_layers(self, task_id: TaskID) -> Iterable[PromptLayer]:
        yield from self._failure_layers(task_id)
        if self._tool_output_limit <= 0:
            return
        entries: list[tuple[str, int, str, str | None]] = []
        if self._readers.tool_runs is not None:
            for row in self._readers.tool_runs(task_id):
                text = f"tool {row_value(row, 'tool_name')} [{row_value(row, 'status')}]"
                duration = row_value(row, "duration_ms")
                if duration is not None:
                    text += f" {duration} ms"
                summary = row_value(row, "output_summary", "output")
                if summary:
                    text += ":\n" + cut_text(str(summary))
                error = maybe_json(row_value(row, "error_json", "error"))
                if isinstance(error, Mapping) and error.get("message"):
                    text += f"\nerror: {error['message']}"
                rid = row_value(row, "id", "tool_run_id")
                entries.append(
                    (
                        str(row_value(row, "started_at") or ""),
                        len(entries),
                        text,
                        f"tool_run:{rid}" if rid else None,
                    )
                )
        if self._readers.command_runs is not None:
            for row in self._readers.command_runs(task_id):
                entries.append(
                    (
                        str(row_value(row, "started_at") or ""),
                        len(entries),
                        render_command_run(row),
                        command_ref(row),
                    )
                )
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        for _, _, text, ref in entries[-self._tool_output_limit :]:
            yield self._layer(PromptLayerLevel.TOOL_OUTPUT, text, ref)

    @staticmethod
    def _instruction(spec: TaskSpec | None, user_instruction: str | None) -> str:
        parts: list[str] = []
        if spec is not None:
            parts.append(spec.description.strip())
            if spec.acceptance_criteria:
                parts.append(
                    "Acceptance criteria:\n"
                    + "\n".join(f"- {item}" for item in spec.acceptance_criteria)
                )
        if user_instruction and user_instruction.strip():
            parts.append("Instruction: " + user_instruction.strip())
        return "\n\n".join(part for part in parts if part)


def _inside(root: Path, path: Path, ref: str) -> Path:
    """``path`` resolved (links followed); refused unless it lies in the project ``root``."""
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"context reference {ref!r} points outside the project ({path} -> {real})",
            user_action="Point arc_ref/plan_ref at documents inside the project (no links out).",
        )
    return real
