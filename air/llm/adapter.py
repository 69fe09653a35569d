"""The ProviderAdapter base: what every provider implementation offers the ProviderManager.

Owns ``ProviderAdapter`` (provider_id, list_models, validate_model, complete, aclose; SDD
§12.2), credential lookup through ``auth_ref`` and ``redact`` that keeps a key out of any text
an adapter returns. Adapters yield failures of the call as a final ``ProviderErrorEvent`` and
raise ``AirException`` only for bad input (unknown model, lossy conversion, missing key);
``ProviderAdapter.failure_of`` is the one place that maps a failed exchange (transport error,
malformed reply, a stream cut short: ``StreamEnded``) to the error of that final event. Owns
``skip_httpx_cli``, called before any adapter imports httpx (the SDK's, or ours behind a proxy).
"""

from __future__ import annotations

import json
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing

from air.contracts.error import AirError, AirException
from air.contracts.provider import (
    ModelConfig,
    ProviderCapabilityMatrix,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderErrorEvent,
    ProviderStreamEvent,
)
from air.llm.errors import models_reference, protocol_error, transport_error
from air.llm.sse import ReplyTooLarge

__all__ = [
    "STREAM_FAILURES",
    "ProviderAdapter",
    "StreamEnded",
    "capability_rows",
    "redact_error",
    "skip_httpx_cli",
]


def skip_httpx_cli() -> None:
    """Keep httpx from importing its command-line client (click, rich, pygments when installed:
    about half of ``import httpx``); air never runs it (IMPL-START-2). Only before the first
    import of httpx: it then defines its "not installed" stub ``httpx.main`` instead."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


class StreamEnded(Exception):
    """Raised by a stream reader whose connection closed before the stream's final event."""

    def __init__(self, final: str) -> None:
        super().__init__(final)
        self.final = final


_SHAPE_ERRORS = (KeyError, IndexError, TypeError, AttributeError)
STREAM_FAILURES: tuple[type[BaseException], ...] = (
    json.JSONDecodeError,
    ReplyTooLarge,
    AirException,
    *_SHAPE_ERRORS,
    StreamEnded,
)
"""What reading a reply may raise besides the client's transport errors (see ``failure_of``)."""


def capability_rows(provider_id: str, config: ProviderConfig) -> list[ProviderCapabilityMatrix]:
    """One capability row per configured model."""
    return [
        ProviderCapabilityMatrix(
            provider_id=provider_id,
            model_id=model_id,
            kind=config.kind,
            context_window=m.context_window,
            max_output_tokens=m.max_output_tokens,
            supports_tools=m.supports_tools,
            supports_prompt_cache=m.supports_prompt_cache,
            supports_parallel_tool_calls=m.supports_parallel_tool_calls,
            tier=m.tier,
            price=m.price,
            max_tools=m.max_tools,
        )
        for model_id, m in config.models.items()
    ]


def _cut_secret(text: str, secret: str) -> str:
    """``text`` with a tail that is the first 6 or more characters of ``secret`` redacted."""
    for length in range(len(secret) - 1, 5, -1):
        if text.endswith(secret[:length]):
            return text[:-length] + "[redacted]"
    return text


def redact_error(error: AirError, secrets: list[str]) -> AirError:
    """Return ``error`` with every secret replaced by ``[redacted]`` in message and detail, and
    so is the start of one that ends either: both end in the reply's text, cut to a bound
    (``error_for_status``), which a secret the reply echoed may cross."""
    message, detail = error.message, error.detail
    for secret in secrets:
        if secret:
            message = _cut_secret(message.replace(secret, "[redacted]"), secret)
            detail = _cut_secret(detail.replace(secret, "[redacted]"), secret) if detail else detail
    if message == error.message and detail == error.detail:
        return error
    return error.model_copy(update={"message": message, "detail": detail})


class ProviderAdapter(ABC):
    """One configured provider. Created lazily by the ProviderManager; closed by it."""

    def __init__(
        self, provider_id: str, config: ProviderConfig, *, env: Mapping[str, str] | None = None
    ) -> None:
        self.provider_id = provider_id
        self.config = config
        self._env: Mapping[str, str] = env if env is not None else os.environ

    def list_models(self) -> list[ProviderCapabilityMatrix]:
        return capability_rows(self.provider_id, self.config)

    def warm(self) -> None:
        """Build what the first request needs (client, lazily imported transport), called once
        by ``ProviderManager.warm_up`` in a thread before the adapter is used; default nothing."""
        return

    def validate_model(self, model_id: str) -> ProviderCapabilityMatrix:
        """The capability row of ``model_id``; AirException(config_error) when not configured."""
        for row in self.list_models():
            if row.model_id == model_id:
                return row
        raise AirException.of(
            kind="config_error",
            message=f"model {model_id!r} is not configured for provider {self.provider_id!r}",
            user_action=(
                f"Add it under providers.{self.provider_id}.models in models.yaml "
                f"(reference: {models_reference()})."
            ),
        )

    def api_model(self, model_id: str) -> str:
        model = self.config.models.get(model_id)
        return (model.api_model if model and model.api_model else None) or model_id

    def model_config(self, model_id: str) -> ModelConfig | None:
        """The models.yaml entry of ``model_id`` (completed from the catalogue)."""
        return self.config.models.get(model_id)

    def api_key(self, *, required: bool = True) -> str | None:
        """Read the key from the environment variable named by ``auth_ref``."""
        ref = self.config.auth_ref
        if not ref:
            if required:
                raise AirException.of(
                    kind="config_error",
                    message=f"provider {self.provider_id!r} has no auth_ref",
                    user_action=(
                        f"Set providers.{self.provider_id}.auth_ref to the name of the "
                        f"environment variable holding the API key ({models_reference()})."
                    ),
                )
            return None
        value = self._env.get(ref)
        if not value:
            raise AirException.of(
                kind="auth_error",
                message=f"environment variable {ref} (auth_ref of {self.provider_id!r}) is not set",
                retryability="after_change",
                user_action=f"Export {ref} with your API key before starting air.",
            )
        return value

    def extra_headers(self) -> dict[str, str]:
        """models.yaml's ``headers`` and ``header_refs`` (each read from the environment now),
        sent beside air's own headers (which they cannot name)."""
        out = dict(self.config.headers)
        for name, ref in self.config.header_refs.items():
            value = self._env.get(ref)
            if not value or any(c in value for c in "\r\n\0") or not value.isascii():
                problem = "is not set" if not value else "holds no header value"
                raise AirException.of(
                    kind="auth_error",
                    message=f"environment variable {ref} (header_refs.{name} of "
                    f"{self.provider_id!r}) {problem}",
                    retryability="after_change",
                    user_action=f"Export {ref} (one line of ASCII) before starting air.",
                )
            out[name] = value
        return out

    def secrets(self) -> list[str]:
        """Values that must never leave the process (for redaction)."""
        refs = self.config.credential_refs()
        return [value for _, ref in refs if (value := self._env.get(ref))]

    @abstractmethod
    def complete_batches(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[list[ProviderStreamEvent], None]:
        """Stream one model turn as the events of each network read (the manager's hot path).

        The last batch ends with ``message_stop`` or an ``error`` event.
        """

    async def complete(
        self, request: ProviderCompletionInput
    ) -> AsyncGenerator[ProviderStreamEvent, None]:
        """Stream one model turn event by event; ends with ``message_stop`` or ``error``."""
        async with aclosing(self.complete_batches(request)) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    def failed(self, error: AirError) -> ProviderErrorEvent:
        """The final event for ``error``, with this provider's key redacted."""
        return ProviderErrorEvent(error=redact_error(error, self.secrets()))

    def failure_of(self, exc: BaseException) -> AirError:
        """The AirError of an exchange that raised a transport error or a ``STREAM_FAILURES``."""
        if isinstance(exc, json.JSONDecodeError):
            return protocol_error(self.provider_id, "malformed SSE data (not JSON)", str(exc))
        if isinstance(exc, ReplyTooLarge):
            return protocol_error(self.provider_id, "reply too large", str(exc))
        if isinstance(exc, AirException):
            return exc.error
        if isinstance(exc, _SHAPE_ERRORS):
            # a non-streamed reply of the wrong shape
            detail = f"{type(exc).__name__}: {exc}"
            return protocol_error(self.provider_id, "unexpected reply", detail)
        if isinstance(exc, StreamEnded):
            exc = ConnectionError(f"the stream ended before {exc.final}")
        return transport_error(self.provider_id, exc)

    async def aclose(self) -> None:
        """Release clients; the default holds none."""
        return None
