"""ModelConfigLoader: ``~/.air/models.yaml`` merged with ``<project>/.air/shared/models.yaml``.

Owns reading, validating and merging the two files (IMPL-LLM-2): each file is validated on its
own against ``ModelsConfig`` (a bad file is ``AirException(config_error)`` naming the file and
the field); the project file then overrides ``default``, ``retry`` and each role, and replaces
whole provider entries with the same id. Relative cassette paths resolve against the file that
names them. PyYAML is imported only when a file exists. Without ``~/.air/models.yaml``,
``env_models_config`` gives the user's layer from the environment (a first run that just works;
IMPL-API-3). A project file that defines providers (where a key is sent, which variable is a
key) is refused unless the caller says the user trusted the project (IMPL-TRUST-1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from air.contracts.error import AirException
from air.contracts.provider import (
    ModelConfig,
    ModelPrice,
    ModelsConfig,
    ProviderConfig,
    ProviderKind,
)
from air.llm.errors import models_reference

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "env_models_config",
    "load_models_config",
    "nothing_configured",
    "project_models_path",
    "user_models_path",
]

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_OPENAI_MODEL = "gpt-4.1"
_KNOWN_MODELS: dict[str, ModelConfig] = {
    DEFAULT_ANTHROPIC_MODEL: ModelConfig(
        context_window=200_000,
        max_output_tokens=64_000,
        supports_prompt_cache=True,
        tier="large",
        price=ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3),
    ),
    DEFAULT_OPENAI_MODEL: ModelConfig(
        context_window=1_047_576,
        max_output_tokens=32_768,
        tier="large",
        price=ModelPrice(input=2.0, output=8.0, cache_read=0.5),
    ),
}
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


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

    from air.yamlload import load

    try:
        with open(path, encoding="utf-8") as handle:
            raw: Any = load(handle.read(), name=handle.name)
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


def _model_entry(model_id: str) -> dict[str, ModelConfig]:
    return {model_id: _KNOWN_MODELS.get(model_id, ModelConfig())}


def env_models_config(env: Mapping[str, str]) -> ModelsConfig:
    """The configuration of a first run without models.yaml, from the environment.

    ``ANTHROPIC_API_KEY`` -> provider ``anthropic`` (model ``ANTHROPIC_MODEL`` or
    claude-sonnet-4-5, endpoint ``ANTHROPIC_BASE_URL``); ``OPENAI_API_KEY`` -> provider
    ``openai`` (model ``OPENAI_MODEL`` or gpt-4.1, endpoint ``OPENAI_BASE_URL`` or OpenAI's);
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
    local = base_url is not None and urlsplit(base_url).hostname in _LOCAL_HOSTS
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
    return merged


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
