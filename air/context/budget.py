"""Budget fitting: which prompt layers a model call keeps within its token budget (IMPL-CTX-1).

Owns ``fit_budget`` (priority-ordered fitting, L0-L2 never dropped, a layer that does not fit
omitted with reason ``budget``), its record ``BudgetFitResult``, and ``render_layer``, the text
of a layer as the model sees it, by which a layer is priced. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from air.context.loader import IMMUTABLE_LEVELS
from air.context.row_text import json_text
from air.context.tokens import estimate_tokens
from air.contracts.runtime import LayerOmission, PromptLayer, PromptLayerLevel

__all__ = ["BudgetFitResult", "fit_budget", "render_layer"]

_LEVEL_LABEL = {level: f"L{min(index, 9)}" for index, level in enumerate(PromptLayerLevel)}


class BudgetFitResult(NamedTuple):
    """What ``fit_budget`` kept (input order) and dropped; a read-only record, so a NamedTuple
    (IMPL-BOOT-14)."""

    kept: list[PromptLayer]
    omitted: list[LayerOmission]
    token_estimate: int
    over_budget: bool
    """True only when the immutable layers alone exceed the budget."""
    budget: int = 0
    dropped_levels: frozenset[PromptLayerLevel] = frozenset()


def render_layer(layer: PromptLayer) -> str:
    """The text of a layer as the model sees it: a one-line header, then the content."""
    label = _LEVEL_LABEL[layer.level]
    header = f"## [{label} {layer.level.value}]"
    if layer.source_ref:
        header += f" {layer.source_ref}"
    content = layer.content if isinstance(layer.content, str) else json_text(layer.content)
    return f"{header}\n{content}"


def _estimate(layer: PromptLayer) -> int:
    if layer.token_estimate is not None:
        return layer.token_estimate
    return estimate_tokens(render_layer(layer))


def _is_immutable(layer: PromptLayer) -> bool:
    return bool(layer.immutable) or layer.level in IMMUTABLE_LEVELS


def fit_budget(layers: Sequence[PromptLayer], budget: int) -> BudgetFitResult:
    """Fit layers to a token budget (IMPL-CTX-1).

    Immutable layers (L0-L2) are always kept. The others are considered from the highest
    priority down (ties: the later layer first, so the most recent message or tool run wins)
    and kept when they still fit; a layer that does not fit is omitted with reason ``budget``
    and smaller lower-priority layers may still use the room left.

    Args:
        layers: the candidate layers; ``token_estimate`` is computed when missing.
        budget: the token budget (>= 0).

    Returns:
        The kept layers in input order, the omissions, the kept total, and whether the
        immutable layers alone exceed the budget.
    """
    estimates = [_estimate(layer) for layer in layers]
    keep = [False] * len(layers)
    used = 0
    for index, layer in enumerate(layers):
        if _is_immutable(layer):
            keep[index] = True
            used += estimates[index]
    over_budget = used > budget
    candidates = sorted(
        (i for i, layer in enumerate(layers) if not _is_immutable(layer)),
        key=lambda i: (-layers[i].priority, -i),
    )
    omitted_idx: list[int] = []
    for index in candidates:
        if used + estimates[index] <= budget:
            keep[index] = True
            used += estimates[index]
        else:
            omitted_idx.append(index)
    omitted_idx.sort()
    kept = [
        layer
        if layer.token_estimate is not None
        else layer.model_copy(update={"token_estimate": estimates[i]})
        for i, layer in enumerate(layers)
        if keep[i]
    ]
    omitted = [
        LayerOmission(
            level=layers[i].level,
            source_ref=layers[i].source_ref,
            token_estimate=estimates[i],
            reason="budget",
        )
        for i in omitted_idx
    ]
    return BudgetFitResult(
        kept=kept,
        omitted=omitted,
        token_estimate=used,
        over_budget=over_budget,
        budget=budget,
        dropped_levels=frozenset(layers[i].level for i in omitted_idx),
    )
