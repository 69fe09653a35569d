"""Lazy re-exports for a package's ``__init__`` (PEP 562; IMPL-BOOT-4, IMPL-BOOT-5).

Owns ``lazy_export``: the body of a package's module-level ``__getattr__`` that imports a
re-exported name from its home module on first use and caches it in the package, so importing
the package imports none of its modules; also of a contract module's, for the names it keeps
public from a late sibling module (IMPL-BOOT-12). Not a contract itself: ``air.contracts`` does not
re-export it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_export"]


def lazy_export(
    package: str,
    homes: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    name: str,
    *,
    owner: str | None = None,
) -> Any:
    """``name`` from ``package.<homes[name]>``, stored in ``namespace`` (the ``globals()`` of
    the module that re-exports it: the package, or ``owner``, a module of it whose late names
    live in a sibling, IMPL-BOOT-12) so the next lookup does not come here.

    Raises:
        AttributeError: ``name`` is not one of ``homes`` (naming ``owner``, else ``package``).
    """
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {owner or package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{home}"), name)
    namespace[name] = value
    return value
