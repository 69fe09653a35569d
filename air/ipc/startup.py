"""Start-up shortcuts shared by ``air run`` and the worker (IMPL-START-2).

Owns ``skip_pydantic_plugins``: air uses no pydantic plugins, yet pydantic looks them up when its
first validator is built, importing ``importlib.metadata`` (and zipfile, email, csv) and scanning
every installed distribution. Owns ``hold_gc`` / ``release_gc``: the cyclic garbage collector is
off while a process imports (pydantic's class and schema building sets off collection after
collection that find next to nothing), then the survivors are frozen out of later collections
and collection resumes. Owns ``skip_ldconfig_probe``: Trio looks up libpthread once when
imported, only to name its worker threads, through ``ctypes.util.find_library`` — which on Linux
runs ``ldconfig -p`` in a subprocess; the dynamic loader answers the same question in
microseconds. Standard library only.
"""

from __future__ import annotations

import gc
import os
import sys
import types

__all__ = ["hold_gc", "release_gc", "skip_ldconfig_probe", "skip_pydantic_plugins"]

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


_PTHREAD_SONAMES = ("libpthread.so.0", "libc.so.6")


def skip_ldconfig_probe() -> None:
    """Answer Trio's one ``find_library("pthread")`` at import from the dynamic loader instead
    of an ``ldconfig -p`` subprocess (IMPL-BOOT-6). Linux only, before Trio is imported; the
    lookup is answered once, then ``ctypes.util.find_library`` is the standard one again (any
    other name goes to it at once)."""
    if sys.platform != "linux" or "trio" in sys.modules:
        return
    import ctypes
    import ctypes.util

    standard = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        if name != "pthread":
            return standard(name)
        ctypes.util.find_library = standard
        for soname in _PTHREAD_SONAMES:
            try:
                ctypes.CDLL(soname)
            except OSError:
                continue
            return soname
        return standard(name)

    ctypes.util.find_library = find_library
