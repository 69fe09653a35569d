"""The pieces every stream normaliser assembles a model's message from (sans-IO).

Owns ``Assembler`` (the content blocks of one message by index: text, tool calls with their
input parsed at the end, and the model's thinking blocks kept exactly as sent; OpenRouter's
``reasoning_details`` merged by the rule of its own client, ``more_details``, and bounded by
``DETAILS_MAX``; a tool input cut off by ``max_tokens`` becomes the transient ``cut_in_tool``
error) and the checks and builders the Anthropic, Chat Completions and Responses normalisers
share: ``malformed`` (the protocol error of a stream air cannot carry over), ``token_count``,
``string_field``, ``parse_tool_input``, ``text_delta`` (a ``TextDeltaEvent`` built without
re-validation, the hot path) and ``split_error``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from air.contracts.error import AirError, AirException, ErrorKind, Retryability, make_air_error
from air.contracts.provider import (
    TOKENS_MAX,
    ContentBlock,
    ProviderErrorEvent,
    ProviderStreamEvent,
    ReasoningContentBlock,
    ReasoningDetailsBlock,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    TextDeltaEvent,
    ThinkingBlock,
    ToolUseBlock,
    ToolUseStopEvent,
)
from air.llm.sse import EVENT_MAX, MODEL_JSON_DEPTH, model_json

__all__ = [
    "DETAILS_MAX",
    "Assembler",
    "malformed",
    "parse_tool_input",
    "slot_setter",
    "split_error",
    "string_field",
    "text_delta",
    "token_count",
]

CUT_BY = {
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED: "the model's context window",
}
"""The stop reasons that cut a reply short, and how a refusal names them: a tool call cut by
one is asked again (IMPL-API-5)."""


DETAILS_MAX = EVENT_MAX
"""The most ``reasoning_details`` one reply keeps, counted as their JSON's characters: what one
event may hold, so a server's endless details cost no more memory than one event decoded."""


def malformed(provider_id: str, message: str) -> AirException:
    return AirException.of(
        kind="protocol_error",
        message=f"{provider_id}: {message}",
        user_action="The provider's stream was malformed; retry, or use another model or server.",
    )


def token_count(provider_id: str, key: str, value: Any) -> int:
    """``value`` as a token count; an integral float is its int (JSON does not tell 3 from 3.0).

    Raises:
        AirException: a protocol error naming the field, for anything but a count.
    """
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value <= TOKENS_MAX:
        raise malformed(provider_id, f"usage.{key} is no token count: {str(value)[:40]!r}")
    return value


def string_field(
    provider_id: str, data: dict[str, Any], key: str, default: str | None = None
) -> str:
    """``data[key]`` as it came (a thinking block's text, signature or data): a string."""
    value = data.get(key, default)
    if type(value) is not str:
        raise malformed(provider_id, f"{data.get('type')} without a string {key}")
    return value


def parse_tool_input(provider_id: str, raw: str) -> dict[str, Any]:
    try:
        value = model_json(raw, max_depth=MODEL_JSON_DEPTH) if raw else {}
    except json.JSONDecodeError:
        raise malformed(provider_id, "tool input is not valid JSON") from None
    if not isinstance(value, dict):
        raise malformed(provider_id, "tool input is not a JSON object")
    return value


_new = object.__new__


def slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    """The ``__set__`` of the descriptor behind ``cls``'s instance attribute ``name`` (what
    ``object.__setattr__`` looks up along the MRO on every call)."""
    descriptor = next(c.__dict__[name] for c in cls.__mro__ if name in c.__dict__)
    setter: Callable[[object, object], None] = descriptor.__set__
    return setter


_set_dict = slot_setter(TextDeltaEvent, "__dict__")
_set_fields = slot_setter(TextDeltaEvent, "__pydantic_fields_set__")
_set_extra = slot_setter(TextDeltaEvent, "__pydantic_extra__")
_set_private = slot_setter(TextDeltaEvent, "__pydantic_private__")


def text_delta(index: int, text: str) -> TextDeltaEvent:
    """A TextDeltaEvent without re-validating values the normaliser just type-checked.

    The hot path of every stream (one per delta); equal to ``TextDeltaEvent(index=, text=)``
    (the state pydantic's own ``__init__`` leaves, set through the slot descriptors directly).
    """
    event: TextDeltaEvent = _new(TextDeltaEvent)
    _set_dict(event, {"type": "text_delta", "index": index, "text": text})
    _set_fields(event, {"index", "text"})
    _set_extra(event, None)
    _set_private(event, None)
    return event


def split_error(events: list[ProviderStreamEvent], out: list[ProviderStreamEvent]) -> AirError:
    """Put the events before a batch's final ``error`` event in ``out``; return its error."""
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent)
    out.extend(events[:-1])
    return last.error


def _input_problem(raw: str) -> str:
    """What is wrong with a tool input that did not parse, as the model is told it."""
    try:
        model_json(raw, max_depth=MODEL_JSON_DEPTH)
    except json.JSONDecodeError as exc:
        return f"its input is not valid JSON ({exc})"
    return "its input is not a JSON object"


class Assembler:
    """Accumulates blocks by index; shared by both normalisers."""

    def __init__(self, provider_id: str) -> None:
        self.provider_id = provider_id
        self.texts: dict[int, list[str]] = {}
        self.tools: dict[int, tuple[str, str, list[str]]] = {}
        self.order: list[int] = []
        self.inputs: dict[int, dict[str, Any]] = {}
        self.broken: dict[int, str] = {}
        """Tool blocks whose input is not valid JSON (judged at the end of the message)."""
        self.input_errors: dict[int, str] = {}
        """Why a finished reply's tool input did not parse, by block index (IMPL-API-8)."""
        self.thinking: dict[int, tuple[list[str], list[str]]] = {}
        """Thinking blocks: their text and signature pieces."""
        self.redacted: dict[int, str] = {}
        self.reasoning: dict[int, list[str]] = {}
        """``reasoning_content`` blocks of an OpenAI-compatible stream: their text pieces."""
        self.tool_extra: dict[int, dict[str, Any]] = {}
        """A chat server's ``extra_content`` beside a tool call, by block index."""
        self.details: dict[int, list[tuple[dict[str, Any], list[str]]]] = {}
        """``reasoning_details`` blocks: each item (a ``reasoning.text`` with its text pieces)."""
        self._details_size = 0

    def more_details(self, index: int, items: Any) -> None:
        """One delta's ``reasoning_details`` into block ``index``, by the rule of OpenRouter's
        own client (``@openrouter/ai-sdk-provider``): a ``reasoning.text`` right after another
        continues it (texts joined; its signature and format the first given), any other item
        is kept as it came, in order."""
        if not isinstance(items, list):
            raise malformed(self.provider_id, "reasoning_details that is not a list")
        kept = self.details[index]
        for item in items:
            kind = item.get("type") if isinstance(item, dict) else None
            if type(kind) is not str:
                raise malformed(self.provider_id, "a reasoning_details item without a type")
            text = item.get("text")
            if text is not None and type(text) is not str:
                raise malformed(self.provider_id, f"{kind} without a string text")
            last = kept[-1][0] if kept else None
            if kind == "reasoning.text" and last is not None and last["type"] == kind:
                self._count(len(text or ""))
                kept[-1][1].append(text or "")
                for key in ("signature", "format"):
                    if not last.get(key) and item.get(key):
                        self._count(len(str(item[key])))
                        last[key] = item[key]
            else:
                self._count(len(json.dumps(item)))
                kept.append((dict(item), [text] if text is not None else []))

    def _count(self, size: int) -> None:
        self._details_size += size
        if self._details_size > DETAILS_MAX:
            raise malformed(self.provider_id, f"reasoning_details past {DETAILS_MAX} characters")

    def start_thinking(self, provider_id: str, index: int, block: dict[str, Any]) -> None:
        """Open a ``thinking`` or ``redacted_thinking`` block (its start may hold it whole)."""
        self.order.append(index)
        if block.get("type") == "redacted_thinking":
            self.redacted[index] = string_field(provider_id, block, "data")
            return
        text = string_field(provider_id, block, "thinking", "")
        signature = string_field(provider_id, block, "signature", "")
        self.thinking[index] = ([text] if text else [], [signature] if signature else [])

    def more_thinking(self, provider_id: str, index: int, delta: dict[str, Any]) -> None:
        """A ``thinking_delta`` or ``signature_delta`` of an open thinking block."""
        texts, signature = self.thinking[index]
        if delta.get("type") == "thinking_delta":
            texts.append(string_field(provider_id, delta, "thinking"))
        else:
            signature.append(string_field(provider_id, delta, "signature"))

    def start_text(self, index: int) -> None:
        self.texts[index] = []
        self.order.append(index)

    def start_tool(self, index: int, tool_id: str, name: str) -> None:
        self.tools[index] = (tool_id, name, [])
        self.order.append(index)

    def stop_tool(self, index: int) -> list[ProviderStreamEvent]:
        raw = "".join(self.tools[index][2])
        try:
            parsed = parse_tool_input(self.provider_id, raw)
        except AirException:
            self.broken[index] = raw  # cut off by max_tokens, or malformed: see ``ending``
            return []
        self.inputs[index] = parsed
        return [ToolUseStopEvent(index=index, input=parsed)]

    def ending(self, reason: StopReason) -> ProviderErrorEvent | None:
        """The failure of a message whose tool input did not parse, if any (IMPL-API-5).

        Cut off by ``max_tokens`` inside a tool call: a transient error the manager answers by
        asking again. Otherwise the model wrote it so (a small local model's single quotes, a
        trailing comma): no failure; the call keeps ``{}`` and its ``input_error``, answered to
        the model, which can mend it (IMPL-API-8).
        """
        if not self.broken:
            return None
        if reason not in CUT_BY:
            for broken, raw in self.broken.items():
                self.inputs[broken] = {}
                self.input_errors[broken] = _input_problem(raw)
            self.broken.clear()
            return None
        index = min(self.broken)
        name = self.tools[index][1]
        return ProviderErrorEvent(
            error=make_air_error(
                kind=ErrorKind.PROVIDER_ERROR,
                message=(
                    f"{self.provider_id}: the reply was cut off by {CUT_BY[reason]} inside a "
                    f"call of tool {name}"
                ),
                retryability=Retryability.TRANSIENT,
                user_action="air asks the model again (more tokens, or smaller tool input).",
                metadata={
                    "provider_id": self.provider_id,
                    "cut_in_tool": name,
                    "cut_by": reason.value,
                },
            )
        )

    @staticmethod
    def _merged(kept: list[tuple[dict[str, Any], list[str]]]) -> list[dict[str, Any]]:
        """The items of a ``reasoning_details`` block, each text item's pieces joined."""
        return [{**item, "text": "".join(pieces)} if pieces else item for item, pieces in kept]

    def content(self) -> list[ContentBlock]:
        blocks: list[ContentBlock] = []
        for index in self.order:
            if index in self.texts:
                blocks.append(TextBlock(text="".join(self.texts[index])))
            elif index in self.thinking:
                texts, signature = self.thinking[index]
                blocks.append(ThinkingBlock(thinking="".join(texts), signature="".join(signature)))
            elif index in self.redacted:
                blocks.append(RedactedThinkingBlock(data=self.redacted[index]))
            elif index in self.reasoning:
                blocks.append(ReasoningContentBlock(text="".join(self.reasoning[index])))
            elif index in self.details:
                blocks.append(ReasoningDetailsBlock(details=self._merged(self.details[index])))
            else:
                tool_id, name, _ = self.tools[index]
                extra = self.tool_extra.get(index)
                blocks.append(
                    ToolUseBlock(
                        id=tool_id,
                        name=name,
                        input=self.inputs[index],
                        extra_content=extra,
                        input_error=self.input_errors.get(index),
                    )
                )
        return blocks
