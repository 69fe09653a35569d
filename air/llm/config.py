"""ModelConfigLoader: ``~/.air/models.yaml`` merged with ``<project>/.air/shared/models.yaml``.

Owns reading, validating and merging the two files (IMPL-LLM-2): each file is validated on its
own against ``ModelsConfig`` (a bad file is ``AirException(config_error)`` naming the file and
the field); the project file then overrides ``default``, ``retry`` and each role, and replaces
whole provider entries with the same id. Relative cassette paths resolve against the file that
names them. PyYAML is imported only when a file exists.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from air.contracts import AirException, ModelsConfig, ProviderConfig

__all__ = ["load_models_config", "project_models_path", "user_models_path"]


def user_models_path(home: str | None = None) -> str:
    return os.path.join(home or os.path.expanduser("~"), ".air", "models.yaml")


def project_models_path(project_root: str) -> str:
    return os.path.join(project_root, ".air", "shared", "models.yaml")


def _bad(path: str, field: str, message: str) -> AirException:
    return AirException.of(
        kind="config_error",
        message=f"{path}: {field}: {message}",
        user_action=f"Fix `{field}` in {path} (see docs/decisions.md IMPL-LLM-2 for the format).",
    )


def _read_file(path: str) -> tuple[ModelsConfig, set[str]] | None:
    """The validated file and the top-level fields it sets explicitly."""
    if not os.path.exists(path):
        return None
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            raw: Any = yaml.safe_load(handle)
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


def load_models_config(project_root: str | None, *, home: str | None = None) -> ModelsConfig:
    """Load and merge the user and project files; missing files contribute nothing.

    Raises:
        AirException(config_error): a file is not YAML, or a field is invalid; the message
            names the file and the field. Also when ``default``/``roles`` name an unknown model.
    """
    layers = [_read_file(user_models_path(home))]
    if project_root is not None:
        layers.append(_read_file(project_models_path(project_root)))
    merged = ModelsConfig()
    for entry in layers:
        if entry is None:
            continue
        layer, explicit = entry
        merged = merged.model_copy(
            update={
                "default": layer.default if "default" in explicit else merged.default,
                "retry": layer.retry if "retry" in explicit else merged.retry,
                "roles": {**merged.roles, **layer.roles},
                "providers": {**merged.providers, **layer.providers},
                "sources": [*merged.sources, *layer.sources],
            }
        )
    _check_references(merged)
    return merged


def _check_references(config: ModelsConfig) -> None:
    where = config.sources[-1] if config.sources else "models.yaml"
    refs = [("default", config.default)] + [(f"roles.{r}", m) for r, m in config.roles.items()]
    for field, ref in refs:
        if ref is None:
            continue
        provider_id, _, model_id = ref.partition("/")
        provider = config.providers.get(provider_id)
        if not model_id or provider is None or model_id not in provider.models:
            raise _bad(where, field, f"{ref!r} is not a configured provider_id/model_id")
