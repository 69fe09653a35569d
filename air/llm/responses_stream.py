"""ResponsesStreamNormalizer: OpenAI Responses API stream events -> ``ProviderStreamEvent``
(sans-IO).

Owns reading one ``POST /responses`` stream, fed one decoded event at a time: each output item
becomes one content block of the final message (``reasoning`` -> ``OpenAIReasoningBlock``, kept
with its ``encrypted_content`` from ``response.output_item.done`` and the ids of the items after
it; ``message`` -> text; ``function_call`` -> tool use, its name mapped back through the
request's ``ToolNameMap``), ``response.completed`` / ``response.incomplete`` end the message
(usage with cached and cache-written input tokens; the stop reason from the function calls and
``incomplete_details``), ``response.failed`` and ``error`` end it as the chat wire's errors do.
An output item air cannot carry over is a protocol error, never dropped; an event type it does
not know (OpenAI adds them) carries nothing the items lack, and is passed over.
"""

from __future__ import annotations

import functools
from typing import Any

from air.contracts.error import AirError
from air.contracts.provider import (
    ContentBlock,
    MessageStartEvent,
    MessageStopEvent,
    OpenAIReasoningBlock,
    ProviderErrorEvent,
    ProviderStreamEvent,
    StopReason,
    TextDeltaEvent,
    ToolUseInputDeltaEvent,
    ToolUseStartEvent,
    Usage,
)
from air.llm.errors import error_for_status
from air.llm.stream_assembly import Assembler, malformed, split_error, text_delta, token_count
from air.llm.tool_names import ToolNameMap

__all__ = ["ResponsesStreamNormalizer", "responses_error"]

_STATUS_OF_CODE = {"rate_limit_exceeded": 429, "server_error": 500}


def responses_error(provider_id: str, error: Any) -> AirError:
    """The AirError of a ``response.failed`` event's ``response.error`` or an ``error`` event
    (``code``, ``message``), mapped as an HTTP error of that kind."""
    err: dict[str, Any] = error if isinstance(error, dict) else {"message": str(error)}
    code = str(err.get("code") or err.get("type") or "")
    message = str(err.get("message") or "")
    return error_for_status(
        _STATUS_OF_CODE.get(code, 0),
        message,
        provider_id=provider_id,
        error_type=code or None,
        api_message=message or None,
    )


class ResponsesStreamNormalizer:
    """Feed each Responses stream event (decoded JSON); the message ends at the response's
    final event (``done``)."""

    def __init__(self, provider_id: str, model_id: str, names: ToolNameMap | None = None) -> None:
        self.provider_id = provider_id
        self.model_id = model_id
        self.names = names
        self._asm = Assembler(provider_id)
        self._index: dict[int, int] = {}
        """output_index -> the content block's index."""
        self._reasoning: dict[int, OpenAIReasoningBlock] = {}
        self._item_ids: dict[int, str] = {}
        """The id of each text or tool block's output item."""
        self._owner: dict[int, int] = {}
        """The reasoning block (index) each later text or tool block follows."""
        self._last_reasoning: int | None = None
        self._refused = False
        self._started = False
        self.done = False

    def feed_many(
        self, values: list[dict[str, Any]], out: list[ProviderStreamEvent]
    ) -> AirError | None:
        """Feed ``values`` in order into ``out``; see ``AnthropicStreamNormalizer.feed_many``
        (text deltas, the bulk of a stream, inline)."""
        texts = self._asm.texts
        append = out.append
        for event in values:
            if event.get("type") == "response.output_text.delta":
                text = event["delta"]
                if type(text) is not str:
                    raise malformed(self.provider_id, "output_text.delta without a string delta")
                index = self._index[int(event["output_index"])]
                texts[index].append(text)
                append(text_delta(index, text))
                continue
            events = self.feed(event)
            if events and events[-1].type == "error":
                return split_error(events, out)
            out.extend(events)
            if self.done:
                return None
        return None

    def feed(self, event: dict[str, Any]) -> list[ProviderStreamEvent]:
        kind = event.get("type")
        asm = self._asm
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            text = event["delta"]
            if type(text) is not str:
                raise malformed(self.provider_id, f"{kind} without a string delta")
            self._refused = self._refused or kind == "response.refusal.delta"
            index = self._index[int(event["output_index"])]
            asm.texts[index].append(text)
            return [TextDeltaEvent(index=index, text=text)]
        if kind == "response.function_call_arguments.delta":
            index = self._index[int(event["output_index"])]
            delta = str(event["delta"])
            asm.tools[index][2].append(delta)
            return [ToolUseInputDeltaEvent(index=index, partial_json=delta)]
        if kind == "response.output_item.added":
            return self._added(int(event["output_index"]), event["item"])
        if kind == "response.output_item.done":
            return self._item_done(int(event["output_index"]), event["item"])
        if kind == "response.created":
            self._started = True
            response = event["response"]
            return [
                MessageStartEvent(
                    message_id=str(response.get("id", "")),
                    model_id=str(response.get("model") or self.model_id),
                    provider_id=self.provider_id,
                )
            ]
        if kind in ("response.completed", "response.incomplete"):
            return self._end(event["response"])
        if kind == "response.failed":
            self.done = True
            error = (event.get("response") or {}).get("error") or {"message": "response failed"}
            return [ProviderErrorEvent(error=responses_error(self.provider_id, error))]
        if kind == "error":
            self.done = True
            return [ProviderErrorEvent(error=responses_error(self.provider_id, event))]
        if str(kind).startswith("response.audio"):  # content air would drop: refused
            raise malformed(self.provider_id, f"unsupported stream event {kind!r}")
        # the others (in_progress, content_part.*, *.done, reasoning summaries, annotations,
        # and event types added since) carry nothing the final message lacks: reasoning is
        # kept from its output_item.done, text and arguments from their deltas
        return []

    def _added(self, output_index: int, item: dict[str, Any]) -> list[ProviderStreamEvent]:
        kind = item.get("type")
        index = len(self._index)
        self._index[output_index] = index
        if kind == "reasoning":
            self._last_reasoning = index
            self._reasoning[index] = OpenAIReasoningBlock(id=str(item["id"]))
            return []
        if kind not in ("message", "function_call"):
            raise malformed(self.provider_id, f"unsupported output item {kind!r}")
        self._item_ids[index] = str(item.get("id") or "")
        if self._last_reasoning is not None:
            self._owner[index] = self._last_reasoning
        if kind == "message":
            self._asm.start_text(index)
            return []
        call_id, name = str(item["call_id"]), str(item["name"])
        name = self.names.internal(name) if self.names else name
        self._asm.start_tool(index, call_id, name)
        return [ToolUseStartEvent(index=index, id=call_id, name=name)]

    def _item_done(self, output_index: int, item: dict[str, Any]) -> list[ProviderStreamEvent]:
        index = self._index[output_index]
        if index in self._reasoning:
            summary = [str(part.get("text", "")) for part in item.get("summary") or []]
            secret = item.get("encrypted_content")
            self._reasoning[index] = OpenAIReasoningBlock(
                id=str(item["id"]),
                encrypted_content=secret if isinstance(secret, str) else None,
                summary=summary,
            )
            return []
        if index not in self._asm.tools:
            return []
        pieces = self._asm.tools[index][2]
        out: list[ProviderStreamEvent] = []
        arguments = item.get("arguments")
        if not pieces and isinstance(arguments, str) and arguments:
            pieces.append(arguments)  # no deltas came: the whole arguments of the done item
            out.append(ToolUseInputDeltaEvent(index=index, partial_json=arguments))
        return [*out, *self._asm.stop_tool(index)]

    def _usage(self, usage: dict[str, Any]) -> Usage:
        count = functools.partial(token_count, self.provider_id)
        total = count("input_tokens", usage.get("input_tokens") or 0)
        details = usage.get("input_tokens_details") or {}
        # parts of the prompt: a server's larger figure counts the whole prompt as cached
        cached = min(total, count("cached_tokens", details.get("cached_tokens") or 0))
        written = count("cache_write_tokens", details.get("cache_write_tokens") or 0)
        written = min(total - cached, written)
        return Usage(
            input_tokens=total - cached - written,
            output_tokens=count("output_tokens", usage.get("output_tokens") or 0),
            cache_read_input_tokens=cached,
            cache_creation_input_tokens=written,
        )

    def _end(self, response: dict[str, Any]) -> list[ProviderStreamEvent]:
        if not self._started:
            raise malformed(self.provider_id, "the stream ended before response.created")
        self.done = True
        reason = StopReason.TOOL_USE if self._asm.tools else StopReason.END_TURN
        if response.get("status") == "incomplete":
            why = (response.get("incomplete_details") or {}).get("reason")
            reason = StopReason.REFUSAL if why == "content_filter" else StopReason.MAX_TOKENS
        elif self._refused:
            reason = StopReason.REFUSAL
        asm = self._asm
        out: list[ProviderStreamEvent] = []
        for index in [i for i in asm.tools if i not in asm.inputs and i not in asm.broken]:
            out.extend(asm.stop_tool(index))  # cut off before its item was done
        cut = asm.ending(reason)
        if cut is not None:
            return [*out, cut]
        usage = self._usage(response.get("usage") or {})
        out.append(MessageStopEvent(stop_reason=reason, usage=usage, content=self._content()))
        return out

    def _content(self) -> list[ContentBlock]:
        """The blocks in output order; a reasoning block names the items that followed it
        (a blank text block is left out, as every wire leaves it out)."""
        assembled = iter(self._asm.content())
        blocks: dict[int, ContentBlock] = {i: next(assembled) for i in self._asm.order}
        follows: dict[int, list[str]] = {i: [] for i in self._reasoning}
        for index, block in sorted(blocks.items()):
            if block.type == "text" and not block.text.strip():
                del blocks[index]
            elif index in self._owner and self._item_ids[index]:
                follows[self._owner[index]].append(self._item_ids[index])
        for index, reasoning in self._reasoning.items():
            blocks[index] = reasoning.model_copy(update={"next_item_ids": follows[index]})
        return [blocks[i] for i in sorted(blocks)]
