"""Every public contract of air as frozen pydantic v2 models (SDD §3).

Owns nothing itself: it re-exports the 16 contract modules (ids, error, event, runtime, ipc,
task, worker_result, tool, permission, artifact, evidence, project, provider, ui, capability,
platform). Imports pydantic only; no Trio, no I/O.

The re-export is lazy (IMPL-BOOT-2): ``from air.contracts import X`` imports the contract
modules in ``_MODULES`` order only until one defines ``X`` (each module imports what it needs
itself), so a process that never names a console contract never builds the ``ui`` models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.contracts.artifact import *  # noqa: F403
    from air.contracts.capability import *  # noqa: F403
    from air.contracts.error import *  # noqa: F403
    from air.contracts.event import *  # noqa: F403
    from air.contracts.evidence import *  # noqa: F403
    from air.contracts.ids import *  # noqa: F403
    from air.contracts.ipc import *  # noqa: F403
    from air.contracts.permission import *  # noqa: F403
    from air.contracts.platform import *  # noqa: F403
    from air.contracts.project import *  # noqa: F403
    from air.contracts.provider import *  # noqa: F403
    from air.contracts.runtime import *  # noqa: F403
    from air.contracts.task import *  # noqa: F403
    from air.contracts.tool import *  # noqa: F403
    from air.contracts.ui import *  # noqa: F403
    from air.contracts.worker_result import *  # noqa: F403

_MODULES = (
    # what every run needs first; the console's projections last
    "ids",
    "error",
    "event",
    "runtime",
    "task",
    "ipc",
    "worker_result",
    "tool",
    "permission",
    "artifact",
    "evidence",
    "provider",
    "project",
    "capability",
    "platform",
    "ui",
)


def __getattr__(name: str) -> Any:
    """The public name ``name`` of the first contract module (in ``_MODULES`` order) whose
    ``__all__`` lists it; cached in this module afterwards."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _MODULES:  # ``air.contracts.ui`` asked for as an attribute
        return importlib.import_module(f"{__name__}.{name}")
    for short in _MODULES:
        module = importlib.import_module(f"{__name__}.{short}")
        if name in module.__all__:
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    names = set(globals())
    for short in _MODULES:
        names.update(importlib.import_module(f"{__name__}.{short}").__all__)
    return sorted(names)
