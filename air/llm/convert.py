"""AnthropicCanonicalConverter: canonical (Anthropic content blocks) <-> OpenAI chat messages.

Owns the conversion of messages, system prompt, tool definitions, tool choice and stop reasons
between air's canonical format and ``/v1/chat/completions``. Nothing is dropped silently: what
OpenAI cannot carry (text after a tool call in one assistant turn, an unknown block) is an
``AirException(validation_error)``; an Anthropic model's thinking blocks are the exception:
bound to that model's conversation, they are left out (IMPL-THINK-1). A chat server's own
``reasoning_content`` and ``reasoning_details`` go back on the turn they came with. Tool errors
travel as a ``[tool_error]`` prefix the model can read (IMPL-LLM-4); a success whose own text
starts so is escaped with ``[tool_result]``. ``cache_control`` is a caching hint, not prompt
content, and is not sent to OpenAI-compatible servers (which cache automatically).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from air.contracts.error import AirException
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    ModelConfig,
    OpenAIReasoningBlock,
    ProviderCompletionInput,
    ReasoningContentBlock,
    ReasoningDetailsBlock,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from air.llm.sse import MODEL_JSON_DEPTH, model_json
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns, body_with_messages, dumps

__all__ = ["TOOL_ERROR_MARKER", "AnthropicCanonicalConverter", "clean_messages"]

log = logging.getLogger(__name__)

TOOL_ERROR_MARKER = "[tool_error] "
_ESCAPE = "[tool_result] "
_MARKED = re.compile(rf"(?:{re.escape(_ESCAPE)})*{re.escape(TOOL_ERROR_MARKER)}")
"""A successful result whose text itself starts with the marker (after any escapes) gets one
more ``[tool_result] `` in front, so the wire form stays one-to-one: never read as an error."""

_FINISH_TO_STOP = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.REFUSAL,
    "model_length": StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED,  # Mistral's
}
"""Chat completions' finish reasons (and compatible servers'); the server failures some of them
name (``error``, DeepSeek's ``insufficient_system_resource``, vLLM's ``abort``) are retried by
the normaliser, and one added since is read as ``end_turn``."""


def _lossy(message: str) -> AirException:
    return AirException.of(
        kind="validation_error",
        message=f"cannot convert to OpenAI chat format without loss: {message}",
        user_action="Use an Anthropic provider for this conversation, or restructure the turn.",
    )


def clean_messages(messages: list[CanonicalMessage]) -> list[CanonicalMessage]:
    """``messages`` without what both APIs refuse and that carries nothing (IMPL-API-1).

    Text blocks that are empty or only whitespace are left out; a turn left with no content is
    left out, and the user turns around it are joined, so that roles still alternate.
    """
    out: list[CanonicalMessage] = []
    for message in messages:
        content = [
            b for b in message.content if not (isinstance(b, TextBlock) and not b.text.strip())
        ]
        if not content:
            continue
        if out and out[-1].role == message.role:
            joined = [*out[-1].content, *content]
            out[-1] = CanonicalMessage(role=message.role, content=joined)
            continue
        if len(content) == len(message.content):
            out.append(message)
        else:
            out.append(CanonicalMessage(role=message.role, content=content))
    return out


class AnthropicCanonicalConverter:
    """Stateless converter; every method is pure. Tool names go out through a ``ToolNameMap``
    (default: the identity)."""

    # --- canonical -> OpenAI ------------------------------------------------------------------

    def system_to_openai(self, system: str | list[TextBlock] | None) -> list[dict[str, Any]]:
        if system is None:
            return []
        if isinstance(system, str):
            return [{"role": "system", "content": system}] if system else []
        if not system:
            return []
        return [{"role": "system", "content": [{"type": "text", "text": b.text} for b in system]}]

    def messages_to_openai(
        self, messages: list[CanonicalMessage], names: ToolNameMap | None = None
    ) -> list[dict[str, Any]]:
        """Convert turns; a user turn becomes runs of ``tool`` and ``user`` messages in order."""
        out: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "assistant":
                out.append(self._assistant_to_openai(message, names))
            else:
                out.extend(self._user_to_openai(message))
        return out

    def _assistant_to_openai(
        self, message: CanonicalMessage, names: ToolNameMap | None
    ) -> dict[str, Any]:
        texts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        reasoning: list[str] = []
        details: list[dict[str, Any]] | None = None
        for block in message.content:
            if isinstance(block, TextBlock):
                if calls:
                    raise _lossy("assistant text after a tool_use block in the same turn")
                texts.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolUseBlock):
                call: dict[str, Any] = {
                    "id": block.id,
                    "type": "function",
                    "function": {
                        "name": names.wire(block.name) if names else block.name,
                        "arguments": json.dumps(block.input, ensure_ascii=False),
                    },
                }
                if block.extra_content is not None:  # as the server sent it
                    call["extra_content"] = block.extra_content
                calls.append(call)
            elif isinstance(block, ReasoningContentBlock):
                reasoning.append(block.text)
            elif isinstance(block, ReasoningDetailsBlock):
                details = [*(details or []), *block.details]
            elif not isinstance(
                block, ThinkingBlock | RedactedThinkingBlock | OpenAIReasoningBlock
            ):
                raise _lossy("tool_result block in an assistant turn")
        entry: dict[str, Any] = {"role": "assistant", "content": texts or None}
        if reasoning:  # back where it came from (DeepSeek refuses a tool-call turn without it)
            entry["reasoning_content"] = "".join(reasoning)
        if details is not None:  # OpenRouter's, as merged (Gemini behind it refuses without)
            entry["reasoning_details"] = details
        if calls:
            entry["tool_calls"] = calls
        return entry

    def _user_to_openai(self, message: CanonicalMessage) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        parts: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolResultBlock):
                if parts:
                    out.append({"role": "user", "content": parts})
                    parts = []
                out.append(self._tool_result_to_openai(block))
            else:
                raise _lossy("tool_use block in a user turn")
        if parts:
            out.append({"role": "user", "content": parts})
        if not message.content:
            out.append({"role": "user", "content": []})
        return out

    def _tool_result_to_openai(self, block: ToolResultBlock) -> dict[str, Any]:
        content: str | list[dict[str, Any]]
        marker = TOOL_ERROR_MARKER if block.is_error else ""
        if isinstance(block.content, str):
            escape = _ESCAPE if not marker and _MARKED.match(block.content) else ""
            content = marker + escape + block.content
        else:
            content = [{"type": "text", "text": b.text} for b in block.content]
            if marker:
                content.insert(0, {"type": "text", "text": marker})
            elif content and _MARKED.match(content[0]["text"]):
                content[0]["text"] = _ESCAPE + content[0]["text"]
        return {"role": "tool", "tool_call_id": block.tool_use_id, "content": content}

    def tools_to_openai(
        self, tools: list[ToolSpec], names: ToolNameMap | None = None
    ) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": names.wire(t.name) if names else t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in tools
        ]

    def tool_choice_to_openai(
        self, choice: ToolChoice, names: ToolNameMap | None = None
    ) -> str | dict[str, Any]:
        if choice.type == "auto":
            return "auto"
        if choice.type == "none":
            return "none"
        if choice.type == "any":
            return "required"
        if not choice.name:
            raise _lossy("tool_choice 'tool' without a name")
        return {
            "type": "function",
            "function": {"name": names.wire(choice.name) if names else choice.name},
        }

    def request_to_openai(
        self,
        request: ProviderCompletionInput,
        api_model: str,
        names: ToolNameMap | None = None,
        model: ModelConfig | None = None,
    ) -> dict[str, Any]:
        """The full ``/v1/chat/completions`` body (streaming, with usage); tool names go out
        through ``names`` (default: the map of ``request.tools``), empty text is left out.
        ``model`` says how the output limit is named (``max_completion_tokens`` for reasoning
        models), the ``reasoning_effort`` and more fields to send (``params``)."""
        names = names if names is not None else ToolNameMap(t.name for t in request.tools)
        messages = self.system_to_openai(request.system) + self.messages_to_openai(
            clean_messages(request.messages), names
        )
        return {**self._head(request, names, model), "model": api_model, "messages": messages}

    def request_to_openai_body(
        self,
        request: ProviderCompletionInput,
        api_model: str,
        names: ToolNameMap,
        memo: EncodedTurns,
        model: ModelConfig | None = None,
        stream_usage: bool = True,
    ) -> bytes:
        """``request_to_openai``'s body as JSON bytes, its messages encoded through ``memo``
        (each once per conversation: IMPL-TURN-1); ``stream_options`` only with
        ``stream_usage``."""

        def encode(role: str, blocks: list[ContentBlock]) -> bytes:
            turn = CanonicalMessage(role=role, content=blocks)
            return b",".join(dumps(m) for m in self.messages_to_openai([turn], names))

        tool_names = tuple(t.name for t in request.tools)
        pieces = [dumps(m) for m in self.system_to_openai(request.system)]
        pieces += memo.pieces(request.messages, encode, tool_names)
        head = {**self._head(request, names, model, stream_usage), "model": api_model}
        head.pop("messages", None)
        return body_with_messages(head, pieces)

    def _head(
        self,
        request: ProviderCompletionInput,
        names: ToolNameMap,
        model: ModelConfig | None,
        stream_usage: bool = True,
    ) -> dict[str, Any]:
        """Every field of the body but ``model`` and ``messages``: the model's ``params``
        first (the fields air sets win), the output limit by the model's parameter name
        (``max_completion_tokens`` for reasoning models), its ``reasoning_effort``, and
        ``stream_options`` asking for the usage chunk unless ``stream_usage`` is off."""
        model = model or ModelConfig()
        body: dict[str, Any] = {
            **model.params,
            model.max_tokens_param: request.max_tokens,
            "stream": True,
        }
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
        if model.reasoning_effort is not None:
            body["reasoning_effort"] = model.reasoning_effort
        if request.tools:
            body["tools"] = self.tools_to_openai(request.tools, names)
        if request.tool_choice is not None:
            body["tool_choice"] = self.tool_choice_to_openai(request.tool_choice, names)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        return body

    # --- OpenAI -> canonical ------------------------------------------------------------------

    def stop_reason_from_openai(self, finish_reason: str | None) -> StopReason:
        reason = _FINISH_TO_STOP.get(finish_reason or "stop")
        if reason is None:  # a value added since: the reply is kept as it came
            log.warning("finish_reason %r read as end_turn", finish_reason)
            return StopReason.END_TURN
        return reason

    def messages_from_openai(
        self, messages: list[dict[str, Any]]
    ) -> tuple[str | list[TextBlock] | None, list[CanonicalMessage]]:
        """Inverse of ``system_to_openai`` + ``messages_to_openai``."""
        system: str | list[TextBlock] | None = None
        out: list[CanonicalMessage] = []
        pending_user: list[ContentBlock] = []
        user_open = False

        def flush() -> None:
            nonlocal pending_user, user_open
            if user_open:
                out.append(CanonicalMessage(role="user", content=pending_user))
            pending_user = []
            user_open = False

        for m in messages:
            role = m.get("role")
            if role == "system":
                content = m.get("content")
                if isinstance(content, str):
                    system = content
                else:
                    system = [TextBlock(text=p["text"]) for p in content or []]
            elif role == "assistant":
                flush()
                blocks: list[ContentBlock] = [
                    TextBlock(text=p["text"]) for p in _text_parts(m.get("content"))
                ]
                if isinstance(m.get("reasoning_details"), list):
                    blocks.insert(0, ReasoningDetailsBlock(details=m["reasoning_details"]))
                if isinstance(m.get("reasoning_content"), str):
                    blocks.insert(0, ReasoningContentBlock(text=m["reasoning_content"]))
                for call in m.get("tool_calls") or []:
                    fn = call["function"]
                    blocks.append(
                        ToolUseBlock(
                            id=call["id"],
                            name=fn["name"],
                            input=_parse_args(fn["arguments"]),
                            extra_content=call.get("extra_content"),
                        )
                    )
                out.append(CanonicalMessage(role="assistant", content=blocks))
            elif role == "tool":
                user_open = True
                pending_user.append(self._tool_result_from_openai(m))
            elif role == "user":
                user_open = True
                content = m.get("content")
                if isinstance(content, str):
                    pending_user.append(TextBlock(text=content))
                else:
                    pending_user.extend(TextBlock(text=p["text"]) for p in _text_parts(content))
            else:
                raise _lossy(f"unknown OpenAI role {role!r}")
        flush()
        return system, out

    def _tool_result_from_openai(self, m: dict[str, Any]) -> ToolResultBlock:
        content = m.get("content")
        if isinstance(content, str):
            if content.startswith(TOOL_ERROR_MARKER):
                return ToolResultBlock(
                    tool_use_id=m["tool_call_id"],
                    content=content[len(TOOL_ERROR_MARKER) :],
                    is_error=True,
                )
            if content.startswith(_ESCAPE) and _MARKED.match(content, len(_ESCAPE)):
                content = content[len(_ESCAPE) :]
            return ToolResultBlock(tool_use_id=m["tool_call_id"], content=content)
        parts = list(_text_parts(content))
        is_error = bool(parts) and parts[0]["text"] == TOOL_ERROR_MARKER
        if is_error:
            parts = parts[1:]
        elif parts and parts[0]["text"].startswith(_ESCAPE):
            first = parts[0]["text"]
            if _MARKED.match(first, len(_ESCAPE)):
                parts = [{**parts[0], "text": first[len(_ESCAPE) :]}, *parts[1:]]
        return ToolResultBlock(
            tool_use_id=m["tool_call_id"],
            content=[TextBlock(text=p["text"]) for p in parts],
            is_error=is_error,
        )


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") != "text":
            raise _lossy(f"OpenAI content part of type {part.get('type')!r}")
        parts.append(part)
    return parts


def _parse_args(arguments: str) -> dict[str, Any]:
    try:
        value = model_json(arguments, max_depth=MODEL_JSON_DEPTH) if arguments else {}
    except json.JSONDecodeError as exc:
        raise AirException.of(
            kind="protocol_error",
            message="tool call arguments are not valid JSON",
            detail=str(exc),
            user_action="The model produced malformed tool arguments; retry the turn.",
        ) from None
    if not isinstance(value, dict):
        raise AirException.of(
            kind="protocol_error",
            message="tool call arguments are not a JSON object",
            user_action="The model produced malformed tool arguments; retry the turn.",
        )
    return value
