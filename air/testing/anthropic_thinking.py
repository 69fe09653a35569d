"""The Messages API's thinking rules for the current Claude models, as their docs state them.

Owns: which model ids think (``thinks``: Opus 4.6-4.8, the 5 and 5.5 families, Fable and
Mythos, keyed on id patterns as ``openai_rules`` keys OpenAI's reasoning models), the
signature of a ``thinking`` / ``redacted_thinking`` block the fake mints (``sign``: an HMAC of
the producing model, the block's own text and its prefix: ``system``, ``tools`` and everything
before the block, ``cache_control`` aside) and ``thinking_problem``: a replayed block that was
altered (400 ``Invalid `signature```), whose prefix changed (400 "bound to a different
conversation", or dropped under ``thinking.block_binding.prefix_mismatch_behavior:
drop_block`` with its beta header), ``thinking`` disabled or with ``budget_tokens`` where only
adaptive thinking is taken, forced ``tool_choice`` on Opus 5.5 and Fable, non-default
sampling (``temperature`` other than 1, ``top_p``, ``top_k``) on 4.7 and later, and a final
assistant turn (prefill) on the 5.5 models. Sources: "What's new in Claude Opus 5.5",
"Preserved thinking" and its prefix-checks page, "Troubleshooting thinking", the 5.5
migration guides. A rule more lenient than the real API is a defect (IMPL-API-1).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from air.testing.problems import Problem, invalid

__all__ = ["BINDING_BETA", "redact", "sign", "thinking_problem", "thinks"]

BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The ``anthropic-beta`` value ``thinking.block_binding`` needs."""

_KEY = os.urandom(32)
"""This process's signing key: a signature is only ever checked by the server that made it."""

_THINKS = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-5(?:-5)?|opus-4-[678]|sonnet-4-6|(?:fable|mythos)-5(?:-[12])?"
    r"|mythos-preview)(?:$|[-@])"
)
_ADAPTIVE_ONLY = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-5-5|(?:fable|mythos)-5-[12])(?:$|[-@])"
)
"""Thinking always on: ``disabled`` refused (Opus 5.5, Fable 5.1 and their siblings)."""
_NO_BUDGET = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-5(?:-5)?|opus-4-[78]|(?:fable|mythos)-5(?:-[12])?)(?:$|[-@])"
)
"""Claude 4.7 and later: ``thinking.type: enabled`` (``budget_tokens``) refused; these also
refuse non-default sampling parameters."""
_NO_FORCING = re.compile(r"^claude-(?:opus-5-5|fable-5-[12])(?:$|[-@])")
_NO_PREFILL = re.compile(r"^claude-(?:opus|sonnet|haiku)-5-5(?:$|[-@])")
_BINDS = re.compile(r"^claude-(?:(?:opus|sonnet|haiku)-5-5|(?:fable|mythos)-5-[12])(?:$|[-@])")
"""The models that run the prefix check (preserved thinking); the fake plays an account
created after 2026-08-31, where it is enforced by default."""


def thinks(model: str) -> bool:
    """Whether ``model`` thinks (adaptive, always or by default): its replies start with a
    thinking block."""
    return bool(_THINKS.match(model))


def _plain(value: Any) -> Any:
    """``value`` without ``cache_control`` (a caching hint, not part of the prompt)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _piece(value: Any) -> bytes:
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False).encode() + b"\x00"


def _head(body: dict[str, Any]) -> Any:
    """The running MAC of a body's ``system`` and ``tools`` (a string system as its block)."""
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}] if system else None
    mac = hmac.new(_KEY, digestmod=hashlib.sha256)
    mac.update(_piece(system) + _piece(body.get("tools") or []))
    return mac


def _prefixes(body: dict[str, Any]) -> Iterator[tuple[int, int, dict[str, Any], str]]:
    """Each block of the body's messages with the MAC of what stands before it."""
    mac = _head(body)
    for i, message in enumerate(body.get("messages") or []):
        mac.update(_piece(message.get("role")))
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for j, block in enumerate(blocks or []):
            yield i, j, block, mac.hexdigest()
            mac.update(_piece(block))


def _family(model: str) -> str:
    """The model a block is bound to (its id without a date or platform suffix)."""
    return re.split(r"[@]|-20\d{6}", model)[0]


def _mac(value: Any) -> str:
    return hmac.new(_KEY, _piece(value), hashlib.sha256).hexdigest()


def _reply_prefix(body: dict[str, Any], before: list[dict[str, Any]]) -> str:
    """The prefix MAC of the block after ``before`` in the reply to ``body``."""
    messages = body.get("messages") or []
    reply = {"role": "assistant", "content": [*before, {}]}
    probe = {**body, "messages": [*messages, reply]}
    spot = (len(messages), len(before))
    return next(p for i, j, _, p in _prefixes(probe) if (i, j) == spot)


def _encode(seal: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(seal).encode()).decode()


def sign(body: dict[str, Any], before: list[dict[str, Any]], thinking: str) -> str:
    """The signature of a thinking block of text ``thinking`` in the reply to ``body``, after
    the reply's blocks ``before``."""
    prefix = _reply_prefix(body, before)
    return _encode({"m": _family(str(body.get("model"))), "p": prefix, "b": _mac(thinking)})


def redact(body: dict[str, Any], before: list[dict[str, Any]], secret: str) -> str:
    """The ``data`` of a redacted thinking block in the reply to ``body`` (as ``sign``)."""
    prefix = _reply_prefix(body, before)
    model = _family(str(body.get("model")))
    return _encode({"m": model, "p": prefix, "t": secret, "b": _mac(secret)})


def _seal(block: dict[str, Any]) -> dict[str, Any] | None:
    """The seal of a replayed block when it is intact (its own text is the one sealed)."""
    redacted = block.get("type") == "redacted_thinking"
    try:
        seal = json.loads(base64.b64decode(str(block.get("data" if redacted else "signature"))))
    except ValueError:
        return None
    if not isinstance(seal, dict):
        return None
    own = seal.get("t") if redacted else block.get("thinking")
    return seal if seal.get("b") == _mac(own) else None


def _binding_problem(headers: dict[str, str], body: dict[str, Any]) -> tuple[bool, Problem | None]:
    """Whether invalid blocks are dropped (``drop_block`` with its beta header)."""
    binding = (body.get("thinking") or {}).get("block_binding")
    if binding is None:
        return False, None
    beta = [b.strip() for b in headers.get("anthropic-beta", "").split(",")]
    if BINDING_BETA not in beta:
        return False, invalid(
            f"thinking.block_binding: this setting requires `{BINDING_BETA}` in the "
            "`anthropic-beta` header"
        )
    behavior = binding.get("prefix_mismatch_behavior", "error")
    if behavior not in ("error", "drop_block"):
        return False, invalid(
            "thinking.block_binding.prefix_mismatch_behavior: Input should be 'error' or "
            "'drop_block'"
        )
    return behavior == "drop_block", None


def _replay_problem(headers: dict[str, str], body: dict[str, Any], model: str) -> Problem | None:
    """The first replayed thinking block that was altered or whose prefix changed."""
    drop, problem = _binding_problem(headers, body)
    if problem is not None:
        return problem
    binds = bool(_BINDS.match(model))
    for i, j, block, prefix in _prefixes(body):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in ("thinking", "redacted_thinking"):
            continue
        where = f"messages.{i}.content.{j}"
        seal = _seal(block)
        if seal is None:
            return invalid(f"{where}: Invalid `signature` in `{kind}` block.")
        if seal.get("m") != _family(model):
            continue  # a block another model made: dropped without an error
        if binds and seal.get("p") != prefix and not drop:
            return invalid(
                f"{where}: Invalid `signature` in `{kind}` block. The block is bound to a "
                "different conversation. Remove the block, or set "
                '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
            )
    return None


def _config_problem(body: dict[str, Any], model: str) -> Problem | None:
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if kind not in ("adaptive", "enabled", "disabled"):
            return invalid("thinking.type: Input should be 'adaptive', 'enabled' or 'disabled'")
        refused = (kind == "enabled" and _NO_BUDGET.match(model)) or (
            kind == "disabled" and _ADAPTIVE_ONLY.match(model)
        )
        if refused:
            return invalid(
                f'"thinking.type.{kind}" is not supported for this model. Use '
                '"thinking.type.adaptive" and "output_config.effort" to control thinking '
                "behavior."
            )
    choice = body.get("tool_choice")
    if (
        isinstance(choice, dict)
        and choice.get("type") in ("any", "tool")
        and _NO_FORCING.match(model)
    ):
        return invalid("Thinking may not be enabled when tool_choice forces tool use.")
    if _NO_BUDGET.match(model):
        for name in ("temperature", "top_p", "top_k"):
            value = body.get(name)
            if value is not None and not (name == "temperature" and value == 1):
                return invalid(f"{name}: is not supported for this model; leave it unset.")
    messages = body.get("messages")
    if (
        _NO_PREFILL.match(model)
        and isinstance(messages, list)
        and messages
        and isinstance(messages[-1], dict)
        and messages[-1].get("role") == "assistant"
    ):
        return invalid(
            "This model does not support assistant message prefill. The conversation must end "
            "with a user message."
        )
    return None


def thinking_problem(headers: dict[str, str], body: dict[str, Any]) -> Problem | None:
    """Why a thinking model refuses this request (``None``: not a thinking model, or valid)."""
    model = str(body.get("model") or "")
    if not thinks(model):
        return None
    return _config_problem(body, model) or _replay_problem(headers, body, model)
