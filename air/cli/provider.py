"""``air provider list`` and ``air provider current``: read-only views of models.yaml.

Owns the two command bodies: each provider with where its requests go (``base_url``, from
models.yaml, ``ANTHROPIC_BASE_URL``/``OPENAI_BASE_URL`` or the default), each model with its
limits, output-limit parameter, capabilities and prices (``unknown`` when not known).
Neither switches anything (the provider and model of a session are fixed when it opens, SDD
§12.1); neither prints a key: only the ``auth_ref`` name and whether that variable is set. Every
line is exact text (``shown``, IMPL-UI-7): ids, URLs and paths come from a project's file.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from air.contracts.display import shown
from air.contracts.error import CliExit

if TYPE_CHECKING:
    from air.contracts.provider import ModelConfig, ProviderConfig, ProviderKind


def find_project_root(project_root: str | None) -> str | None:
    """The nearest directory at or above ``project_root`` (default: here) holding
    ``.air/shared``, or None; no import beyond ``os``."""
    root = os.path.abspath(project_root or os.getcwd())
    probe = root
    while True:
        if os.path.isdir(os.path.join(probe, ".air", "shared")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def _say(line: str) -> None:
    print(shown(line))


def run_provider_list(project_root: str | None) -> int:
    """Print every configured provider and model with capabilities and prices (and RETIRED
    with the day, for a model its vendor retired)."""
    from air.cli.prepare import load_models_checked
    from air.llm.lifecycle import retired_refusal

    config = load_models_checked(find_project_root(project_root))
    if not config.providers:
        _say(
            "no providers configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or create "
            "~/.air/models.yaml or .air/shared/models.yaml (`air init --models`)"
        )
        return CliExit.OK
    for source in config.sources:
        _say(f"# from {source}")
    for provider_id, provider in sorted(config.providers.items()):
        auth = "-"
        if provider.auth_ref:
            state = "set" if os.environ.get(provider.auth_ref) else "NOT SET"
            auth = f"{provider.auth_ref} ({state})"
        kind = provider.kind.value
        if provider.kind.value == "anthropic":
            kind += f" (transport={provider.transport})"
        _say(f"{provider_id}  kind={kind}  auth={auth}  {_where(provider)}")
        for name, ref in sorted(provider.header_refs.items()):
            state = "set" if os.environ.get(ref) else "NOT SET"
            _say(f"  header {name}: {ref} ({state})")
        if provider.headers:
            _say(f"  headers: {', '.join(sorted(provider.headers))}")
        for model_id, model in sorted(provider.models.items()):
            ref = f"{provider_id}/{model_id}"
            mark = "*" if config.default == ref else " "
            gone = retired_refusal(config, ref)
            said = f"  RETIRED {(gone.error.metadata or {})['retired_on']}" if gone else ""
            _say(f"  {mark} {ref}  {_model_line(model, provider.kind)}{said}")
    return CliExit.OK


def _where(provider: ProviderConfig) -> str:
    """Where the provider's requests go and why (``base_url``, the environment, the default)."""
    from air.llm.config import base_url_of

    if provider.cassette:
        return f"cassette={provider.cassette}"
    url, source = base_url_of(provider, os.environ)
    return f"base_url={url or 'NOT SET'} ({source})"


def _model_line(model: ModelConfig, kind: ProviderKind) -> str:
    """A model's wire (``openai_compatible``: ``api=``), limits, parameters, capabilities and
    prices (``unknown`` when not known)."""
    price = model.price
    prices = (
        f"in={price.input:g} out={price.output:g} cache_w={price.cache_write:g}"
        f" cache_r={price.cache_read:g}"
        if price is not None
        else "unknown"
    )
    able = [
        name
        for name, on in (
            ("tools", model.supports_tools),
            ("cache", model.supports_prompt_cache),
            ("vision", model.supports_vision),
        )
        if on
    ]
    if model.reasoning_efforts:
        able.append("reasoning_effort=" + "|".join(model.reasoning_efforts))
    if model.supports_tools and model.max_tools is not None:
        able[0] = f"tools<={model.max_tools}"
    limit = "max_output_tokens" if model.api == "responses" else model.max_tokens_param
    wire = f"api={model.api}  " if kind.value == "openai_compatible" else ""
    text = (
        f"{wire}ctx={model.context_window}  out={model.max_output_tokens} ({limit})"
        f"  tier={model.tier}  {' '.join(able) or 'no tools'}  $/Mtok {prices}"
    )
    if model.reasoning_effort:
        text += f"  effort={model.reasoning_effort}"
    return text


def run_provider_current(project_root: str | None) -> int:
    """Print the model a new session would use (its endpoint, where the choice came from and
    whether its key is set), and the per-role pins.

    Raises:
        AirException(config_error): nothing is configured (what to set), or a bad models.yaml.
    """
    from air.cli.prepare import load_models_checked
    from air.llm.config import nothing_configured

    config = load_models_checked(find_project_root(project_root))
    if not config.providers:
        raise nothing_configured()
    if config.default is None:
        _say("no default model (set `default: provider_id/model_id` in models.yaml)")
    else:
        _say(f"default: {config.default}")
        from air.llm.config import base_url_of

        provider = config.providers[config.default.partition("/")[0]]
        url, source = base_url_of(provider, os.environ)
        _say(f"  kind: {provider.kind.value}")
        _say(f"  base_url: {url or '-'} ({source})")
        if provider.auth_ref:
            state = "set" if os.environ.get(provider.auth_ref) else "NOT SET"
            _say(f"  key: {provider.auth_ref} ({state})")
        else:
            _say("  key: none (a local server)")
    for source in config.sources:
        _say(f"from {source}")
    for role, ref in sorted(config.roles.items()):
        _say(f"role {role}: {ref}")
    _say("the provider and model of an open session are fixed; no command switches them")
    return CliExit.OK
