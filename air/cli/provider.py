"""``air provider list`` and ``air provider current``: read-only views of models.yaml.

Owns the two command bodies. Neither switches anything (the provider and model of a session
are fixed when it opens, SDD §12.1); neither prints a key: only the ``auth_ref`` name and
whether that variable is set.
"""

from __future__ import annotations

import os


def _project_root(project_root: str | None) -> str | None:
    root = os.path.abspath(project_root or os.getcwd())
    probe = root
    while True:
        if os.path.isdir(os.path.join(probe, ".air", "shared")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def run_provider_list(project_root: str | None) -> int:
    """Print every configured provider and model with capabilities and prices."""
    from air.cli.run import load_models_checked

    config = load_models_checked(_project_root(project_root))
    if not config.providers:
        print("no providers configured (create ~/.air/models.yaml or .air/shared/models.yaml)")
        return 0
    for source in config.sources:
        print(f"# from {source}")
    for provider_id, provider in sorted(config.providers.items()):
        auth = "-"
        if provider.auth_ref:
            state = "set" if os.environ.get(provider.auth_ref) else "NOT SET"
            auth = f"{provider.auth_ref} ({state})"
        where = provider.base_url or provider.cassette or "default endpoint"
        kind = provider.kind.value
        if provider.kind.value == "anthropic" and provider.transport != "sdk":
            kind += f" (transport={provider.transport})"
        print(f"{provider_id}  kind={kind}  auth={auth}  at={where}")
        for model_id, model in sorted(provider.models.items()):
            mark = "*" if config.default == f"{provider_id}/{model_id}" else " "
            price = model.price
            print(
                f"  {mark} {provider_id}/{model_id}  ctx={model.context_window}"
                f"  out={model.max_output_tokens}  tools={'yes' if model.supports_tools else 'no'}"
                f"  tier={model.tier}  $/Mtok in={price.input:g} out={price.output:g}"
                f" cache_w={price.cache_write:g} cache_r={price.cache_read:g}"
            )
    return 0


def run_provider_current(project_root: str | None) -> int:
    """Print the model a new session would use, and the per-role pins."""
    from air.cli.run import load_models_checked

    config = load_models_checked(_project_root(project_root))
    if config.default is None:
        print("no default model (set `default: provider_id/model_id` in models.yaml)")
    else:
        print(f"default: {config.default}")
    for role, ref in sorted(config.roles.items()):
        print(f"role {role}: {ref}")
    print("the provider and model of an open session are fixed; no command switches them")
    return 0
