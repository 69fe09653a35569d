"""The model catalogue: what air knows of each current model, shipped as data.

Owns reading ``air/llm/resources/models.json`` (context window, output limit, USD per million
tokens, the output-limit parameter's name, capabilities, and when its vendor retired a model)
and ``complete_model``: a models.yaml entry whose fields are taken from the catalogue where the
entry leaves them out (a field the entry sets always wins; a price is merged field by field).
Dated ids (``-20250929``, ``-2025-08-07``) and ``-latest`` resolve to their entry. A model the
catalogue does not know keeps ``price: None`` (unknown, never free). Pure: no network, no YAML.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, NamedTuple

from air.contracts.provider import ModelConfig

__all__ = ["CatalogueEntry", "Retirement", "catalogue", "complete_model", "lookup"]

_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


class Retirement(NamedTuple):
    on: str
    """The day its vendor retired it (ISO date): requests to it fail since."""
    use: str
    """The current model to use instead."""


class CatalogueEntry(NamedTuple):
    kind: str
    """The provider kind that serves it (``anthropic`` | ``openai_compatible``)."""
    fields: dict[str, Any]
    """``ModelConfig`` fields."""
    retired: Retirement | None = None
    """Set when its vendor retired it (on the vendor's own API)."""


@functools.cache
def catalogue() -> dict[str, CatalogueEntry]:
    """Every catalogue entry by id and by alias."""
    path = os.path.join(os.path.dirname(__file__), "resources", "models.json")
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    out: dict[str, CatalogueEntry] = {}
    for model_id, entry in data["models"].items():
        ModelConfig.model_validate(entry["model"])  # the shipped data is checked when read
        gone = entry.get("retired")
        item = CatalogueEntry(
            kind=str(entry["kind"]),
            fields=dict(entry["model"]),
            retired=Retirement(str(gone["on"]), str(gone["use"])) if gone else None,
        )
        for name in (model_id, *entry.get("aliases", [])):
            out[name] = item
    return out


def lookup(model_id: str) -> CatalogueEntry | None:
    """The entry of ``model_id`` (exact, then without a date or ``-latest`` suffix)."""
    known = catalogue()
    entry = known.get(model_id)
    if entry is None and _SUFFIX.search(model_id):
        entry = known.get(_SUFFIX.sub("", model_id))
    return entry


def complete_model(model_id: str, model: ModelConfig) -> ModelConfig:
    """``model`` with every field it leaves out taken from the catalogue entry of its
    ``api_model`` (or ``model_id``); unchanged when the catalogue does not know it.

    Raises:
        ValueError: ``reasoning_effort`` is not one of the model's ``reasoning_efforts`` (the
            message names the field and the values it takes).
    """
    entry = lookup(model.api_model or model_id)
    if entry is not None:
        explicit = model.model_dump(exclude_unset=True)
        merged = {**entry.fields, **explicit}
        if "price" in explicit and model.price is not None and entry.fields.get("price"):
            merged["price"] = {
                **entry.fields["price"],
                **model.price.model_dump(exclude_unset=True),
            }
        model = ModelConfig.model_validate(merged)
    if model.reasoning_effort is not None and model.reasoning_effort not in model.reasoning_efforts:
        takes = ", ".join(model.reasoning_efforts) or "none (it is not a reasoning model)"
        raise ValueError(
            f"reasoning_effort: {model_id} does not take {model.reasoning_effort!r} "
            f"(it takes: {takes})"
        )
    return model
