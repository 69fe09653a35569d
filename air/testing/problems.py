"""What a strict local model server refuses, in the terms both APIs share.

Owns: ``Problem`` (the HTTP status, the API's error type, message and code of one refusal),
``invalid`` (the 400 ``invalid_request_error`` most rules answer) and the patterns and limits
both wires check: a tool name, a tool-use id, a model's output ceiling (``ceiling``: the
server's own table, then the current models' as their model pages give it, else
``DEFAULT_CEILING``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Both APIs: a tool (function) name."""
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
DEFAULT_CEILING = 64_000
"""The max_tokens ceiling of a model the server was not told about."""
_CURRENT = re.compile(r"^(?:claude-(?:opus|sonnet|haiku|fable|mythos)-5|gpt-6)")
"""The Claude 5.x and GPT-6 models: 128,000 output tokens (their model pages)."""


def ceiling(model: str, ceilings: dict[str, int] | None) -> int:
    """The most output tokens ``model`` takes in one request."""
    if ceilings and model in ceilings:
        return ceilings[model]
    return 128_000 if _CURRENT.match(model) else DEFAULT_CEILING


@dataclass(frozen=True)
class Problem:
    """Why a request is refused: the HTTP status, the API's error type and message."""

    status: int
    type: str
    message: str
    code: str | None = None
    param: str | None = None
    """OpenAI: the request field at fault."""
    metadata: dict[str, Any] | None = None
    """OpenRouter: the upstream's own error (``raw``) and its name (``provider_name``)."""


def invalid(message: str, code: str | None = None, *, param: str | None = None) -> Problem:
    return Problem(400, "invalid_request_error", message, code, param)
