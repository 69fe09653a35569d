"""StreamNormalizer: provider stream chunks -> ``ProviderStreamEvent`` (sans-IO).

Owns two normalisers fed one decoded JSON object at a time: ``AnthropicStreamNormalizer``
(Messages API SSE events) and ``OpenAIStreamNormalizer`` (chat-completions chunks), and the
``StreamNormalizer`` protocol every wire's normaliser meets. Both assemble the final content
blocks for ``message_stop`` (``air.llm.stream_assembly``; tool names mapped back through the
request's ``ToolNameMap``; interleaved parallel OpenAI tool calls by ``index``, and by ``id``
where a server reuses one index) and raise ``AirException`` (protocol error) on anything they
cannot carry over, e.g. an unknown content block type; an event type, delta kind or stop
reason added since (Anthropic's versioning policy allows new variants of these) is passed over
or read as ``end_turn``. ``thinking`` and ``redacted_thinking`` blocks (text,
``thinking_delta``, ``signature_delta``) are kept in the final content exactly as sent, and
yield no stream event: never shown (IMPL-THINK-1); so is a chat stream's ``reasoning_content``
(one block), and OpenRouter's ``reasoning_details`` (one block, merged). A message cut off by
``max_tokens`` inside a tool call ends in a transient error event instead (``cut_in_tool``; the
manager asks again), as does a gateway's error inside an OpenAI-compatible stream (retried).
``BatchReader`` turns the SSE payloads of each network read into the event batches an adapter
yields.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from air.contracts.error import AirError, AirException
from air.contracts.provider import (
    MessageStartEvent,
    MessageStopEvent,
    ProviderErrorEvent,
    ProviderStreamEvent,
    StopReason,
    TextDeltaEvent,
    ToolUseInputDeltaEvent,
    ToolUseStartEvent,
    Usage,
)
from air.llm.adapter import StreamEnded
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.errors import error_for_status, protocol_error
from air.llm.sse import SSEDecoder, decode_json_batch
from air.llm.stream_assembly import (
    Assembler,
    malformed,
    split_error,
    text_delta,
    token_count,
)
from air.llm.tool_names import ToolNameMap

__all__ = [
    "AnthropicStreamNormalizer",
    "BatchReader",
    "OpenAIStreamNormalizer",
    "StreamNormalizer",
    "drain",
    "sse_batches",
]

log = logging.getLogger(__name__)

SERVER_FAILED = frozenset({"error", "insufficient_system_resource", "abort"})
"""Finish reasons of a reply the server failed (OpenRouter, DeepSeek, vLLM): retried."""


class AnthropicStreamNormalizer:
    """Feed each Messages-API SSE event (decoded JSON); get the normalised events back."""

    def __init__(self, provider_id: str, model_id: str, names: ToolNameMap | None = None) -> None:
        self.provider_id = provider_id
        self.model_id = model_id
        self.names = names
        self._asm = Assembler(provider_id)
        self._usage: dict[str, int] = {}
        self._stop_reason: StopReason | None = None
        self.done = False

    def feed_many(
        self, values: list[dict[str, Any]], out: list[ProviderStreamEvent]
    ) -> AirError | None:
        """Feed ``values`` in order, appending their events to ``out``; stop at the end of the
        message or at an ``error`` event, whose error is returned (the events before it are in
        ``out``). Same events as ``feed`` one by one: text deltas, the bulk of a stream, are
        handled inline here (one network read carries hundreds)."""
        texts = self._asm.texts
        append = out.append
        for event in values:
            if event.get("type") == "content_block_delta":
                delta = event["delta"]
                if delta.get("type") == "text_delta":
                    text = delta["text"]
                    if type(text) is not str:
                        raise malformed(self.provider_id, "text_delta without a string text")
                    index = int(event["index"])
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
        if kind == "content_block_delta":
            delta = event["delta"]
            index = int(event["index"])
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = delta["text"]
                if type(text) is not str:
                    raise malformed(self.provider_id, "text_delta without a string text")
                asm.texts[index].append(text)
                return [text_delta(index, text)]
            if dtype == "input_json_delta":
                asm.tools[index][2].append(delta["partial_json"])
                return [ToolUseInputDeltaEvent(index=index, partial_json=delta["partial_json"])]
            if dtype in ("thinking_delta", "signature_delta"):
                asm.more_thinking(self.provider_id, index, delta)
                return []
            return []  # a delta kind added since (citations_delta ...): nothing air keeps
        if kind == "message_start":
            message = event["message"]
            self._merge_usage(message.get("usage") or {})
            return [
                MessageStartEvent(
                    message_id=str(message.get("id", "")),
                    model_id=str(message.get("model") or self.model_id),
                    provider_id=self.provider_id,
                )
            ]
        if kind == "content_block_start":
            block = event["content_block"]
            index = int(event["index"])
            btype = block.get("type")
            if btype == "text":
                asm.start_text(index)
                if block.get("text"):
                    asm.texts[index].append(block["text"])
                    return [TextDeltaEvent(index=index, text=block["text"])]
                return []
            if btype == "tool_use":
                name = str(block["name"])
                name = self.names.internal(name) if self.names else name
                asm.start_tool(index, str(block["id"]), name)
                return [ToolUseStartEvent(index=index, id=str(block["id"]), name=name)]
            if btype in ("thinking", "redacted_thinking"):
                asm.start_thinking(self.provider_id, index, block)
                return []
            raise malformed(self.provider_id, f"unsupported content block {btype!r}")
        if kind == "content_block_stop":
            index = int(event["index"])
            if index in asm.tools:
                return asm.stop_tool(index)
            return []
        if kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if reason is not None:
                try:
                    self._stop_reason = StopReason(reason)
                except ValueError:  # a value added since (new variants are allowed): the
                    log.warning("%s: stop_reason %r read as end_turn", self.provider_id, reason)
                    self._stop_reason = StopReason.END_TURN  # reply is kept as it came
            self._merge_usage(event.get("usage") or {})
            return []
        if kind == "message_stop":
            self.done = True
            cut = asm.ending(self._stop_reason or StopReason.END_TURN)
            if cut is not None:
                return [cut]
            return [
                MessageStopEvent(
                    stop_reason=self._stop_reason or StopReason.END_TURN,
                    usage=Usage(**self._usage),
                    content=asm.content(),
                )
            ]
        if kind == "ping":
            return []
        if kind == "error":
            err = event.get("error") or {}
            self.done = True
            return [
                ProviderErrorEvent(
                    error=error_for_status(
                        0,
                        str(err.get("message", "")),
                        provider_id=self.provider_id,
                        error_type=str(err.get("type", "")),
                        api_message=str(err.get("message") or "") or None,
                    )
                )
            ]
        return []  # an event type added since: the versioning policy allows new ones

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = usage.get(key)
            if value is not None:
                self._usage[key] = token_count(self.provider_id, key, value)


def _chunk_text(provider_id: str, parts: list[Any]) -> str:
    """The text of a delta's content given as typed chunks: ``text`` chunks' text; a
    ``thinking`` chunk (the model's reasoning) is passed over, never shown."""
    texts: list[str] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and type(part.get("text")) is str:
            texts.append(part["text"])
        elif kind != "thinking":
            raise malformed(provider_id, f"unsupported content chunk {kind!r}")
    return "".join(texts)


class OpenAIStreamNormalizer:
    """Feed each chat-completions chunk (decoded JSON); ``finish()`` at ``[DONE]``/EOF."""

    def __init__(self, provider_id: str, model_id: str, names: ToolNameMap | None = None) -> None:
        self.provider_id = provider_id
        self.model_id = model_id
        self.names = names
        self._asm = Assembler(provider_id)
        self._converter = AnthropicCanonicalConverter()
        self._started = False
        self._text_index: int | None = None
        self._reasoning_index: int | None = None
        self._details_index: int | None = None
        self._tool_index: dict[int, int] = {}
        self._open_tools: list[int] = []
        """Tool blocks still receiving argument deltas (parallel calls may interleave)."""
        self._next = 0
        self._finish: str | None = None
        self._usage = Usage()
        self.done = False

    def feed_many(
        self, values: list[dict[str, Any]], out: list[ProviderStreamEvent]
    ) -> AirError | None:
        """Feed ``values`` in order into ``out``; see ``AnthropicStreamNormalizer.feed_many``."""
        feed = self.feed
        texts = self._asm.texts
        append = out.append
        for chunk in values:
            text = self._more_text(chunk)
            if text is not None:
                index = self._text_index
                assert index is not None
                texts[index].append(text)
                append(text_delta(index, text))
                continue
            events = feed(chunk)
            if events and events[-1].type == "error":
                return split_error(events, out)
            out.extend(events)
            if self.done:
                return None
        return None

    def _more_text(self, chunk: dict[str, Any]) -> str | None:
        """The text of a chunk that carries only more text of the open text block (the bulk of
        a stream: the fast path), else None."""
        if self._text_index is None or self._open_tools or "usage" in chunk:
            return None
        choices = chunk.get("choices")
        if choices and len(choices) == 1:
            choice = choices[0]
            delta = choice.get("delta")
            if delta and len(delta) == 1 and not choice.get("finish_reason"):
                text = delta.get("content")
                if text and type(text) is str:
                    return text
        return None

    def feed(self, chunk: dict[str, Any]) -> list[ProviderStreamEvent]:
        text = self._more_text(chunk)
        if text is not None:
            index = self._text_index
            assert index is not None
            self._asm.texts[index].append(text)
            return [text_delta(index, text)]
        out: list[ProviderStreamEvent] = []
        if chunk.get("error"):  # OpenAI: alone; OpenRouter: beside a choice ending in "error"
            err: dict[str, Any] = (
                chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk)}
            )
            code = str(err.get("code") or "")
            return [
                ProviderErrorEvent(
                    error=error_for_status(
                        int(code) if code.isdigit() else 0,
                        str(err.get("message", "")),
                        provider_id=self.provider_id,
                        error_type=str(err.get("type") or ("" if code.isdigit() else code)),
                        api_message=str(err.get("message") or "") or None,
                    )
                )
            ]
        if not self._started:
            self._started = True
            out.append(
                MessageStartEvent(
                    message_id=str(chunk.get("id", "")),
                    model_id=str(chunk.get("model") or self.model_id),
                    provider_id=self.provider_id,
                )
            )
        usage = chunk.get("usage")
        if usage:
            count = functools.partial(token_count, self.provider_id)
            prompt = count("prompt_tokens", usage.get("prompt_tokens") or 0)
            details = usage.get("prompt_tokens_details") or {}
            # a part of the prompt: a server's larger figure counts the whole prompt as cached
            cached = min(prompt, count("cached_tokens", details.get("cached_tokens") or 0))
            self._usage = Usage(
                input_tokens=prompt - cached,
                output_tokens=count("completion_tokens", usage.get("completion_tokens") or 0),
                cache_read_input_tokens=cached,
            )
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content")
            if type(reasoning) is str:  # kept whole, to go back; never an event (never shown)
                if self._reasoning_index is None:
                    self._reasoning_index = self._next
                    self._next += 1
                    self._asm.reasoning[self._reasoning_index] = []
                    self._asm.order.append(self._reasoning_index)
                self._asm.reasoning[self._reasoning_index].append(reasoning)
            details = delta.get("reasoning_details")
            if details is not None:  # OpenRouter's: kept merged, to go back; never an event
                if self._details_index is None:
                    self._details_index = self._next
                    self._next += 1
                    self._asm.details[self._details_index] = []
                    self._asm.order.append(self._details_index)
                self._asm.more_details(self._details_index, details)
            text = delta.get("content")
            if isinstance(text, list):  # typed chunks (Mistral's thinking models)
                text = _chunk_text(self.provider_id, text)
            elif text is not None and type(text) is not str:
                raise malformed(self.provider_id, "content that is neither text nor chunks")
            if text:
                out.extend(self._close_tools())
                if self._text_index is None:
                    self._text_index = self._next
                    self._next += 1
                    self._asm.start_text(self._text_index)
                self._asm.texts[self._text_index].append(text)
                out.append(TextDeltaEvent(index=self._text_index, text=text))
            for call in delta.get("tool_calls") or []:
                out.extend(self._tool_delta(call))
            if delta.get("function_call"):
                raise malformed(self.provider_id, "legacy function_call deltas are not supported")
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return out

    def _tool_delta(self, call: dict[str, Any]) -> list[ProviderStreamEvent]:
        out: list[ProviderStreamEvent] = []
        key = int(call.get("index", 0))
        fn = call.get("function") or {}
        known = self._tool_index.get(key)
        if known is not None and call.get("id") and call["id"] != self._asm.tools[known][0]:
            # another call at an index already taken: Ollama numbers every call 0, some
            # proxies send no index; the call before it at that index is whole
            del self._tool_index[key]
            if known in self._open_tools:
                self._open_tools.remove(known)
                out.extend(self._asm.stop_tool(known))
        if key not in self._tool_index:
            if not call.get("id") or not fn.get("name"):
                raise malformed(self.provider_id, "tool call started without id or name")
            index = self._next
            self._next += 1
            self._tool_index[key] = index
            self._text_index = None  # later text opens a new block after the tool call
            name = str(fn["name"])
            name = self.names.internal(name) if self.names else name
            self._asm.start_tool(index, str(call["id"]), name)
            out.append(ToolUseStartEvent(index=index, id=str(call["id"]), name=name))
            self._open_tools.append(index)
        index = self._tool_index[key]
        if index not in self._open_tools:
            raise malformed(self.provider_id, "arguments for a tool call that already ended")
        if isinstance(call.get("extra_content"), dict):  # Gemini: its thought signature
            self._asm.tool_extra[index] = call["extra_content"]
        args = fn.get("arguments")
        if args:
            self._asm.tools[index][2].append(args)
            out.append(ToolUseInputDeltaEvent(index=index, partial_json=args))
        return out

    def _close_tools(self) -> list[ProviderStreamEvent]:
        """End every open tool call (at text after them, or at the end of the stream)."""
        if not self._open_tools:
            return []
        indexes, self._open_tools = self._open_tools, []
        return [event for index in indexes for event in self._asm.stop_tool(index)]

    def finish(self) -> list[ProviderStreamEvent]:
        """Close the open tool block and emit ``message_stop``."""
        if not self._started:
            raise malformed(self.provider_id, "the stream ended before any chunk")
        self.done = True
        if self._finish in SERVER_FAILED:  # a reply the server gave up on, saying no more
            said = f"the reply ended with finish_reason {self._finish}"
            failed = error_for_status(
                0, said, provider_id=self.provider_id, error_type="server_error", api_message=said
            )
            return [ProviderErrorEvent(error=failed)]
        out: list[ProviderStreamEvent] = self._close_tools()
        reason = self._converter.stop_reason_from_openai(self._finish)
        cut = self._asm.ending(reason)
        if cut is not None:
            return [*out, cut]
        if self._asm.tools and reason is StopReason.END_TURN:
            reason = StopReason.TOOL_USE
        out.append(
            MessageStopEvent(stop_reason=reason, usage=self._usage, content=self._asm.content())
        )
        return out


class StreamNormalizer(Protocol):
    """What ``drain`` and ``BatchReader`` feed (both normalisers here, and
    ``air.llm.responses_stream.ResponsesStreamNormalizer``)."""

    provider_id: str
    done: bool

    def feed_many(
        self, values: list[dict[str, Any]], out: list[ProviderStreamEvent]
    ) -> AirError | None: ...


def drain(
    normalizer: StreamNormalizer, datas: list[str]
) -> tuple[list[ProviderStreamEvent], AirError | None]:
    """Decode and normalise the SSE payloads of one network read.

    Returns:
        The events up to the first failure, and that failure (a malformed payload, a payload
        the normaliser cannot carry over, or an ``error`` event sent by the provider).
    """
    values, bad = decode_json_batch(datas)
    out: list[ProviderStreamEvent] = []
    try:
        failure = normalizer.feed_many(values, out)
        if failure is not None:
            return out, failure
        if normalizer.done:
            return out, None
    except AirException as exc:
        return out, exc.error
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        # valid JSON of the wrong shape (a missing field, a delta for an unopened block)
        detail = f"{type(exc).__name__}: {exc}"
        return out, protocol_error(normalizer.provider_id, "unexpected stream event shape", detail)
    if bad is not None:
        return out, protocol_error(normalizer.provider_id, "malformed SSE data", bad)
    return out, None


class BatchReader:
    """The event batches of a stream, one network read at a time; ``over`` once it has ended.

    The stream's first payload goes out alone so that batching never delays it. A read that
    fails ends in ``failed(error)``; the reader is then over, as after the final event.
    """

    def __init__(
        self, normalizer: StreamNormalizer, failed: Callable[[AirError], ProviderErrorEvent]
    ) -> None:
        self.normalizer = normalizer
        self.failed = failed
        self.first = True
        self.over = False

    def batches(
        self, datas: list[str], *, split: bool = True
    ) -> Iterator[list[ProviderStreamEvent]]:
        """The batches of one read's payloads (``split=False``: never send the first alone)."""
        for batch in (datas[:1], datas[1:]) if split and self.first else (datas,):
            self.first = False
            events, failure = drain(self.normalizer, batch)
            if failure is not None:
                self.over = True
                yield [*events, self.failed(failure)]
                return
            if events:
                yield events
            if self.normalizer.done:
                self.over = True
                return


async def sse_batches(
    normalizer: StreamNormalizer,
    failed: Callable[[AirError], ProviderErrorEvent],
    chunks: AsyncIterator[bytes],
    final: str,
) -> AsyncGenerator[list[ProviderStreamEvent], None]:
    """The event batches of a server-sent-event stream (``BatchReader`` over an
    ``SSEDecoder``), one network read at a time.

    Raises:
        StreamEnded: the body ended before the stream's ``final`` event.
    """
    reader = BatchReader(normalizer, failed)
    decoder = SSEDecoder()
    async for chunk in chunks:
        datas = decoder.feed_data(chunk)
        if not datas:
            continue
        for batch in reader.batches(datas):
            yield batch
        if reader.over:
            return
    for batch in reader.batches([data for _name, data in decoder.close()], split=False):
        yield batch
    if not reader.over:
        raise StreamEnded(final)
