"""Cassettes: ScriptedProvider replays one, RecordingProvider writes one (IMPL-LLM-5).

Owns the cassette line model ``CassetteTurn`` (JSONL, one model turn a line: content blocks,
stop_reason, usage, plus the delta chunking and what the turn expects of the conversation) —
documented by ``air/llm/schemas/cassette.schema.json`` — and both providers. Replay is
deterministic: turn i answers the i-th ``complete`` call, re-emitting the recorded deltas, so
a recorded stream replays to the identical event stream. A cassette never holds credentials.
"""

import json
import os
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Literal, Protocol, Self

import trio
from pydantic import Field, ValidationError

from air.contracts.error import AirException
from air.contracts.ids import Contract
from air.contracts.provider import (
    CanonicalMessage,
    ContentBlock,
    MessageStartEvent,
    MessageStopEvent,
    ModelConfig,
    ModelPrice,
    ProviderCapabilityMatrix,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderKind,
    ProviderStreamEvent,
    StopReason,
    TextBlock,
    TextDeltaEvent,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseInputDeltaEvent,
    ToolUseStartEvent,
    ToolUseStopEvent,
    Usage,
)
from air.llm.adapter import ProviderAdapter
from air.llm.errors import models_reference
from air.small_file import read_small

__all__ = [
    "CassetteExpect",
    "CassetteTurn",
    "RecordingProvider",
    "ScriptedProvider",
    "TaskRecorder",
    "cassette_json_schema",
    "cassette_line",
    "load_cassette",
    "write_turn",
]


class CassetteExpect(Contract):
    """What the request answered by this turn must contain."""

    tool_result_ids: list[str] | None = None
    """The ``tool_use_id`` of every tool_result block in the request's last user message."""


class CassetteTurn(Contract):
    """One line of a cassette: one assistant turn."""

    v: Literal[1] = 1
    message_id: str | None = None
    model_id: str | None = None
    content: list[ContentBlock]
    stop_reason: StopReason
    usage: Usage = Field(default_factory=Usage)
    chunks: list[list[str]] | None = None
    """Per content block, the deltas as streamed (text pieces / partial JSON pieces)."""
    expect: CassetteExpect | None = None


def cassette_json_schema() -> dict[str, Any]:
    """The JSON Schema of one cassette line (kept in ``schemas/cassette.schema.json``)."""
    schema = CassetteTurn.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "air cassette line (one assistant turn; a cassette is JSONL of these)"
    return schema


def _bad(path: str, line: int, message: str) -> AirException:
    return AirException.of(
        kind="validation_error",
        message=f"{path}:{line}: {message}",
        user_action="Fix or re-record the cassette (format: air/llm/schemas/cassette.schema.json).",
    )


MAX_CASSETTE_BYTES = 64 * 1024 * 1024
"""The largest cassette read (a cassette holds model turns only: 600 long turns are ~10 MiB).
Found: a repository's 2 GiB cassette took 18 s and 4 GiB of memory to refuse."""


def load_cassette(path: str) -> list[CassetteTurn]:
    """Read and validate a cassette; AirException naming file and line on any problem."""
    try:
        lines = read_small(path, MAX_CASSETTE_BYTES).decode("utf-8").splitlines()
    except OSError as exc:
        raise AirException.of(
            kind="not_found",
            message=f"cannot read cassette {path}: {exc.strerror}",
            user_action="Check the cassette: --cassette's path, or providers.<id>.cassette in "
            "models.yaml.",
        ) from None
    turns: list[CassetteTurn] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            turn = CassetteTurn.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise _bad(path, number, f"{where}: {first['msg']}") from None
        _check_chunks(path, number, turn)
        turns.append(turn)
    return turns


def _check_chunks(path: str, number: int, turn: CassetteTurn) -> None:
    if turn.chunks is None:
        return
    if len(turn.chunks) != len(turn.content):
        raise _bad(path, number, "chunks must have one list per content block")
    for block, pieces in zip(turn.content, turn.chunks, strict=True):
        joined = "".join(pieces)
        if isinstance(block, TextBlock) and joined != block.text:
            raise _bad(path, number, "text chunks do not join to the block's text")
        if isinstance(block, ToolUseBlock):
            try:
                parsed = json.loads(joined) if joined else {}
            except (ValueError, RecursionError):
                raise _bad(path, number, "tool_use chunks are not valid JSON") from None
            if parsed != block.input:
                raise _bad(path, number, "tool_use chunks do not join to the block's input")
        if isinstance(block, ToolResultBlock):
            raise _bad(path, number, "an assistant turn cannot hold a tool_result block")


def _last_tool_result_ids(messages: list[CanonicalMessage]) -> list[str]:
    if not messages or messages[-1].role != "user":
        return []
    return [b.tool_use_id for b in messages[-1].content if isinstance(b, ToolResultBlock)]


def turn_events(
    turn: CassetteTurn, request_model: str, provider_id: str, number: int
) -> list[ProviderStreamEvent]:
    """The event stream a turn replays to."""
    events: list[ProviderStreamEvent] = [
        MessageStartEvent(
            message_id=turn.message_id or f"msg_scripted_{number}",
            model_id=turn.model_id or request_model,
            provider_id=provider_id,
        )
    ]
    for index, block in enumerate(turn.content):
        pieces = turn.chunks[index] if turn.chunks is not None else None
        if isinstance(block, TextBlock):
            for piece in pieces if pieces is not None else ([block.text] if block.text else []):
                events.append(TextDeltaEvent(index=index, text=piece))
        elif isinstance(block, ToolUseBlock):
            events.append(ToolUseStartEvent(index=index, id=block.id, name=block.name))
            default = [json.dumps(block.input, ensure_ascii=False)]
            for piece in pieces if pieces is not None else default:
                events.append(ToolUseInputDeltaEvent(index=index, partial_json=piece))
            events.append(ToolUseStopEvent(index=index, input=block.input))
    events.append(
        MessageStopEvent(stop_reason=turn.stop_reason, usage=turn.usage, content=turn.content)
    )
    return events


def cassette_line(
    request: ProviderCompletionInput,
    start: MessageStartEvent | None,
    stop: MessageStopEvent,
    chunks: dict[int, list[str]],
    secrets: list[str],
) -> str:
    """The cassette line of one answered turn (``secrets`` replaced by ``[redacted]``)."""
    content: list[ContentBlock] = list(stop.content)
    turn = CassetteTurn(
        message_id=start.message_id if start else None,
        model_id=start.model_id if start else None,
        content=content,
        stop_reason=stop.stop_reason,
        usage=stop.usage.model_copy(update={"cost_usd": None}),
        chunks=[chunks.get(i, []) for i in range(len(content))],
        expect=CassetteExpect(tool_result_ids=_last_tool_result_ids(request.messages)),
    )
    line = turn.model_dump_json(exclude_none=True)
    for secret in secrets:
        if secret:
            line = line.replace(secret, "[redacted]")
    return line


class ScriptedProvider(ProviderAdapter):
    """Replays a cassette: the i-th ``complete`` call gets turn i, deterministically."""

    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(provider_id, config, env=env)
        if not config.cassette:
            raise AirException.of(
                kind="config_error",
                message=f"scripted provider {provider_id!r} has no cassette",
                user_action=(
                    f"Set providers.{provider_id}.cassette to a JSONL cassette path "
                    f"(reference: {models_reference()})."
                ),
            )
        self.path = config.cassette
        self.turns = load_cassette(self.path)
        self.cursor = 0

    @classmethod
    def from_cassette(
        cls, path: str, *, provider_id: str = "scripted", model_id: str = "scripted"
    ) -> Self:
        """A ScriptedProvider for ``path`` without any models.yaml."""
        config = ProviderConfig(
            kind=ProviderKind.SCRIPTED,
            cassette=os.path.abspath(path),
            models={model_id: ModelConfig(price=ModelPrice())},  # a replay is free
        )
        return cls(provider_id, config)

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        number = self.cursor
        if number >= len(self.turns):
            raise AirException.of(
                kind="provider_error",
                message=(
                    f"cassette {self.path} is exhausted: the conversation asked for turn "
                    f"{number + 1} but it holds {len(self.turns)}"
                ),
                retryability="never",
                user_action="Re-record the cassette; the run took more model turns than recorded.",
            )
        turn = self.turns[number]
        self._check_matches(request, number, turn)
        self.cursor += 1
        for event in turn_events(turn, request.model_id, self.provider_id, number + 1):
            await trio.lowlevel.checkpoint()
            yield [event]

    def _check_matches(
        self, request: ProviderCompletionInput, number: int, turn: CassetteTurn
    ) -> None:
        expected: list[str] | None = None
        if turn.expect is not None and turn.expect.tool_result_ids is not None:
            expected = turn.expect.tool_result_ids
        elif number > 0:
            previous = self.turns[number - 1].content
            expected = [b.id for b in previous if isinstance(b, ToolUseBlock)] or None
        if expected is None:
            return
        got = _last_tool_result_ids(request.messages)
        if sorted(got) != sorted(expected):
            missing = sorted(set(expected) - set(got))
            raise AirException.of(
                kind="provider_error",
                message=(
                    f"cassette {self.path} turn {number + 1} no longer matches the conversation: "
                    f"expected tool_result for {expected}, got {got}"
                ),
                detail=f"missing: {missing}" if missing else None,
                retryability="never",
                user_action="Re-record the cassette; the conversation diverged from the recording.",
            )


def write_turn(path: str, line: str, append: bool) -> None:
    """``line`` as the next turn of the cassette at ``path`` (``append=False``: its first, the
    file started again; its folder made if missing), through no link: a link there (a cloned
    repository's, a task's merged file in a ``--record`` folder inside the project) is
    replaced, never written through."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    if append:
        flags |= os.O_APPEND
    else:
        flags |= os.O_TRUNC
        if os.path.islink(path):
            os.unlink(path)
    fd = os.open(path, flags, 0o644)  # a link put there since: ELOOP, the turn fails
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(line + "\n")


class RecordingProvider(ProviderAdapter):
    """Wraps any adapter; every completed turn is appended to a cassette (record mode)."""

    def __init__(self, inner: ProviderAdapter, path: str) -> None:
        super().__init__(inner.provider_id, inner.config, env=inner._env)
        self.inner = inner
        self.path = os.path.abspath(path)
        self._started = False

    def list_models(self) -> list[ProviderCapabilityMatrix]:
        return self.inner.list_models()

    def secrets(self) -> list[str]:
        return self.inner.secrets()

    async def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        chunks: dict[int, list[str]] = {}
        start: MessageStartEvent | None = None
        async with aclosing(self.inner.complete_batches(request)) as batches:
            async for batch in batches:
                for event in batch:
                    if isinstance(event, MessageStartEvent):
                        start = event
                    elif isinstance(event, TextDeltaEvent):
                        chunks.setdefault(event.index, []).append(event.text)
                    elif isinstance(event, ToolUseStartEvent):
                        chunks.setdefault(event.index, [])
                    elif isinstance(event, ToolUseInputDeltaEvent):
                        chunks.setdefault(event.index, []).append(event.partial_json)
                    elif isinstance(event, MessageStopEvent):
                        await self._write(request, start, event, chunks)
                yield batch

    async def _write(
        self,
        request: ProviderCompletionInput,
        start: MessageStartEvent | None,
        stop: MessageStopEvent,
        chunks: dict[int, list[str]],
    ) -> None:
        line = cassette_line(request, start, stop, chunks, self.secrets())
        append = self._started
        self._started = True
        await trio.to_thread.run_sync(write_turn, self.path, line, append)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Router(Protocol):
    def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]: ...


class TaskRecorder:
    """Record mode of a headless run (``air run --record DIR``; IMPL-API-6): a provider router
    over the real one that writes every answered turn to ``DIR/<task id>.jsonl``.

    The cassettes are the ones ``--cassette DIR`` replays (``TaskCassettes``): one per task,
    the turns of its last attempt (a new attempt of the task starts its cassette again), each
    the turn as finally answered (after the manager's retries). Keys are replaced by
    ``[redacted]``.
    """

    def __init__(self, inner: _Router, directory: str, *, secrets: list[str] | None = None) -> None:
        self.inner = inner
        self.directory = os.path.abspath(directory)
        self.secrets = [s for s in secrets or [] if s]
        self._agent_of_task: dict[str, str] = {}

    def add_retry_listener(self, listener: Any) -> None:
        """Pass retry listeners on to the real router (the WorkerManager records retries)."""
        add = getattr(self.inner, "add_retry_listener", None)
        if add is not None:
            add(listener)

    def add_usage_listener(self, listener: Any) -> None:
        """Pass usage listeners on to the real router (the usage ledger, IMPL-USAGE-1)."""
        add = getattr(self.inner, "add_usage_listener", None)
        if add is not None:
            add(listener)

    def remove_usage_listener(self, listener: Any) -> None:
        remove = getattr(self.inner, "remove_usage_listener", None)
        if remove is not None:
            remove(listener)

    async def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]:
        chunks: dict[int, list[str]] = {}
        start: MessageStartEvent | None = None
        async with aclosing(self.inner.complete(request)) as events:
            async for event in events:
                if isinstance(event, MessageStartEvent):
                    start, chunks = event, {}  # a retried turn streams again from here
                elif isinstance(event, TextDeltaEvent):
                    chunks.setdefault(event.index, []).append(event.text)
                elif isinstance(event, ToolUseStartEvent):
                    chunks.setdefault(event.index, [])
                elif isinstance(event, ToolUseInputDeltaEvent):
                    chunks.setdefault(event.index, []).append(event.partial_json)
                elif isinstance(event, MessageStopEvent):
                    await self._write(
                        request, cassette_line(request, start, event, chunks, self.secrets)
                    )
                yield event

    async def _write(self, request: ProviderCompletionInput, line: str) -> None:
        task = request.task_id or "session"
        agent = request.agent_id or task
        append = self._agent_of_task.get(task) == agent
        self._agent_of_task[task] = agent
        path = os.path.join(self.directory, f"{task}.jsonl")
        await trio.to_thread.run_sync(write_turn, path, line, append)
