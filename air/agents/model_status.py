"""What the HUD adds of the Main Agent's model: the share of its context window the last
request used (issue 24 item 4).

Owns ``context_percent`` and ``model_status`` from the ``TurnRunner`` (its ``ModelAssignment``
and the usage of its last complete turn: input, cache-read and cache-write tokens over the
model's ``context_window``). The console appends it to the HUD, whose own part names the
session's ``provider/model`` and the cost.
"""

from __future__ import annotations

from air.agents.turns import TurnRunner

__all__ = ["context_percent", "model_status"]


def context_percent(turns: TurnRunner) -> int | None:
    """Percent of the context window the last request filled; None before the first turn."""
    usage, window = turns.last_usage, turns.model.capabilities.context_window
    if usage is None or window <= 0:
        return None
    used = (
        int(usage.input_tokens)
        + int(usage.cache_read_input_tokens)
        + int(usage.cache_creation_input_tokens)
    )
    return min(100, round(100 * used / window))


def model_status(turns: TurnRunner) -> str:
    """`` · ctx N%`` (``ctx -`` before the first turn): the HUD names the model itself (the
    session's, which ``/model`` moves with the Main Agent's)."""
    percent = context_percent(turns)
    return f" · ctx {'-' if percent is None else f'{percent}%'}"
