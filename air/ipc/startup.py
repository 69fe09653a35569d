"""Start-up shortcuts shared by ``air run`` and the worker (IMPL-START-2).

Owns ``skip_pydantic_plugins``: air uses no pydantic plugins, yet pydantic looks them up when its
first validator is built, importing ``importlib.metadata`` (and zipfile, email, csv) and scanning
every installed distribution. Standard library only.
"""

from __future__ import annotations

import os
import sys
import types

__all__ = ["skip_pydantic_plugins"]

_LOADER = "pydantic.plugin._loader"


def _no_plugins() -> tuple[()]:
    return ()


def skip_pydantic_plugins() -> None:
    """Set ``PYDANTIC_DISABLE_PLUGINS=__all__`` unless the environment says otherwise, and while
    it is ``__all__`` stand in for pydantic's plugin loader (whose ``get_plugins`` then returns
    nothing anyway) so that its imports are not paid. Call before pydantic builds a validator."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] != "__all__" or _LOADER in sys.modules:
        return
    loader = types.ModuleType(_LOADER, "air: pydantic plugins are disabled (__all__)")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[_LOADER] = loader
