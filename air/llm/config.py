"""ModelConfigLoader: ``~/.air/models.yaml`` merged with ``<project>/.air/shared/models.yaml``.

Owns reading, validating and merging the two files (IMPL-LLM-2): each file is validated on its
own against ``ModelsConfig`` (a bad file is ``AirException(config_error)`` naming the file and
the field); the project file then overrides ``default``, ``retry`` and each role, and replaces
whole provider entries with the same id. Relative cassette paths resolve against the file that
names them. PyYAML is imported only when a file exists. Without ``~/.air/models.yaml``,
``env_models_config`` gives the user's layer from the environment (a first run that just works;
IMPL-API-3). A project file that defines providers (where a key is sent, which variable is a
key) is refused unless the caller says the user trusted the project (IMPL-TRUST-1). Each model
entry is completed from the shipped catalogue (``air.llm.catalogue``); a local keyless server is
asked the context length of a model nothing else sizes (``air.llm.local_context``).
``base_url_of`` is where a provider's requests go, the same for every transport.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from air.contracts.error import AirException
from air.contracts.provider import (
    ModelConfig,
    ModelPrice,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
)
from air.llm.catalogue import complete_model
from air.llm.errors import models_reference

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "base_url_of",
    "env_models_config",
    "load_models_config",
    "nothing_configured",
    "project_models_path",
    "user_models_path",
    "with_local_context",
]

DEFAULT_ANTHROPIC_MODEL = "claude-opus-5-5"
DEFAULT_OPENAI_MODEL = "gpt-6-sol"


def user_models_path(home: str | None = None) -> str:
    return os.path.join(home or os.path.expanduser("~"), ".air", "models.yaml")


def project_models_path(project_root: str) -> str:
    return os.path.join(project_root, ".air", "shared", "models.yaml")


def _bad(path: str, field: str, message: str) -> AirException:
    return AirException.of(
        kind="config_error",
        message=f"{path}: {field}: {message}",
        user_action=f"Fix `{field}` in {path} (reference: {models_reference()}).",
    )


def _read_file(path: str) -> tuple[ModelsConfig, set[str]] | None:
    """The validated file and the top-level fields it sets explicitly."""
    if not os.path.exists(path):
        return None
    import yaml

    from air.small_file import read_small
    from air.yamlload import load

    try:
        raw: Any = load(read_small(path).decode("utf-8"), name=path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        raise _bad(path, where, f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except OSError as exc:
        raise _bad(path, "file", f"cannot read ({exc.strerror})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _bad(path, "file", "the top level must be a mapping")
    try:
        config = ModelsConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "file"
        raise _bad(path, field, first["msg"]) from None
    base = os.path.dirname(os.path.abspath(path))
    providers: dict[str, ProviderConfig] = {}
    for pid, provider in config.providers.items():
        update: dict[str, Any] = {}
        try:
            models = _completed(provider)
        except ValueError as exc:
            field, _, message = str(exc).partition(": ")
            raise _bad(path, f"providers.{pid}.models.{field}", message) from None
        if models != provider.models:
            update["models"] = models
        for key in ("cassette", "record_to"):
            value = getattr(provider, key)
            if value and not os.path.isabs(value):
                update[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
        providers[pid] = provider.model_copy(update=update) if update else provider
    explicit = set(config.model_fields_set)
    return config.model_copy(update={"providers": providers, "sources": [path]}), explicit


def nothing_configured() -> AirException:
    """The error of a run with no model provider at all: what to set."""
    return AirException.of(
        kind="config_error",
        message="no model provider is configured (no models.yaml, no API key in the environment)",
        user_action=(
            "Set ANTHROPIC_API_KEY (or OPENAI_API_KEY; OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 "
            "for a local server), or write ~/.air/models.yaml (`air init --models` writes a "
            f"template). Reference: {models_reference()}."
        ),
    )


def _completed(provider: ProviderConfig) -> dict[str, ModelConfig]:
    """The provider's models with what the catalogue knows filled in (not for ``scripted``).

    Raises:
        ValueError: ``"<model>.<field>: <message>"`` for a field the model cannot take.
    """
    if provider.kind is ProviderKind.SCRIPTED:  # a replay sends nothing: it is free
        free = ModelPrice()
        return {
            m: model if model.price else model.model_copy(update={"price": free})
            for m, model in provider.models.items()
        }
    out: dict[str, ModelConfig] = {}
    for model_id, model in provider.models.items():
        try:
            out[model_id] = complete_model(model_id, model)
        except ValueError as exc:
            raise ValueError(f"{model_id}.{exc}") from None
    return out


def _model_entry(model_id: str) -> dict[str, ModelConfig]:
    return {model_id: complete_model(model_id, ModelConfig())}


_DEFAULT_URL = {
    ProviderKind.ANTHROPIC: ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    ProviderKind.OPENAI_COMPATIBLE: ("OPENAI_BASE_URL", None),
}


def base_url_of(provider: ProviderConfig, env: Mapping[str, str]) -> tuple[str | None, str]:
    """Where a provider's requests go, and why: its ``base_url``, else the kind's variable
    (``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``), else the kind's default endpoint. Every
    transport (SDK and HTTP) sends to this one URL."""
    if provider.base_url:
        return provider.base_url, "base_url"
    variable, default = _DEFAULT_URL.get(provider.kind, (None, None))
    if variable and env.get(variable):
        return env[variable], variable
    return default, "default"


def with_local_context(config: ModelsConfig) -> ModelsConfig:
    """``config`` with the context window of each model of a local keyless server that
    neither models.yaml nor the catalogue sizes, as the server reports it (``None`` from the
    server: unchanged). Its output limit, unless set, is capped to a quarter of that window."""
    providers = dict(config.providers)
    for pid, provider in config.providers.items():
        if provider.kind is not ProviderKind.OPENAI_COMPATIBLE or provider.auth_ref:
            continue
        from air.llm.local_context import is_local, local_context_length  # IMPL-BOOT-16

        if not is_local(provider.base_url):
            continue
        models = dict(provider.models)
        for model_id, model in provider.models.items():
            if "context_window" in model.model_fields_set or provider.base_url is None:
                continue
            window = local_context_length(provider.base_url, model.api_model or model_id)
            if window is None:
                continue
            update: dict[str, Any] = {"context_window": window}
            if "max_output_tokens" not in model.model_fields_set:
                update["max_output_tokens"] = max(1, min(model.max_output_tokens, window // 4))
            models[model_id] = model.model_copy(update=update)
        providers[pid] = provider.model_copy(update={"models": models})
    return config.model_copy(update={"providers": providers})


def env_models_config(env: Mapping[str, str]) -> ModelsConfig:
    """The configuration of a first run without models.yaml, from the environment.

    ``ANTHROPIC_API_KEY`` -> provider ``anthropic`` (model ``ANTHROPIC_MODEL`` or
    claude-opus-5-5, endpoint ``ANTHROPIC_BASE_URL``); ``OPENAI_API_KEY`` -> provider
    ``openai`` (model ``OPENAI_MODEL`` or gpt-6-sol, endpoint ``OPENAI_BASE_URL`` or OpenAI's);
    ``OPENAI_BASE_URL`` on 127.0.0.1/localhost alone -> ``openai`` with no key. The default is
    Anthropic when both are set. Empty when nothing is set.
    """
    providers: dict[str, ProviderConfig] = {}
    sources: list[str] = []
    if env.get("ANTHROPIC_API_KEY"):
        model = env.get("ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL
        providers["anthropic"] = ProviderConfig(
            kind=ProviderKind.ANTHROPIC,
            auth_ref="ANTHROPIC_API_KEY",
            base_url=env.get("ANTHROPIC_BASE_URL") or None,
            models=_model_entry(model),
        )
        sources.append("environment: ANTHROPIC_API_KEY")
    base_url = env.get("OPENAI_BASE_URL") or None
    local = False
    if base_url is not None:
        from air.llm.local_context import is_local  # IMPL-BOOT-16: only for a URL to judge

        local = is_local(base_url)
    if env.get("OPENAI_API_KEY") or local:
        model = env.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
        keyed = bool(env.get("OPENAI_API_KEY"))
        providers["openai"] = ProviderConfig(
            kind=ProviderKind.OPENAI_COMPATIBLE,
            auth_ref="OPENAI_API_KEY" if keyed else None,
            base_url=base_url or "https://api.openai.com/v1",
            models=_model_entry(model),
        )
        sources.append("environment: " + ("OPENAI_API_KEY" if keyed else "OPENAI_BASE_URL"))
    if not providers:
        return ModelsConfig()
    first = next(iter(providers))
    default = f"{first}/{next(iter(providers[first].models))}"
    return ModelsConfig(default=default, providers=providers, sources=sources)


def load_models_config(
    project_root: str | None,
    *,
    home: str | None = None,
    env: Mapping[str, str] | None = None,
    project_trusted: bool = False,
) -> ModelsConfig:
    """Load and merge the user and project files; missing files contribute nothing. Without
    the user's file, the user's layer comes from the environment (``env_models_config``).

    Args:
        project_trusted: the user trusted the project's configuration (``air.session.trust``);
            without it a project file may only pick ``default``/``roles`` among the user's.

    Raises:
        AirException(config_error): a file is not YAML, or a field is invalid; the message
            names the file and the field. Also when ``default``/``roles`` name an unknown model.
        AirException(untrusted_config): the project file defines a provider and the project
            is not trusted (the message names the file, the field, the variable and the URL).
    """
    user = _read_file(user_models_path(home))
    if user is None:
        from_env = env_models_config(os.environ if env is None else env)
        user = (from_env, set(from_env.model_fields_set)) if from_env.providers else None
    layers = [user]
    if project_root is not None:
        project = _read_file(project_models_path(project_root))
        if project is not None and project[0].providers and not project_trusted:
            raise _untrusted(project_models_path(project_root), project[0])
        layers.append(project)
    if all(entry is None for entry in layers):
        return ModelsConfig()
    merged = ModelsConfig()
    for entry in layers:
        if entry is None:
            continue
        layer, explicit = entry
        merged = merged.model_copy(
            update={
                "default": layer.default if "default" in explicit else merged.default,
                "retry": layer.retry if "retry" in explicit else merged.retry,
                "escalation": (layer.escalation if "escalation" in explicit else merged.escalation),
                "roles": {**merged.roles, **layer.roles},
                "providers": {**merged.providers, **layer.providers},
                "sources": [*merged.sources, *layer.sources],
            }
        )
    _check_references(merged)
    return with_local_context(merged)


def _untrusted(path: str, config: ModelsConfig) -> AirException:
    """The refusal of an untrusted project file's first provider: where which key would go."""
    pid, provider = next(iter(config.providers.items()))
    target = provider.base_url or f"the {provider.kind} default endpoint"
    field = "base_url" if provider.base_url else "auth_ref" if provider.auth_ref else "kind"
    what = f"would send {provider.auth_ref or 'the prompts'} to {target}"
    return AirException.of(
        kind="untrusted_config",
        message=f"{path}: providers.{pid}.{field} {what} (the project is not trusted)",
        user_action="Review the file, then run `air trust` in the project (or move the "
        "provider to ~/.air/models.yaml).",
        metadata={"file": path, "field": f"providers.{pid}.{field}"},
    )


def _check_references(config: ModelsConfig) -> None:
    where = config.sources[-1] if config.sources else "models.yaml"
    refs = [("default", config.default)] + [(f"roles.{r}", m) for r, m in config.roles.items()]
    refs += [(f"escalation[{i}]", m) for i, m in enumerate(config.escalation)]
    for field, ref in refs:
        if ref is None:
            continue
        provider_id, _, model_id = ref.partition("/")
        provider = config.providers.get(provider_id)
        if not model_id or provider is None or model_id not in provider.models:
            raise _bad(where, field, f"{ref!r} is not a configured provider_id/model_id")
