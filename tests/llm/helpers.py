"""Shared builders for provider tests: a ModelsConfig per wire format, canonical inputs, and
a collector that drains ``ProviderManager.complete``."""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import Literal

from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelConfig,
    ModelPrice,
    ModelsConfig,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderKind,
    ProviderStreamEvent,
    RetryConfig,
    TextBlock,
    ToolSpec,
)
from air.llm.manager import ProviderManager
from tests.llm.servers import Turn, anthropic_sse, openai_sse

Wire = Literal["anthropic", "anthropic_http", "openai"]
WIRES: list[Wire] = ["anthropic", "anthropic_http", "openai"]
"""anthropic = the official SDK; anthropic_http = the same wire over plain httpx."""
PRICE = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3)
FAST_RETRY = RetryConfig(max_attempts=3, base_delay_s=0.001, max_delay_s=0.01, deadline_s=10)


def models_config(
    wire: Wire,
    base_url: str,
    *,
    record_to: str | None = None,
    retry: RetryConfig = FAST_RETRY,
    read_timeout_s: float = 10,
    max_output_tokens: int = 8192,
) -> ModelsConfig:
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE if wire == "openai" else ProviderKind.ANTHROPIC,
        transport="http" if wire == "anthropic_http" else "sdk",
        base_url=base_url + "/v1" if wire == "openai" else base_url,
        auth_ref="AIR_TEST_KEY",
        record_to=record_to,
        timeout_s=10,
        read_timeout_s=read_timeout_s,
        models={
            "m1": ModelConfig(
                price=PRICE, api_model="wire-model", max_output_tokens=max_output_tokens
            )
        },
    )
    return ModelsConfig(default="p/m1", retry=retry, providers={"p": provider})


def sse_for(wire: Wire, turn: Turn) -> list[bytes]:
    return openai_sse(turn) if wire == "openai" else anthropic_sse(turn)


def request(**extra: object) -> ProviderCompletionInput:
    base: dict[str, object] = {
        "provider_id": "p",
        "model_id": "m1",
        "system": "You are terse.",
        "messages": [CanonicalMessage(role="user", content=[TextBlock(text="hi")])],
        "tools": [
            ToolSpec(
                name="read_file",
                description="Read a file",
                input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
            )
        ],
        "max_tokens": 256,
        "session_id": "ses_1",
        "task_id": "task_1",
        "agent_id": "agt_1",
    }
    base.update(extra)
    return ProviderCompletionInput.model_validate(base)


@dataclass
class Collected:
    events: list[ProviderStreamEvent]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def stop(self) -> MessageStopEvent:
        """The message the stream ended with (it must end with one)."""
        last = self.events[-1]
        assert isinstance(last, MessageStopEvent), last
        return last


async def collect(manager: ProviderManager, req: ProviderCompletionInput) -> Collected:
    events: list[ProviderStreamEvent] = []
    async with aclosing(manager.complete(req)) as stream:
        async for event in stream:
            events.append(event)
    return Collected(events)
