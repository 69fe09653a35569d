"""The ContextPack of a worker attempt: what its first model request carries (SDD §10.1, BL §14).

Owns ``WorkerContextBuilder``: for one supervised attempt it runs the ContextAssembler (L0-L9,
budget fitting) with the session's readers (evidence, tool and command runs, earlier failed
attempts, conversation) and turns the result into the ``ContextPack`` sent in ``agent.start``:
``system_prompt`` = L0-L3, ``messages`` = the one user message holding L4-L9, ``notes`` = one
line per omitted layer (IMPL-CTX-6); a ``context: fork`` task's ``messages`` start with a copy of
the Main Agent's conversation (``air.context.fork``, IMPL-FORK-1). ``context_budget`` sizes the
budget from the model's window.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from air.context.assembler import ArtifactTextReader, ContextAssembler
from air.context.fork import fork_messages, fork_point, forked_conversation
from air.context.loader import PromptLayerLoader
from air.context.session_rows import SessionReaders, readers_from_store
from air.contracts.error import AirException
from air.contracts.ids import SessionID
from air.contracts.project import ProjectContext
from air.contracts.runtime import (
    AssembledContext,
    ContextAssembleInput,
    ContextPack,
    ContextPackRefs,
    LayerOmission,
    PromptLayerLevel,
)
from air.contracts.task import AGENT_TYPE_FOR_TASK, TaskSpec

__all__ = [
    "Attempt",
    "WorkerContextBuilder",
    "artifact_text_reader",
    "context_budget",
    "omission_note",
]

_MIN_BUDGET = 2_000
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_MAX_OUTPUT_TOKENS = 4_096


class Attempt(Protocol):
    """What the builder reads of a supervised attempt (``SuperviseRequest`` has it)."""

    @property
    def session_id(self) -> SessionID: ...

    @property
    def project_id(self) -> str: ...

    @property
    def task_spec(self) -> TaskSpec: ...

    @property
    def attempt_index(self) -> int: ...


def context_budget(context_window: int, max_output_tokens: int) -> int:
    """The token budget of a worker's first context (IMPL-CTX-6): half of what the window leaves
    after the reply, so the turns that follow (tool results, answers) still fit."""
    return max(_MIN_BUDGET, (context_window - max_output_tokens) // 2)


def omission_note(omission: LayerOmission) -> str:
    """One line of ``ContextPack.notes`` for a layer left out."""
    ref = f" {omission.source_ref}" if omission.source_ref else ""
    return (
        f"omitted {omission.level.value}{ref} ({omission.token_estimate} tokens): {omission.reason}"
    )


class WorkerContextBuilder:
    """Builds the ContextPack of each worker attempt; an async callable usable as the
    WorkerManager's ``context`` provider.

    Args:
        project: the project whose rules, instruction files and documents are read.
        readers: the session's row readers (``readers_from_store(session.store)``).
        artifact_reader: resolves artifact refs of ``context_refs``.
        role_prompt_dir: the worker role prompts (the roles package's ``prompts/``).
        token_budget: the budget of the assembled context (``context_budget``).
        user_air_dir: the user's ``~/.air`` (for ``permissions.yaml``).
    """

    def __init__(
        self,
        *,
        project: ProjectContext,
        readers: SessionReaders,
        token_budget: int,
        artifact_reader: ArtifactTextReader | None = None,
        role_prompt_dir: str | os.PathLike[str] | None = None,
        user_air_dir: str | os.PathLike[str] | None = None,
        document_refusal: Callable[[Path], str | None] | None = None,
        fixed_rules: bool = False,
    ) -> None:
        self.token_budget = token_budget
        self.last: AssembledContext | None = None
        self._readers = readers
        self._assembler = ContextAssembler(
            project=project,
            loader=PromptLayerLoader(role_prompt_dir=role_prompt_dir),
            readers=readers,
            artifact_reader=artifact_reader,
            user_air_dir=user_air_dir,
            document_refusal=document_refusal,
        )
        if fixed_rules:
            self._assembler.fix_rules()

    @classmethod
    def for_session(
        cls,
        session: Any,
        *,
        role_prompt_dir: str | os.PathLike[str] | None,
        context_window: int | None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        document_refusal: Callable[[Path], str | None] | None = None,
        fixed_rules: bool = False,
    ) -> WorkerContextBuilder:
        """A builder over an open session (``store``, ``project``, ``artifacts``).

        Args:
            context_window: the window of the run's model; ``None`` (a cassette replay, whose
                model has none) takes ``DEFAULT_CONTEXT_WINDOW``.
            document_refusal: ``ContextAssembler``'s check of a plan/architecture document.
            fixed_rules: the rules files read once, now, for every attempt
                (``ContextAssembler.fix_rules``).
        """
        artifacts = getattr(session, "artifacts", None)
        return cls(
            project=session.project,
            readers=readers_from_store(session.store),
            token_budget=context_budget(
                context_window or DEFAULT_CONTEXT_WINDOW, max_output_tokens
            ),
            artifact_reader=artifact_text_reader(artifacts.read, artifacts.get_by_uri)
            if artifacts is not None
            else None,
            role_prompt_dir=role_prompt_dir,
            document_refusal=document_refusal,
            fixed_rules=fixed_rules,
        )

    def build(self, attempt: Attempt) -> ContextPack:
        """Assemble and fit the context of ``attempt``.

        Raises:
            AirException: ``config_error`` / ``validation_error`` from the assembler (an
                unreadable rules file, a document ref outside the project, ...).
        """
        spec = attempt.task_spec
        assembled = self._assembler.assemble_now(
            ContextAssembleInput(
                session_id=attempt.session_id,
                project_id=attempt.project_id,
                purpose="worker",
                agent_type=AGENT_TYPE_FOR_TASK[spec.type],
                task_spec=spec,
                token_budget=self.token_budget,
            )
        )
        self.last = assembled
        notes = [omission_note(o) for o in assembled.omitted]
        if assembled.compaction_requested:
            notes.append("compaction requested: required layers did not fit the budget")
        refs = spec.context_refs
        return ContextPack(
            refs=ContextPackRefs(
                plan_ref=refs.plan_ref,
                arc_ref=refs.arc_ref,
                artifact_refs=list(refs.artifacts) if refs.artifacts else None,
                rule_refs=[
                    layer.source_ref
                    for layer in assembled.layers
                    if layer.level is PromptLayerLevel.PROJECT_RULES and layer.source_ref
                ]
                or None,
            ),
            assembled_context_ref=assembled.messages_artifact_id,
            notes=notes or None,
            system_prompt=assembled.system,
            messages=self._forked(attempt, assembled.messages)
            if spec.context == "fork"
            else assembled.messages,
        )

    def _forked(self, attempt: Attempt, own: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A ``context: fork`` task's first messages: the Main Agent's conversation as it was
        when the task was created, then the task (IMPL-FORK-1)."""
        spec = attempt.task_spec
        until = fork_point(self._readers, spec.id)
        forked = forked_conversation(self._readers, attempt.session_id, until)
        return fork_messages(forked, own, spec)

    async def __call__(self, attempt: Attempt) -> ContextPack:
        return self.build(attempt)


def artifact_text_reader(
    read: Callable[[str], Any], resolve: Callable[[str], Any]
) -> ArtifactTextReader:
    """An ArtifactTextReader over an ArtifactStore's ``read`` and ``get_by_uri``."""

    def reader(ref: str) -> str | None:
        artifact_id = ref
        if ref.startswith("artifact://"):
            found = resolve(ref)
            if found is None:
                return None
            artifact_id = found.artifact_id
        try:
            content = read(artifact_id).content
        except AirException:  # not_found: reported by the assembler as an omission
            return None
        return bytes(content).decode("utf-8", "replace")

    return reader
