"""ProviderManager: the one facade the runtime uses to reach a model (SDD §12.1).

Owns model selection against the capability matrix, lazy creation of adapters (the anthropic
SDK and httpx are imported only when the first adapter of that kind is created, never at
import time of this module), retries of transient failures (exponential backoff with jitter,
honouring ``retry-after``, bounded attempts and a deadline; IMPL-LLM-3), cost per call,
the usage accumulator and the usage listeners (IMPL-USAGE-1). API keys are read from
``auth_ref`` env vars here, in the parent only, and registered by value with the run's
redactor when the manager is built (IMPL-API-4). Retries are per turn, also in the middle of a
stream, and are announced to retry listeners (IMPL-API-5).
``warm_up`` creates an adapter (its client imported and built) in a background thread, so a run
can overlap that import with other start-up work; adapter creation is serialised by a lock, and
the first ``complete`` waits for a warm-up still in progress (IMPL-START-1).
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import trio

from air.contracts.error import AirError, AirException, Retryability
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelAssignment,
    ModelConfig,
    ModelPrice,
    ModelRequirement,
    ModelsConfig,
    ProviderCapabilityMatrix,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderErrorEvent,
    ProviderKind,
    ProviderStreamEvent,
    RetryConfig,
    StopReason,
    TextBlock,
    TextDeltaEvent,
)
from air.llm.adapter import ProviderAdapter, capability_rows
from air.llm.config import load_models_config, nothing_configured
from air.llm.errors import models_reference, retry_after_of
from air.llm.usage import UsageAccumulator, UsageListener, UsageListeners, cost_of

__all__ = [
    "CallRecord",
    "ProviderManager",
    "RetryListener",
    "RetryNotice",
    "SecretSink",
    "scripted_models_config",
    "too_many_tools",
    "tools_too_large",
]


class SecretSink(Protocol):
    """Where the manager registers every key it resolves (``SecretRedactor.register``)."""

    def register(self, *values: str) -> None: ...


@dataclass(eq=False)
class CallRecord:
    """What one ``complete`` call did: attempts, the waits chosen between them, the outcome."""

    provider_id: str
    model_id: str
    attempts: int = 0
    waits: list[float] = field(default_factory=list)
    errors: list[AirError] = field(default_factory=list)
    ok: bool = False


class RetryNotice(NamedTuple):
    """One retry of a model turn, told to the retry listeners before it starts."""

    request: ProviderCompletionInput
    error: AirError
    """Why the attempt failed."""
    attempt: int
    """The attempt that failed (1 = the first)."""
    wait_s: float

    @property
    def reason(self) -> str:
        return f"{self.error.kind.value}: {self.error.message}"


RetryListener = Callable[[RetryNotice], Awaitable[None]]

ASK_AGAIN = (
    "[air] Your previous reply was cut off by the output limit while writing the "
    "input of a call of tool {tool}. Call it again with smaller input, e.g. split the change "
    "into several calls."
)


def _sized(
    request: ProviderCompletionInput, row: ProviderCapabilityMatrix
) -> ProviderCompletionInput:
    """``request`` with the model's ``max_output_tokens`` as ``max_tokens`` (or the request's
    own smaller value when it set one)."""
    ceiling = row.max_output_tokens
    wanted = (
        min(request.max_tokens, ceiling) if "max_tokens" in request.model_fields_set else ceiling
    )
    if wanted == request.max_tokens and "max_tokens" in request.model_fields_set:
        return request
    return request.model_copy(update={"max_tokens": wanted})


def _asked_again(
    request: ProviderCompletionInput, row: ProviderCapabilityMatrix, tool: str, by: str
) -> ProviderCompletionInput:
    """The request that follows a reply cut off inside a call of ``tool``: twice the tokens
    (up to the model's ceiling), or at the ceiling, or when the context window cut it (``by``:
    the stop reason; more tokens cannot help then), the same conversation with a note."""
    if request.max_tokens < row.max_output_tokens and by == StopReason.MAX_TOKENS:
        more = min(row.max_output_tokens, request.max_tokens * 2)
        return request.model_copy(update={"max_tokens": more})
    note = TextBlock(text=ASK_AGAIN.format(tool=tool))
    messages = list(request.messages)
    if messages and note in messages[-1].content:
        return request  # asked once already: the same request again
    if messages and messages[-1].role == "user":
        last = messages[-1]
        messages[-1] = last.model_copy(update={"content": [*last.content, note]})
    else:
        messages.append(CanonicalMessage(role="user", content=[note]))
    return request.model_copy(update={"messages": messages})


_OFFER_ONLY = (
    "list the ones you use under `tools:` of each MCP server in mcp.yaml (`air mcp tools "
    "SERVER` names them) or remove a server; or pick another model (`air run --model`)."
)


def tools_too_large(ref: str, tokens: int, room: int) -> AirException:
    """The refusal of a session whose tool definitions alone would fill the room a request to
    ``ref`` has for them: what a worker's first context leaves of the window
    (``air.context.worker_pack.context_budget``, IMPL-CTX-6)."""
    return AirException.of(
        kind="config_error",
        message=f"the tools' definitions take ~{tokens} tokens of every request to {ref}, "
        f"which leaves a worker's context no room (at most ~{room})",
        user_action=f"Offer less: {_OFFER_ONLY}",
        metadata={"model": ref, "tokens": tokens, "room": room},
    )


def too_many_tools(ref: str, offered: int, bound: int) -> AirException:
    """The refusal of a request (or a session) that would offer ``ref`` more tools than its API
    takes in one request (``ModelConfig.max_tools``): air's own words, before anything is sent,
    never the provider's 400 in the middle of a task."""
    return AirException.of(
        kind="config_error",
        message=f"{offered} tools would be offered to {ref}, whose API takes at most {bound} "
        "in one request",
        user_action=f"Offer fewer tools: {_OFFER_ONLY}",
        metadata={"model": ref, "tools": offered, "max_tools": bound},
    )


def scripted_models_config(
    cassette: str, *, provider_id: str = "scripted", model_id: str = "scripted"
) -> ModelsConfig:
    """A ModelsConfig holding one scripted provider that replays ``cassette``."""
    return ModelsConfig(
        default=f"{provider_id}/{model_id}",
        providers={
            provider_id: ProviderConfig(
                kind=ProviderKind.SCRIPTED,
                cassette=cassette,
                models={model_id: ModelConfig(price=ModelPrice())},
            )
        },
    )


class ProviderManager:
    """Routes completions to adapters created on first use; close with ``aclose``."""

    def __init__(
        self,
        config: ModelsConfig,
        *,
        env: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
        redactor: SecretSink | None = None,
    ) -> None:
        self.config = config
        self._env = env
        self.redactor = redactor
        self.register_keys()
        self._rng = rng or random.Random()
        self._adapters: dict[str, ProviderAdapter] = {}
        self._adapter_lock = threading.Lock()
        self._warming: list[threading.Thread] = []
        self.usage = UsageAccumulator()
        self.calls: list[CallRecord] = []
        self._retry_listeners: list[RetryListener] = []
        self._usage_listeners = UsageListeners()

    @classmethod
    def load_config(
        cls,
        project_root: str | None,
        *,
        home: str | None = None,
        env: Mapping[str, str] | None = None,
        project_trusted: bool = False,
    ) -> ModelsConfig:
        """``~/.air/models.yaml`` merged with ``<project>/.air/shared/models.yaml``; without
        the user's file, the configuration the environment gives (``ANTHROPIC_API_KEY``...).

        Raises:
            AirException(config_error): naming the file and the field.
            AirException(untrusted_config): the project defines a provider, not trusted.
        """
        return load_models_config(project_root, home=home, env=env, project_trusted=project_trusted)

    @classmethod
    def for_cassette(cls, cassette: str, *, model_id: str = "scripted") -> ProviderManager:
        """A manager whose only provider replays ``cassette`` (headless runs, tests)."""
        return cls(scripted_models_config(cassette, model_id=model_id))

    # --- secrets ------------------------------------------------------------------------------

    def _keys(self) -> dict[str, str]:
        env = os.environ if self._env is None else self._env
        found: dict[str, str] = {}
        for provider in self.config.providers.values():
            for _, ref in provider.credential_refs():
                value = env.get(ref)
                if value:
                    found[ref] = value
        return found

    def register_keys(self) -> list[str]:
        """Register the value of every provider's ``auth_ref`` and ``header_refs`` with the
        redactor, whatever its shape, before any request (IMPL-API-4). Returns the names of the
        variables found."""
        found = self._keys()
        if self.redactor is not None and found:
            self.redactor.register(*found.values())
        return list(found)

    def secrets(self) -> list[str]:
        """The key values this manager resolves (for writers that must leave them out)."""
        return list(self._keys().values())

    # --- selection ----------------------------------------------------------------------------

    def tool_room(self, ref: str) -> ProviderCapabilityMatrix | None:
        """What bounds the tools of one request to ``ref`` (``provider_id/model_id``): its
        ``max_tools``, its window and the reply's share of it; ``None``: ``ref`` is not
        configured (its own check says so)."""
        provider_id, _, model_id = ref.partition("/")
        for row in self.list_models():
            if row.provider_id == provider_id and row.model_id == model_id:
                return row
        return None

    def list_models(self) -> list[ProviderCapabilityMatrix]:
        rows: list[ProviderCapabilityMatrix] = []
        for provider_id, provider in self.config.providers.items():
            rows.extend(capability_rows(provider_id, provider))
        return rows

    def _row(self, ref: str, field_name: str) -> ProviderCapabilityMatrix:
        provider_id, _, model_id = ref.partition("/")
        for row in self.list_models():
            if row.provider_id == provider_id and row.model_id == model_id:
                return row
        raise AirException.of(
            kind="config_error",
            message=f"{field_name} {ref!r} is not a configured provider_id/model_id",
            user_action=(
                "Use `air provider list` to see the configured models "
                f"(models.yaml reference: {models_reference()})."
            ),
        )

    @staticmethod
    def _unmet(row: ProviderCapabilityMatrix, req: ModelRequirement) -> str | None:
        if req.needs_tools and not row.supports_tools:
            return "no tool use"
        if row.context_window < req.min_context_window:
            return f"context window {row.context_window} < {req.min_context_window}"
        if row.max_output_tokens < req.min_output_tokens:
            return f"max output {row.max_output_tokens} < {req.min_output_tokens}"
        if req.provider_id is not None and row.provider_id != req.provider_id:
            return f"provider is not {req.provider_id}"
        return None

    def select_model(self, requirement: ModelRequirement) -> ModelAssignment:
        """Explicit model > role pin > default (if it fits) > cheapest fitting model.

        Raises:
            AirException(config_error): nothing is configured, the requirement names a provider
                that is not, or nothing configured fits the requirement.
        """
        if not self.config.providers:
            raise nothing_configured()
        wanted = requirement.provider_id
        if wanted is not None and wanted not in self.config.providers:
            known = ", ".join(sorted(self.config.providers))
            raise AirException.of(
                kind="config_error",
                message=f"provider {wanted!r} is not configured (configured: {known})",
                user_action=(
                    "Pass one of the configured providers, or add it under `providers:` in "
                    f"models.yaml (reference: {models_reference()})."
                ),
            )
        pinned: list[tuple[str, str, str]] = []
        if requirement.model:
            pinned.append((requirement.model, "explicit", "model"))
        if requirement.role and requirement.role in self.config.roles:
            pinned.append((self.config.roles[requirement.role], f"role:{requirement.role}", "role"))
        for ref, reason, field_name in pinned[:1]:
            row = self._row(ref, field_name)
            unmet = self._unmet(row, requirement)
            if unmet is not None:
                raise AirException.of(
                    kind="config_error",
                    message=f"{ref} does not meet the requirement: {unmet}",
                    user_action=(
                        "Pin another model in models.yaml, or relax the requirement "
                        f"(reference: {models_reference()})."
                    ),
                )
            return ModelAssignment(
                provider_id=row.provider_id, model_id=row.model_id, capabilities=row, reason=reason
            )
        if self.config.default:
            row = self._row(self.config.default, "default")
            if self._unmet(row, requirement) is None and (
                requirement.tier is None or requirement.tier == row.tier
            ):
                return ModelAssignment(
                    provider_id=row.provider_id,
                    model_id=row.model_id,
                    capabilities=row,
                    reason="default",
                )
        fitting = [r for r in self.list_models() if self._unmet(r, requirement) is None]
        if requirement.tier is not None:
            fitting.sort(key=lambda r: r.tier != requirement.tier)
        if not fitting:
            raise AirException.of(
                kind="config_error",
                message="no configured model meets the requirement",
                detail=requirement.model_dump_json(exclude_defaults=True),
                user_action=(
                    "Add a suitable model to ~/.air/models.yaml (see `air provider list`; "
                    f"reference: {models_reference()})."
                ),
            )
        fitting.sort(
            key=lambda r: (
                requirement.tier is not None and r.tier != requirement.tier,
                r.price.input + r.price.output if r.price is not None else float("inf"),
                r.provider_id,
                r.model_id,
            )
        )
        row = fitting[0]
        return ModelAssignment(
            provider_id=row.provider_id, model_id=row.model_id, capabilities=row, reason="matched"
        )

    # --- adapters -----------------------------------------------------------------------------

    def adapter_for(self, provider_id: str) -> ProviderAdapter:
        """The adapter of ``provider_id``; created, and its client imported, on first use."""
        adapter = self._adapters.get(provider_id)
        if adapter is not None:
            return adapter
        with self._adapter_lock:  # a warm-up thread may be creating it right now
            return self._create_locked(provider_id, warm=False)

    def _create_locked(self, provider_id: str, *, warm: bool) -> ProviderAdapter:
        adapter = self._adapters.get(provider_id)
        if adapter is not None:
            return adapter
        config = self.config.providers.get(provider_id)
        if config is None:
            raise AirException.of(
                kind="config_error",
                message=f"provider {provider_id!r} is not configured",
                user_action=(
                    "Add it under `providers:` in ~/.air/models.yaml or the project file "
                    f"(reference: {models_reference()})."
                ),
            )
        adapter = _create_adapter(provider_id, config, self._env)
        if config.record_to:
            from air.llm.cassette import RecordingProvider

            adapter = RecordingProvider(adapter, config.record_to)
        if warm:
            adapter.warm()  # before it is published: nobody else uses it meanwhile
        self._adapters[provider_id] = adapter
        return adapter

    def warm_up(self, provider_id: str) -> None:
        """Create the adapter of ``provider_id`` and its client (``ProviderAdapter.warm``) in a
        daemon thread and return at once.

        Best effort: a failure (unknown provider, missing base_url, ...) is left for the first
        ``complete``, which creates the adapter again and raises it there.
        """

        def create() -> None:
            try:
                with self._adapter_lock:
                    self._create_locked(provider_id, warm=True)
            except Exception:  # why: reported by the first real use, which retries the creation
                return

        thread = threading.Thread(target=create, name=f"air-warm-{provider_id}", daemon=True)
        self._warming.append(thread)
        thread.start()

    # --- completion ---------------------------------------------------------------------------

    def _backoff(self, attempt: int, retry: RetryConfig, retry_after: float | None) -> float:
        delay = min(retry.max_delay_s, retry.base_delay_s * (2.0 ** (attempt - 1)))
        delay *= 1.0 - retry.jitter * self._rng.random()
        return max(delay, retry_after or 0.0)

    async def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]:
        """Stream one model turn; the last event is ``message_stop`` or ``error``.

        ``max_tokens`` is the model's ``max_output_tokens`` (models.yaml / the capability
        matrix), or less when the request sets it explicitly. A transient failure — before the
        first event or in the middle of the stream (an overloaded event, a dropped connection,
        a read stall) — retries this turn within ``retry:`` (IMPL-API-5); a retried turn
        streams again from its ``message_start``, so a consumer keeps only the last message's
        deltas (``message_stop`` carries the whole message). A reply cut off by ``max_tokens``
        inside a tool call is asked again at once, with more tokens when the model allows, else
        with a note asking for smaller tool input. Every retry is announced to the retry
        listeners first (``add_retry_listener``).

        Raises:
            AirException: bad input (unknown provider/model, unconvertible conversation,
                missing key, exhausted cassette, more tools than the model takes) — nothing was
                sent.
        """
        if request.provider_id not in self._adapters:
            for thread in self._warming:  # wait off the event loop for a warm-up in progress
                if thread.is_alive():
                    await trio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
        adapter = self.adapter_for(request.provider_id)
        row = adapter.validate_model(request.model_id)
        if row.max_tools is not None and len(request.tools) > row.max_tools:
            ref = f"{request.provider_id}/{request.model_id}"
            raise too_many_tools(ref, len(request.tools), row.max_tools)
        attempt = _sized(request, row)
        retry = self.config.retry
        record = CallRecord(provider_id=request.provider_id, model_id=request.model_id)
        self.calls.append(record)
        started = trio.current_time()
        while True:
            record.attempts += 1
            failure: AirError | None = None
            async with aclosing(adapter.complete_batches(attempt)) as batches:
                async for batch in batches:
                    for event in batch:
                        if type(event) is TextDeltaEvent:  # the bulk of a stream
                            yield event
                            continue
                        if isinstance(event, ProviderErrorEvent):
                            failure = event.error
                            break
                        if isinstance(event, MessageStopEvent):
                            usage = event.usage.model_copy(
                                update={"cost_usd": cost_of(event.usage, row.price)}
                            )
                            self.usage.add(
                                usage,
                                session_id=request.session_id,
                                task_id=request.task_id,
                                agent_id=request.agent_id,
                            )
                            record.ok = True
                            event = event.model_copy(update={"usage": usage})
                            await self._usage_listeners.count(request, usage)
                        yield event
                    if failure is not None:
                        break
            if failure is None:
                return
            record.errors.append(failure)
            final = failure.model_copy(
                update={"metadata": {**(failure.metadata or {}), "attempts": record.attempts}}
            )
            if (
                failure.retryability is not Retryability.TRANSIENT
                or record.attempts >= retry.max_attempts
            ):
                yield ProviderErrorEvent(error=final)
                return
            cut = (failure.metadata or {}).get("cut_in_tool")
            delay = 0.0 if cut else self._backoff(record.attempts, retry, retry_after_of(failure))
            if trio.current_time() - started + delay > retry.deadline_s:
                yield ProviderErrorEvent(error=final)
                return
            record.waits.append(delay)
            if cut:
                by = str((failure.metadata or {}).get("cut_by", StopReason.MAX_TOKENS))
                attempt = _asked_again(attempt, row, str(cut), by)
            await self._announce(
                RetryNotice(request=request, error=failure, attempt=record.attempts, wait_s=delay)
            )
            await trio.sleep(delay)

    # --- retry listeners ----------------------------------------------------------------------

    def add_retry_listener(self, listener: RetryListener) -> None:
        """Call ``listener`` (awaited) before each retry of a turn, with its reason."""
        self._retry_listeners.append(listener)

    # --- usage listeners ----------------------------------------------------------------------

    def add_usage_listener(self, listener: UsageListener) -> None:
        """Await ``listener`` with each completed call's ``UsageRecord`` (IMPL-USAGE-1)."""
        self._usage_listeners.add(listener)

    def remove_usage_listener(self, listener: UsageListener) -> None:
        self._usage_listeners.remove(listener)

    async def _announce(self, notice: RetryNotice) -> None:
        for listener in list(self._retry_listeners):
            try:
                await listener(notice)
            except Exception:  # why: reporting a retry must never stop the retry itself
                continue

    async def aclose(self) -> None:
        """Close every adapter's client (bounded; shielded so cancellation cannot leak sockets)."""
        with trio.move_on_after(5, shield=True):  # closing must finish even when cancelled
            warming, self._warming = self._warming, []
            for thread in warming:  # an adapter it creates must be closed too
                await trio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
            adapters, self._adapters = list(self._adapters.values()), {}
            for adapter in adapters:
                await adapter.aclose()


def _create_adapter(
    provider_id: str, config: ProviderConfig, env: Mapping[str, str] | None
) -> ProviderAdapter:
    if config.kind is ProviderKind.ANTHROPIC and config.transport == "http":
        from air.llm.anthropic_http import AnthropicHttpAdapter

        return AnthropicHttpAdapter(provider_id, config, env=env)
    if config.kind is ProviderKind.ANTHROPIC:
        from air.llm.adapter import skip_httpx_cli

        skip_httpx_cli()  # the SDK imports httpx
        from air.llm.anthropic_adapter import AnthropicAdapter

        return AnthropicAdapter(provider_id, config, env=env)
    if config.kind is ProviderKind.OPENAI_COMPATIBLE:
        from air.llm.openai_compat import OpenAICompatibleAdapter

        return OpenAICompatibleAdapter(provider_id, config, env=env)
    from air.llm.cassette import ScriptedProvider

    return ScriptedProvider(provider_id, config, env=env)
