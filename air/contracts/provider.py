"""Provider contracts (contracts §15): capability matrix, model requirement and assignment,
completion input and the normalised stream events, usage, and the models.yaml config shape.

Owns: the canonical message format (Anthropic content blocks: ``text``, ``tool_use``,
``tool_result``, the model's ``thinking`` / ``redacted_thinking`` and OpenAI's
``openai_reasoning`` items, kept to be sent back unchanged on their own wire; the system
prompt separate; tools as Anthropic tool definitions), the ``ProviderStreamEvent`` union every
adapter yields, ``Usage`` with cost, and the ``ModelsConfig`` tree loaded from
``~/.air/models.yaml`` + ``<project>/.air/shared/models.yaml``.
Pure pydantic; no I/O (IMPL-LLM-1 in docs/decisions.md).
"""

import re
from enum import StrEnum
from typing import Annotated, Literal, Self, TypeAlias

from pydantic import Field, field_validator, model_validator

from air.contracts.error import AirError
from air.contracts.ids import (
    AgentID,
    Contract,
    JsonObject,
    ProviderID,
    SessionID,
    TaskID,
    empty_list,
)

__all__ = [
    "PRICE_MAX",
    "TOKENS_MAX",
    "WINDOW_MAX",
    "CacheControl",
    "CanonicalMessage",
    "ContentBlock",
    "LongPromptPrice",
    "MessageStartEvent",
    "MessageStopEvent",
    "ModelAssignment",
    "ModelConfig",
    "ModelPrice",
    "ModelRequirement",
    "ModelsConfig",
    "OpenAIReasoningBlock",
    "ProviderCapabilityMatrix",
    "ProviderCompletionInput",
    "ProviderConfig",
    "ProviderErrorEvent",
    "ProviderKind",
    "ProviderStreamEvent",
    "ReasoningContentBlock",
    "ReasoningDetailsBlock",
    "ReasoningEffort",
    "RedactedThinkingBlock",
    "RetryConfig",
    "StopReason",
    "TextBlock",
    "TextDeltaEvent",
    "ThinkingBlock",
    "ToolChoice",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "ToolUseInputDeltaEvent",
    "ToolUseStartEvent",
    "ToolUseStopEvent",
    "Usage",
    "unparsed_call",
]


# --- canonical content (Anthropic content blocks) -------------------------------------------


class CacheControl(Contract):
    """Anthropic prompt-caching marker; passed through to Anthropic unchanged."""

    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] | None = None


class TextBlock(Contract):
    type: Literal["text"] = "text"
    text: str
    cache_control: CacheControl | None = None


class ToolUseBlock(Contract):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: JsonObject
    extra_content: JsonObject | None = None
    """What an OpenAI-compatible chat server put beside the call (``extra_content``: Gemini's
    ``google.thought_signature``, which it refuses the call back without): sent back with it on
    that wire only (IMPL-THINK-1)."""
    input_error: str | None = None
    """Why the model's input did not parse (a finished reply's, not one cut off): the call
    keeps ``{}`` and is answered with this error, never made, so the model can call again
    (IMPL-API-8); sent on no wire."""


def unparsed_call(name: str, problem: str) -> str:
    """The answer to a call whose input did not parse (``ToolUseBlock.input_error``), as the
    worker and the Main Agent give it to the model (IMPL-API-8)."""
    return (
        f"The call of {name} was not made: {problem}. Call {name} again with its input as one "
        "JSON object (double-quoted keys and strings, no trailing commas)."
    )


class ToolResultBlock(Contract):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[TextBlock] = ""
    is_error: bool = False
    cache_control: CacheControl | None = None


class ThinkingBlock(Contract):
    """The model's reasoning (empty ``thinking`` at the API's default display) and the
    ``signature`` the API checks when the block comes back: air never shows it, and sends it
    back unchanged, in place, within the conversation that produced it (IMPL-THINK-1)."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingBlock(Contract):
    """Reasoning the API sends encrypted (``data``): kept and sent back like ``ThinkingBlock``."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ReasoningContentBlock(Contract):
    """The reasoning an OpenAI-compatible chat server streams as ``reasoning_content``
    (DeepSeek's thinking mode, vLLM, Kimi), kept to go back on that wire's assistant message:
    DeepSeek refuses a tool-call turn sent back without it. Never shown; the other wires leave
    it out (IMPL-THINK-1)."""

    type: Literal["reasoning_content"] = "reasoning_content"
    text: str


class ReasoningDetailsBlock(Contract):
    """The ``reasoning_details`` OpenRouter streams (its items of one reasoning text merged, as
    its own client merges them), kept to go back unchanged on that wire's assistant message:
    Gemini behind it refuses a tool call back without them. Never shown; the other wires leave
    it out (IMPL-THINK-1)."""

    type: Literal["reasoning_details"] = "reasoning_details"
    details: list[JsonObject]


class OpenAIReasoningBlock(Contract):
    """A reasoning item of OpenAI's Responses API, kept to be replayed (``store: false``) and
    never shown: only that wire sends it; the others leave it out."""

    type: Literal["openai_reasoning"] = "openai_reasoning"
    id: str
    encrypted_content: str | None = None
    summary: list[str] = Field(default_factory=empty_list)
    """The reasoning summary's texts (replayed as they came)."""
    next_item_ids: list[str] = Field(default_factory=empty_list)
    """The ids of the output items that followed it, in order (one per text or tool_use block
    after it): the API refuses those items replayed without it, and it without them."""


ContentBlock: TypeAlias = Annotated[
    TextBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | OpenAIReasoningBlock
    | ReasoningContentBlock
    | ReasoningDetailsBlock,
    Field(discriminator="type"),
]


class CanonicalMessage(Contract):
    """One conversation turn. Assistant turns hold text/tool_use and the model's thinking
    blocks; user turns text/tool_result."""

    role: Literal["user", "assistant"]
    content: list[ContentBlock]


class ToolSpec(Contract):
    """An Anthropic tool definition (name, description, JSON-Schema input)."""

    name: str
    description: str = ""
    input_schema: JsonObject
    cache_control: CacheControl | None = None


class ToolChoice(Contract):
    """``auto`` (default), ``any`` (call some tool), ``tool`` (call ``name``), ``none``."""

    type: Literal["auto", "any", "tool", "none"] = "auto"
    name: str | None = None


class StopReason(StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    PAUSE_TURN = "pause_turn"
    REFUSAL = "refusal"
    MODEL_CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"
    """Claude's (Sonnet 4.5 and later): the reply filled the context window; cut as by
    ``max_tokens``."""


# --- capability, requirement, assignment ----------------------------------------------------


class ProviderKind(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI_COMPATIBLE = "openai_compatible"
    SCRIPTED = "scripted"


PRICE_MAX = 1_000_000.0
"""The highest price air takes (USD per million tokens): with token counts bounded by the
adapters, a call's cost stays a finite float."""


class LongPromptPrice(Contract):
    """The rates of a call whose prompt (input, cache reads and cache writes) is over
    ``threshold_tokens``, on every token of that call, output included (Claude Haiku 5.5)."""

    threshold_tokens: int = Field(ge=1)
    input: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    output: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    cache_write: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    cache_read: float = Field(default=0.0, ge=0, le=PRICE_MAX)


class ModelPrice(Contract):
    """USD per million tokens: never negative (a negative price buys budget back)."""

    input: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    output: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    cache_write: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    cache_read: float = Field(default=0.0, ge=0, le=PRICE_MAX)
    long_prompt: LongPromptPrice | None = None
    """Other rates past a prompt length (``None``: the same rates at every length)."""


class ProviderCapabilityMatrix(Contract):
    """What one model of one provider can do (one row of provider-capability-matrix-v1)."""

    provider_id: ProviderID
    model_id: str
    kind: ProviderKind
    context_window: int
    max_output_tokens: int
    supports_tools: bool = True
    supports_streaming: bool = True
    supports_system_prompt: bool = True
    supports_prompt_cache: bool = False
    supports_parallel_tool_calls: bool = True
    tier: Literal["small", "medium", "large"] = "medium"
    price: ModelPrice | None = None
    """``None``: the price is unknown (never taken as free)."""
    max_tools: int | None = None
    """``ModelConfig.max_tools``."""


class ModelRequirement(Contract):
    """What a caller needs from a model; ``select_model`` matches it against the matrix."""

    role: str | None = None
    """An agent role (``main``, ``executor``...); ``roles:`` in models.yaml may pin a model."""
    model: str | None = None
    """An explicit ``provider_id/model_id``; wins over everything else."""
    needs_tools: bool = True
    min_context_window: int = 0
    min_output_tokens: int = 0
    tier: Literal["small", "medium", "large"] | None = None
    provider_id: ProviderID | None = None


class ModelAssignment(Contract):
    provider_id: ProviderID
    model_id: str
    capabilities: ProviderCapabilityMatrix
    reason: str
    """Why this model: ``explicit``, ``role:<name>``, ``default`` or ``matched``."""


# --- completion input -----------------------------------------------------------------------


class ProviderCompletionInput(Contract):
    provider_id: ProviderID
    model_id: str
    messages: list[CanonicalMessage]
    system: str | list[TextBlock] | None = None
    tools: list[ToolSpec] = Field(default_factory=empty_list)
    tool_choice: ToolChoice | None = None
    max_tokens: int = 4096
    temperature: float | None = None
    stop_sequences: list[str] = Field(default_factory=empty_list)
    session_id: SessionID | None = None
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    """Who pays: usage is summed per session, task and agent."""


# --- usage ----------------------------------------------------------------------------------


class Usage(Contract):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = None
    """Filled in by the ProviderManager from the model's price; ``None`` from adapters."""


# --- stream events --------------------------------------------------------------------------


class MessageStartEvent(Contract):
    type: Literal["message_start"] = "message_start"
    message_id: str
    model_id: str
    provider_id: ProviderID


class TextDeltaEvent(Contract):
    type: Literal["text_delta"] = "text_delta"
    index: int
    """Index of the content block in the final message."""
    text: str


class ToolUseStartEvent(Contract):
    type: Literal["tool_use_start"] = "tool_use_start"
    index: int
    id: str
    name: str


class ToolUseInputDeltaEvent(Contract):
    type: Literal["tool_use_input_delta"] = "tool_use_input_delta"
    index: int
    partial_json: str


class ToolUseStopEvent(Contract):
    type: Literal["tool_use_stop"] = "tool_use_stop"
    index: int
    input: JsonObject
    """The parsed tool input (the concatenated partial JSON)."""


class MessageStopEvent(Contract):
    type: Literal["message_stop"] = "message_stop"
    stop_reason: StopReason
    usage: Usage
    content: list[ContentBlock]
    """The whole assistant message, assembled from the deltas."""


class ProviderErrorEvent(Contract):
    """Always the last event of a failed call; ``error.retryability`` says what to do."""

    type: Literal["error"] = "error"
    error: AirError


ProviderStreamEvent: TypeAlias = Annotated[
    MessageStartEvent
    | TextDeltaEvent
    | ToolUseStartEvent
    | ToolUseInputDeltaEvent
    | ToolUseStopEvent
    | MessageStopEvent
    | ProviderErrorEvent,
    Field(discriminator="type"),
]


# --- models.yaml ----------------------------------------------------------------------------


class RetryConfig(Contract):
    """Backoff for transient failures (429, 529, overloaded, dropped connections)."""

    max_attempts: int = Field(default=5, ge=1)
    base_delay_s: float = Field(default=0.5, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    deadline_s: float = Field(default=300.0, gt=0)
    """No retry starts after this long since the first attempt."""
    jitter: float = Field(default=0.5, ge=0, le=1)
    """Fraction of each backoff delay that is randomised away (0 = none)."""


ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


TOKENS_MAX = 2**53
"""The largest token count air records (JSON's largest exact integer): a count is what a call
costs, so a negative one would buy budget back and one of 400 digits overflows a price's float
or a column's INTEGER. A server's usage and a worker's checkpoint are held to it."""
WINDOW_MAX = 100_000_000
"""The largest context window or output limit air takes, in tokens (the largest served today:
10 M): a budget of 400 digits overflowed the float of the compaction trigger."""


class ModelConfig(Contract):
    """One model of one provider. Fields left out come from the shipped catalogue
    (``air/llm/resources/models.json``) when it knows the model, else these defaults."""

    context_window: int = Field(default=200_000, ge=1, le=WINDOW_MAX)
    max_output_tokens: int = Field(default=8192, ge=1, le=WINDOW_MAX)
    supports_tools: bool = True
    supports_prompt_cache: bool = False
    supports_parallel_tool_calls: bool = True
    supports_vision: bool = False
    tier: Literal["small", "medium", "large"] = "medium"
    price: ModelPrice | None = None
    """USD per million tokens; ``None``: unknown (shown as unknown, never taken as free)."""
    api_model: str | None = None
    """The name the provider knows the model by, when it differs from the key."""
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The request field carrying the output limit (OpenAI's reasoning models refuse
    ``max_tokens``)."""
    reasoning_efforts: list[ReasoningEffort] = Field(default_factory=empty_list)
    """The ``reasoning_effort`` values the model takes (empty: it takes none)."""
    reasoning_effort: ReasoningEffort | None = None
    """Sent as ``reasoning_effort`` (one of ``reasoning_efforts``)."""
    params: JsonObject = Field(default_factory=dict)
    """More request fields, sent as they are (e.g. ``top_p``)."""
    max_tools: int | None = Field(default=None, ge=1)
    """The most tools one request may offer, where the API sets a bound (OpenAI's chat
    completions: 128); ``None``: none known."""
    api: Literal["chat_completions", "responses"] = "chat_completions"
    """``openai_compatible`` only: the wire the model is called on (``responses``: OpenAI's
    Responses API, for models that call tools while reasoning only there)."""


HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
"""A header's name (RFC 9110's token)."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
AIR_HEADERS = frozenset(
    {"host", "content-type", "content-length", "transfer-encoding", "connection", "accept"}
    | {"authorization", "x-api-key", "anthropic-version"}
)
"""Headers air sets itself on a model request: models.yaml cannot replace them."""


class ProviderConfig(Contract):
    kind: ProviderKind
    base_url: str | None = None
    auth_ref: str | None = None
    """Name of the environment variable holding the API key; the key itself is never stored."""
    cassette: str | None = None
    """``scripted`` only: the JSONL cassette to replay (relative to the file declaring it)."""
    record_to: str | None = None
    """Any kind: also write every completed turn to this cassette (record mode)."""
    timeout_s: float = Field(default=600.0, gt=0)
    read_timeout_s: float = Field(default=120.0, gt=0)
    """The longest silence while a reply streams; a stalled stream is retried as a turn."""
    transport: Literal["sdk", "http"] = "http"
    """``anthropic`` only: plain HTTP (default; IMPL-BOOT-10) or the official SDK (``sdk``)."""
    stream_usage: bool | None = None
    """``openai_compatible`` only: ask for the usage chunk (``stream_options``); ``None``: yes,
    but for ``api.mistral.ai``, which refuses the field and sends usage unasked."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Sent with every request beside air's own (a beta's ``anthropic-beta``, a gateway's
    routing header); never a key: that is ``header_refs``."""
    header_refs: dict[str, str] = Field(default_factory=dict)
    """A header whose value is the named environment variable's (a gateway's own key, e.g.
    ``cf-aig-authorization``), read when a request is sent and redacted like ``auth_ref``'s."""
    models: dict[str, ModelConfig] = Field(default_factory=dict)

    @field_validator("headers", "header_refs")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a header name")
            if name.lower() in AIR_HEADERS:
                raise ValueError(f"{name} is air's own header (a key goes in auth_ref)")
            if any(c in text for c in "\r\n\0"):
                raise ValueError(f"the value of {name} holds a line break")
        return value

    def credential_refs(self) -> list[tuple[str, str]]:
        """(field, variable) of every environment variable whose value this provider sends:
        ``auth_ref`` first, then each of ``header_refs`` (``header_refs.NAME``)."""
        refs = [("auth_ref", self.auth_ref)] if self.auth_ref else []
        return refs + [(f"header_refs.{name}", ref) for name, ref in self.header_refs.items()]

    @model_validator(mode="after")
    def _header_sources(self) -> Self:
        both = {n.lower() for n in self.headers} & {n.lower() for n in self.header_refs}
        if both:
            raise ValueError(f"{sorted(both)[0]} is in both headers and header_refs")
        for name, ref in self.header_refs.items():
            if not ENV_NAME.match(ref):
                raise ValueError(f"header_refs.{name} must name an environment variable")
        return self


class ModelsConfig(Contract):
    version: Literal[1] = 1
    default: str | None = None
    """``provider_id/model_id`` used when a requirement names nothing else."""
    roles: dict[str, str] = Field(default_factory=dict)
    """role -> ``provider_id/model_id``."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
    escalation: list[str] = Field(default_factory=empty_list)
    """The model ladder of task retries: ``provider_id/model_id`` refs, the default first; a
    retry after a repeated quality failure moves one rung up (empty: never change model)."""
    providers: dict[ProviderID, ProviderConfig] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=empty_list)
    """Files this config was merged from (filled by the loader)."""
