"""OpenRouter's chat completions as the strict server plays them: the ``reasoning_details`` a
reply streams, and the refusal of a continuation that does not bring them back.

Owns: ``OPENROUTER_REASONS`` (the model ids, ``google/gemini-3*`` and ``anthropic/claude-*``, by
which the server plays OpenRouter in front of Gemini 3+ or Claude), ``reasoning_stream`` (the
``reasoning_details`` deltas of one reply, as OpenRouter streams them: the thinking as pieces of
one ``reasoning.text``; Claude's signature in a last piece without text; Gemini's thought
signature of the reply's first call as a ``reasoning.encrypted`` item bearing the call's id) and
``openrouter_problem``. OpenRouter's docs ("Preserving reasoning blocks") say to pass the
assistant message's ``reasoning_details`` back unmodified ("you cannot rearrange or modify the
sequence"); a tool call back without Gemini's signature, or a thinking text that is not the one
its signature covers (fragments sent back unmerged), is refused as OpenRouter answers it: 400
"Provider returned error" with the upstream's own error in ``metadata.raw``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from air.testing.problems import Problem

__all__ = ["OPENROUTER_REASONS", "detail_signature", "openrouter_problem", "reasoning_stream"]

OPENROUTER_REASONS = re.compile(r"^(?:google/gemini-(?:3|4)|anthropic/claude-)")
_GEMINI = "google/"

_KEEP = (
    "Gemini models require OpenRouter reasoning details to be preserved in each request. Please "
    "refer to our docs: https://openrouter.ai/docs/guides/best-practices/reasoning-tokens"
    "#preserving-reasoning-blocks. Upstream error: "
)
"""What OpenRouter puts before Google's own error (as users of Gemini 3 behind it report it)."""


def detail_signature(kind: str, value: str) -> str:
    """The signature this server gives a Claude thinking text or a Gemini call id ``value``."""
    digest = hashlib.sha256(f"air-fake-openrouter:{kind}:{value}".encode()).digest()
    return base64.b64encode(digest).decode()


def reasoning_stream(model: str, thought: str, first_call: str | None) -> list[list[Any]]:
    """Each delta's ``reasoning_details`` of a reply that thinks ``thought`` and calls
    ``first_call`` first (``None``: no call)."""
    gemini = model.startswith(_GEMINI)
    form = "google-gemini-v1" if gemini else "anthropic-claude-v1"
    words = thought.split(" ")
    pieces = [" ".join(words[: len(words) // 2]) + " ", " ".join(words[len(words) // 2 :])]
    out: list[list[Any]] = [
        [{"type": "reasoning.text", "text": p, "format": form, "index": 0}] for p in pieces
    ]
    if not gemini:  # Claude's signature_delta comes last, a piece of its own
        sign = detail_signature("claude", thought)
        out.append([{"type": "reasoning.text", "text": "", "signature": sign, "index": 0}])
    elif first_call is not None:
        data = detail_signature("gemini", first_call)
        encrypted = {"type": "reasoning.encrypted", "data": data, "id": first_call, "index": 1}
        out.append([{**encrypted, "format": form}])
    return out


def _refused(provider: str, upstream: dict[str, Any], prefix: str = "") -> Problem:
    raw = prefix + json.dumps(upstream, indent=2) + "\n"
    return Problem(
        400,
        "",
        "Provider returned error",
        metadata={"raw": raw, "provider_name": provider},
    )


def _gemini_problem(
    message: dict[str, Any], items: list[dict[str, Any]], at: int
) -> Problem | None:
    first = (message.get("tool_calls") or [None])[0]
    if not isinstance(first, dict):
        return None
    call_id = str(first.get("id"))
    signed = next(
        (
            i.get("data")
            for i in items
            if i.get("type") == "reasoning.encrypted" and i.get("id") == call_id
        ),
        None,
    )
    if signed is None:
        name = (first.get("function") or {}).get("name")
        said = (
            "Function call is missing a thought_signature in functionCall parts. This is "
            "required for tools to work correctly, and missing thought_signature may lead to "
            f"degraded model performance. Additional data, function call `default_api:{name}` "
            f", position {at + 1}. Please refer to https://ai.google.dev/gemini-api/docs/"
            "thought-signatures for more details."
        )
    elif signed != detail_signature("gemini", call_id):
        said = "Corrupted thought signature."
    else:
        return None
    upstream = {"error": {"code": 400, "message": said, "status": "INVALID_ARGUMENT"}}
    return _refused("Google AI Studio", upstream, _KEEP)


def _claude_problem(items: list[dict[str, Any]], at: int) -> Problem | None:
    texts = [i for i in items if i.get("type") == "reasoning.text"]
    for k, item in enumerate(texts):
        if item.get("signature") != detail_signature("claude", str(item.get("text") or "")):
            said = f"messages.{at}.content.{k}: Invalid `signature` in `thinking` block"
            error = {"type": "invalid_request_error", "message": said}
            return _refused("Anthropic", {"type": "error", "error": error})
    return None


def openrouter_problem(model: str, body: dict[str, Any]) -> Problem | None:
    """Why OpenRouter would refuse this request to ``model`` for the reasoning it streamed."""
    if not OPENROUTER_REASONS.match(model):
        return None
    turns = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    turns = [m for m in turns if m.get("role") != "system"]  # the upstream's own numbering
    for at, message in enumerate(turns):
        if message.get("role") != "assistant":
            continue
        details = message.get("reasoning_details")
        items = [i for i in details if isinstance(i, dict)] if isinstance(details, list) else []
        if model.startswith(_GEMINI):
            problem = _gemini_problem(message, items, at)
        else:
            problem = _claude_problem(items, at)
        if problem is not None:
            return problem
    return None
