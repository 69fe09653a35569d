"""Translation of provider failures into AirErrors (SDD §18; IMPL-LLM-3).

Owns: the HTTP-status -> ErrorKind/Retryability table, ``retry_after`` parsing, and the
constructors adapters use for transport and protocol failures. Pure; imports no client.
"""

from __future__ import annotations

from collections.abc import Mapping

from air.contracts.error import AirError, ErrorKind, Retryability, make_air_error

__all__ = [
    "MODELS_DOC",
    "api_error_of",
    "error_for_status",
    "models_reference",
    "parse_retry_after",
    "protocol_error",
    "redirect_target",
    "retry_after_of",
    "transport_error",
]

MODELS_DOC = "docs/models.md"
"""The models.yaml reference in the repository; ``models_reference()`` adds the installed copy."""


def models_reference() -> str:
    """Where config errors send the user: docs/models.md and its copy in the installed package
    (``air/llm/resources/models.example.yaml``, an absolute path that exists)."""
    import os

    installed = os.path.join(os.path.dirname(__file__), "resources", "models.example.yaml")
    return f"{MODELS_DOC}; installed copy: {installed}"


_TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "server_error", "overloaded"})
"""Error types (Anthropic; OpenAI inside a stream) of a failure a retry can get past."""
_CONTEXT_MARKERS = ("prompt is too long", "context length", "context_length", "maximum context")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (lower case) whatever case the reply wrote it in."""
    return next((value for key, value in headers.items() if key.lower() == name), None)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Return the server's requested wait in seconds (``retry-after-ms`` or ``retry-after``)."""
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    seconds = _header(headers, "retry-after")
    if seconds is not None:
        try:
            return max(0.0, float(seconds))
        except ValueError:
            return None
    return None


def redirect_target(headers: Mapping[str, str]) -> str | None:
    """Where a redirect reply points (its ``location`` header), if it names anything."""
    return _header(headers, "location")


def error_for_status(
    status: int,
    body: str,
    *,
    provider_id: str,
    retry_after: float | None = None,
    error_type: str | None = None,
    api_message: str | None = None,
    location: str | None = None,
) -> AirError:
    """Map an HTTP failure (or a provider ``error`` event) to a typed AirError.

    Args:
        status: the HTTP status (0 when the error came inside a 200 stream).
        body: the provider's reply body, already free of credentials.
        error_type: the provider's error type, e.g. ``overloaded_error``.
        api_message: the provider's ``error.message``; it ends the AirError's message, so the
            user reads why the provider refused (IMPL-API-2).
        location: where a 3xx reply points.

    Returns:
        config_error, never retried, for a redirect (3xx: no transport follows one, it would
        take the key along; IMPL-LLM-7);
        rate_limited/provider_error (transient) for 429, 5xx, 529 and ``overloaded``;
        auth_error for 401/403; context_overflow for too-long prompts; provider_error that is
        never retried otherwise (400, 404, 413, 422...).
    """
    text = body[:500]
    said = f": {api_message[:300]}" if api_message else ""
    meta: dict[str, object] = {"status": status, "provider_id": provider_id}
    if retry_after is not None:
        meta["retry_after_s"] = retry_after
    if error_type:
        meta["error_type"] = error_type
    lowered = text.lower()
    if 300 <= status < 400:
        from air.contracts.display import shown

        where = shown(location[:300]) if location else "nowhere it names"
        return make_air_error(
            kind=ErrorKind.CONFIG_ERROR,
            message=(
                f"{provider_id}: the server redirected the request (HTTP {status}) to {where}; "
                "air follows no redirect, which would take the API key along"
            ),
            detail=text,
            retryability=Retryability.NEVER,
            user_action=(
                "If that is the provider's endpoint, put it in base_url in models.yaml; "
                f"otherwise check base_url (reference: {models_reference()})."
            ),
            metadata=meta,
        )
    if status == 429 or error_type == "rate_limit_error":
        return make_air_error(
            kind=ErrorKind.RATE_LIMITED,
            message=f"{provider_id}: rate limited (HTTP {status}){said}",
            detail=text,
            retryability=Retryability.TRANSIENT,
            user_action="Wait, or lower concurrency; air retries with backoff.",
            metadata=meta,
        )
    if status in (401, 403) or error_type in ("authentication_error", "permission_error"):
        return make_air_error(
            kind=ErrorKind.AUTH_ERROR,
            message=f"{provider_id}: credentials rejected (HTTP {status}){said}",
            detail=text,
            retryability=Retryability.NEVER,
            user_action="Check the API key in the environment variable named by auth_ref.",
            metadata=meta,
        )
    if status == 529 or status >= 500 or error_type in _TRANSIENT_TYPES:
        return make_air_error(
            kind=ErrorKind.PROVIDER_ERROR,
            message=f"{provider_id}: provider unavailable or overloaded (HTTP {status}){said}",
            detail=text,
            retryability=Retryability.TRANSIENT,
            user_action="Retry later; air retries automatically within its deadline.",
            metadata=meta,
        )
    if any(marker in lowered for marker in _CONTEXT_MARKERS):
        return make_air_error(
            kind=ErrorKind.CONTEXT_OVERFLOW,
            message=f"{provider_id}: the request exceeds the model's context window{said}",
            detail=text,
            retryability=Retryability.AFTER_CHANGE,
            user_action="Compact the conversation or choose a model with a larger context.",
            metadata=meta,
        )
    if status == 404 or error_type == "not_found_error":
        return make_air_error(
            kind=ErrorKind.PROVIDER_ERROR,
            message=f"{provider_id}: not found (HTTP {status}){said}",
            detail=text,
            retryability=Retryability.NEVER,
            user_action=(
                "Check the model's api_model and the provider's base_url in models.yaml "
                f"(reference: {models_reference()})."
            ),
            metadata=meta,
        )
    return make_air_error(
        kind=ErrorKind.PROVIDER_ERROR,
        message=f"{provider_id}: request rejected (HTTP {status}){said}",
        detail=text,
        retryability=Retryability.NEVER,
        user_action=(
            "The provider refused the request as sent; retrying cannot help. Check the model "
            f"and its limits in models.yaml (reference: {models_reference()})."
        ),
        metadata=meta,
    )


def api_error_of(body: object) -> tuple[str | None, str | None]:
    """The ``error.type`` and ``error.message`` of a decoded error reply (both wire formats
    nest them under ``error``), or ``(None, None)``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (
        kind if isinstance(kind, str) else None,
        message if isinstance(message, str) else None,
    )


def transport_error(provider_id: str, exc: BaseException) -> AirError:
    """A connection refused/reset/dropped mid-stream or a read timeout: transient."""
    return make_air_error(
        kind=ErrorKind.PROVIDER_ERROR,
        message=f"{provider_id}: connection failed ({type(exc).__name__})",
        detail=str(exc)[:500],
        retryability=Retryability.TRANSIENT,
        user_action="Check the network or the provider's base_url; air retries automatically.",
        metadata={"provider_id": provider_id, "transport": True},
    )


def protocol_error(provider_id: str, message: str, detail: str | None = None) -> AirError:
    """The provider sent something air cannot interpret (malformed SSE, bad tool JSON)."""
    return make_air_error(
        kind=ErrorKind.PROTOCOL_ERROR,
        message=f"{provider_id}: {message}",
        detail=(detail or "")[:500] or None,
        retryability=Retryability.UNKNOWN,
        user_action="The provider's reply was malformed; retry, or use another model or server.",
        metadata={"provider_id": provider_id},
    )


def retry_after_of(error: AirError) -> float | None:
    """The ``retry_after_s`` an adapter attached to the error, if any."""
    value = (error.metadata or {}).get("retry_after_s")
    return float(value) if isinstance(value, int | float) else None
