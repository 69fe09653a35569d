"""Models their vendor retired: refused before anything runs, with the model to use instead.

Owns ``retired_refusal``: for a configured ``provider_id/model_id`` served by its vendor's own
API (api.anthropic.com, api.openai.com), the catalogue's retirement of its ``api_model`` (or
id) as a ``config_error`` naming the day and the current model. A retired model's requests
fail at the vendor (a 404 at the first turn of every task); through a gateway or a partner
platform, which keep their own schedules, it is left to the endpoint. Pure: no network.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from air.contracts.error import AirException
from air.contracts.provider import ModelsConfig
from air.llm.catalogue import lookup
from air.llm.config import base_url_of
from air.llm.errors import models_reference

__all__ = ["VENDOR_HOSTS", "retired_refusal"]

VENDOR_HOSTS = frozenset({"api.anthropic.com", "api.openai.com"})
"""The vendors' own endpoints, whose retirement dates the catalogue holds."""


def retired_refusal(
    config: ModelsConfig, ref: str, env: Mapping[str, str] | None = None
) -> AirException | None:
    """Why ``ref`` cannot be called (its vendor retired it), or ``None``."""
    provider_id, _, model_id = ref.partition("/")
    provider = config.providers.get(provider_id)
    model = provider.models.get(model_id) if provider is not None else None
    if provider is None or model is None:
        return None
    url, _ = base_url_of(provider, env if env is not None else os.environ)
    if urlsplit(url or "").hostname not in VENDOR_HOSTS:
        return None
    entry = lookup(model.api_model or model_id)
    if entry is None or entry.retired is None:
        return None
    gone = entry.retired
    return AirException.of(
        kind="config_error",
        message=f"{ref} was retired by its vendor on {gone.on}: every request to it fails",
        user_action=f"Use {gone.use} instead (`--model {gone.use}`, or the model in "
        f"models.yaml; reference: {models_reference()}).",
        metadata={"model": ref, "retired_on": gone.on, "use": gone.use},
    )
