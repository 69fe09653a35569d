"""Start-up shortcuts shared by ``air run`` and the worker (IMPL-START-2).

Owns ``skip_pydantic_plugins``: air uses no pydantic plugins, yet pydantic looks them up when its
first validator is built, importing ``importlib.metadata`` (and zipfile, email, csv) and scanning
every installed distribution. Owns ``hold_gc`` / ``release_gc``: the cyclic garbage collector is
off while a process imports (pydantic's class and schema building sets off collection after
collection that find next to nothing), then the survivors are frozen out of later collections
and collection resumes. Standard library only.
"""

from __future__ import annotations

import gc
import os
import sys
import types

__all__ = ["hold_gc", "release_gc", "skip_pydantic_plugins"]

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


def hold_gc() -> None:
    """Stop automatic cyclic collection for the start-up (``release_gc`` resumes it)."""
    gc.disable()


def release_gc() -> None:
    """Resume cyclic collection; what start-up built (modules, classes, validators) moves to the
    permanent generation first, so later collections do not walk it again (IMPL-START-2)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
