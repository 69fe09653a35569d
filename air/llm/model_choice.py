"""``--model NAME``: the configuration a run uses when the person names its model.

Owns ``with_model``: NAME is ``provider_id/model_id`` or a bare model id. A bare id goes to the
provider that lists it, else to a provider of the kind the catalogue says serves it (the
default's provider first), else (a model the catalogue does not know, e.g. a local server's)
to the default's provider. A model the provider does not list yet is added with what the
catalogue knows of it (unknown prices otherwise; a local keyless server is asked its context
length). The named model becomes the default, and the role pins of models.yaml give way to it.
"""

from __future__ import annotations

from air.contracts.error import AirException
from air.contracts.provider import ModelConfig, ModelsConfig, ProviderKind
from air.llm.catalogue import complete_model, lookup
from air.llm.config import with_local_context
from air.llm.errors import models_reference

__all__ = ["with_model"]


def _bad(name: str, reason: str) -> AirException:
    return AirException.of(
        kind="config_error",
        message=f"--model {name}: {reason}",
        user_action=(
            "Pass --model with a model id (e.g. claude-opus-5-5, gpt-6-sol) or provider/model "
            f"from `air provider list`, or configure its provider (reference: "
            f"{models_reference()})."
        ),
        metadata={"field": "--model"},
    )


def _provider_for(config: ModelsConfig, name: str, provider: str | None) -> tuple[str, str]:
    """The provider id and model id ``name`` (with ``--provider``) stands for."""
    head, slash, tail = name.partition("/")
    if slash and head in config.providers:
        return head, tail
    if provider is not None:
        if provider not in config.providers:
            known = ", ".join(sorted(config.providers)) or "none"
            raise _bad(name, f"no provider {provider!r} is configured (configured: {known})")
        return provider, name
    default_pid = (config.default or "").partition("/")[0]
    order = sorted(config.providers, key=lambda pid: (pid != default_pid, pid))
    listing = [pid for pid in order if name in config.providers[pid].models]
    if listing:
        return listing[0], name
    entry = lookup(name)
    if entry is not None:
        kind = ProviderKind(entry.kind)
        serving = [pid for pid in order if config.providers[pid].kind is kind]
        if not serving:
            raise _bad(name, f"it is served by a provider of kind {kind.value}; none is configured")
        return serving[0], name
    usable = [pid for pid in order if config.providers[pid].kind is not ProviderKind.SCRIPTED]
    if not usable:
        raise _bad(name, "no model provider is configured")
    return usable[0], name


def with_model(config: ModelsConfig, name: str, provider: str | None = None) -> ModelsConfig:
    """``config`` with ``name`` as its default model (added to its provider when missing).

    Raises:
        AirException(config_error): no configured provider can serve ``name``; a scripted
            provider (a cassette) does not play a model it does not list.
    """
    if not config.providers:
        raise _bad(name, "no model provider is configured")
    pid, model_id = _provider_for(config, name, provider)
    entry = config.providers[pid]
    if not model_id:
        raise _bad(name, "no model id after the provider")
    if model_id not in entry.models:
        if entry.kind is ProviderKind.SCRIPTED:
            raise _bad(name, f"provider {pid!r} replays a cassette and has no model {model_id!r}")
        models = {**entry.models, model_id: complete_model(model_id, ModelConfig())}
        entry = entry.model_copy(update={"models": models})
        providers = {**config.providers, pid: entry}
        config = with_local_context(config.model_copy(update={"providers": providers}))
    return config.model_copy(update={"default": f"{pid}/{model_id}", "roles": {}})
