"""The compact JSON text a long session keeps per task instead of its validated models.

Owns ``pack`` (a model as its JSON with the fields at their defaults left out: a typical
``TaskSpec`` is ~60 bytes instead of ~5 KiB of pydantic objects), ``unpack_spec`` (the
``TaskSpec`` of a packed text, validated on use; the last ``SPEC_CACHE`` decoded are kept, so
the scheduler's repeated reads of its running tasks' specs cost one validation) and
``unpack_result`` (a packed ``WorkerResult``, read rarely: reports, the console's usage).
The fold's ``TaskFact`` and the graph's ``TaskNode`` hold the text (IMPL-PACK-1): what was
validated when its event was stored is validated again only when read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from pydantic import BaseModel

from air.contracts.task import TaskSpec

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult

__all__ = ["SPEC_CACHE", "pack", "unpack_result", "unpack_spec"]

SPEC_CACHE = 128
"""Decoded specs kept (by text): more than a wave's tasks and their reviews."""


def pack(model: BaseModel) -> str:
    """``model`` as compact JSON: what validating it again gives back equal (tested)."""
    return model.model_dump_json(exclude_defaults=True)


@lru_cache(maxsize=SPEC_CACHE)
def unpack_spec(text: str) -> TaskSpec:
    """The ``TaskSpec`` of ``pack(spec)`` (frozen: one object may serve every reader)."""
    return TaskSpec.model_validate_json(text)


def unpack_result(text: str | None) -> WorkerResult | None:
    """The ``WorkerResult`` of ``pack(result)``; None for None."""
    if text is None:
        return None
    from air.contracts.worker_result import WorkerResult  # IMPL-BOOT-12: loaded when met

    return WorkerResult.model_validate_json(text)
