"""The cheap token estimator every context decision uses.

Owns ``estimate_tokens`` and ``estimate_message_tokens``: ``ceil(chars / 4)`` of the text (or of
the compact JSON form of anything that is not text). It over-counts code and under-counts CJK a
little; it is deterministic, free and good enough to keep a context well inside a model window.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "estimate_message_tokens", "estimate_tokens"]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message framing (role, block boundaries) added by ``estimate_message_tokens``."""


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def estimate_tokens(value: Any) -> int:
    """Estimate the tokens of ``value``.

    Args:
        value: text, or any JSON-serialisable value (counted by its compact JSON form).

    Returns:
        ``ceil(len(text) / 4)``; 0 for empty text.
    """
    return math.ceil(len(_as_text(value)) / CHARS_PER_TOKEN)


def estimate_message_tokens(message: Mapping[str, Any]) -> int:
    """Estimate one canonical message ({role, content}): its content plus a small framing cost."""
    content = message.get("content", "")
    if isinstance(content, list):
        total = 0
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                total += estimate_tokens(str(block.get("text", "")))
            else:
                total += estimate_tokens(block)
        return total + MESSAGE_OVERHEAD_TOKENS
    return estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS
