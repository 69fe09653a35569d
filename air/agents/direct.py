"""Direct mode: the Main Agent itself changes the main workspace (SDD §14.1, §20.1 DIRECT_MODE).

Owns ``ToolPort`` (what direct mode needs of ``air.tools.registry.ToolRegistry``) and
``DirectMode``: one person's message becomes a model loop with tools, every call going through
the ToolRegistry — so through the PermissionEngine — with the ``main_direct`` template, the
project root as workspace and a write area of the main workspace only (IMPL-AGENT-5). The
streamed reply is one assistant message; Esc interrupts the loop (and the tool call in flight)
and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from air.agents.turns import TurnResult, TurnRunner
from air.contracts.ids import new_id
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    unparsed_call,
)
from air.contracts.runtime import PermissionTemplate
from air.contracts.tool import ToolCategory, ToolDefinition
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope

__all__ = ["DIRECT_CATEGORIES", "DirectMode", "ToolPort"]

DIRECT_CATEGORIES = frozenset(
    {
        ToolCategory.FILESYSTEM,
        ToolCategory.SHELL,
        ToolCategory.BUILD,
        ToolCategory.TEST,
        ToolCategory.STATIC_ANALYSIS,
        ToolCategory.PROJECT,
        ToolCategory.MCP,
    }
)
"""The tool categories offered in direct mode (no network, memory, GUI or internal tools; an
MCP server's tools are, each call asking unless a rule allows it: IMPL-MCP-2)."""

_INSTRUCTIONS = (
    "Direct mode: you make the change yourself with the tools you are given, in the main "
    "workspace ({root}) only. Read before you edit. End with a short note of what you changed."
)
_OUTPUT_CAP = 20_000


class ToolPort(Protocol):
    """What direct mode needs of ``air.tools.registry.ToolRegistry``."""

    def list(self) -> list[ToolDefinition]: ...

    async def call(
        self, name: str, input: dict[str, Any], context: ToolExecutionContext
    ) -> ToolResultEnvelope: ...


class DirectMode:
    """Runs direct-mode messages.

    Args:
        turns: the Main Agent's turn runner (events, model, Esc).
        tools: the ToolRegistry.
        session_id: the session.
        project_root: the main workspace.
        max_turns: model calls one message may take.
    """

    def __init__(
        self,
        turns: TurnRunner,
        tools: ToolPort,
        *,
        session_id: str,
        project_root: str,
        max_turns: int = 12,
    ) -> None:
        self.turns = turns
        self.tools = tools
        self.session_id = session_id
        self.project_root = project_root
        self.max_turns = max_turns

    def context(self, message_id: str | None) -> ToolExecutionContext:
        """The context of every direct-mode tool call: ``main_direct``, main workspace only."""
        return ToolExecutionContext(
            session_id=self.session_id,
            agent_id=self.turns.agent_id,
            project_root=self.project_root,
            workspace_root=self.project_root,
            permission_template=PermissionTemplate.MAIN_DIRECT,
            origin_message_id=message_id,
            write_area=[self.project_root],
        )

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(name=d.name, description=d.description, input_schema=d.input_schema)
            for d in self.tools.list()
            if d.category in DIRECT_CATEGORIES
        ]

    async def handle(
        self, role_prompt: str, conversation: Sequence[CanonicalMessage], message_id: str
    ) -> TurnResult:
        """Answer one message; returns the recorded reply (its text joins every model turn)."""
        specs = self.tool_specs()
        allowed = {s.name for s in specs}
        system = f"{role_prompt}\n\n{_INSTRUCTIONS.format(root=self.project_root)}"
        messages = list(conversation)
        reply_id = new_id("msg")
        await self.turns.started(reply_id, None)
        texts: list[str] = []
        result = TurnResult(status="interrupted")
        with self.turns.scope() as scope:
            try:
                for _ in range(self.max_turns):
                    result = await self.turns.stream_into(
                        self.turns.request(system, messages, specs), reply_id
                    )
                    if result.status != "complete":
                        break
                    if result.text:
                        texts.append(result.text)
                    uses = [b for b in result.content if isinstance(b, ToolUseBlock)]
                    if not uses:
                        break
                    messages.append(CanonicalMessage(role="assistant", content=result.content))
                    answers: list[ContentBlock] = []
                    for use in uses:
                        answers.append(await self._call(use, allowed, message_id))
                    messages.append(CanonicalMessage(role="user", content=answers))
            finally:
                self.turns.release()
        if scope.cancelled_caught:
            result = TurnResult(status="interrupted")
        final = TurnResult(
            status=result.status,
            content=[TextBlock(text="\n\n".join(texts) if texts else "(done)")],
            stop_reason=result.stop_reason,
            error=result.error,
            message_id=reply_id,
        )
        await self.turns.finish(reply_id, final)
        return final

    async def _call(self, use: ToolUseBlock, allowed: set[str], message_id: str) -> ToolResultBlock:
        if use.name not in allowed:
            return ToolResultBlock(
                tool_use_id=use.id, content=f"unknown tool {use.name}", is_error=True
            )
        if use.input_error is not None:  # never made: the model mends it (IMPL-API-8)
            return ToolResultBlock(
                tool_use_id=use.id, content=unparsed_call(use.name, use.input_error), is_error=True
            )
        envelope = await self.tools.call(use.name, dict(use.input), self.context(message_id))
        if envelope.status == "ok":
            body = (
                envelope.output
                if isinstance(envelope.output, str)
                else json.dumps(envelope.output, default=str)
            )
            return ToolResultBlock(tool_use_id=use.id, content=body[:_OUTPUT_CAP] or "ok")
        reason = envelope.error.message if envelope.error is not None else envelope.status
        return ToolResultBlock(
            tool_use_id=use.id, content=f"{envelope.status}: {reason}", is_error=True
        )
