"""The compact JSON text a long session keeps per task instead of its validated models.

Owns ``pack`` (a model as its JSON with the fields at their defaults left out: a typical
``TaskSpec`` is ~60 bytes instead of ~5 KiB of pydantic objects), ``unpack_spec`` (the
``TaskSpec`` of a packed text, validated on use; the last ``SPEC_CACHE`` decoded are kept, so
the scheduler's repeated reads of its running tasks' specs cost one validation) and
``pack_result`` / ``unpack_result`` (a ``WorkerResult`` without the ids its task already holds:
its ``task_id`` and ``agent_id`` are left out when they are the task's and its agent's, and put
back when read, IMPL-RSS-1; read rarely: reports, the console's usage). The fold's ``TaskFact``
and the graph's ``TaskNode`` hold the text (IMPL-PACK-1): what was validated when its event was
stored is validated again only when read.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

from pydantic import BaseModel

from air.contracts.task import TaskSpec

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult

__all__ = ["SPEC_CACHE", "pack", "pack_result", "unpack_result", "unpack_spec"]

SPEC_CACHE = 128
"""Decoded specs kept (by text): more than a wave's tasks and their reviews."""


def pack(model: BaseModel) -> str:
    """``model`` as compact JSON: what validating it again gives back equal (tested)."""
    return model.model_dump_json(exclude_defaults=True)


@lru_cache(maxsize=SPEC_CACHE)
def unpack_spec(text: str) -> TaskSpec:
    """The ``TaskSpec`` of ``pack(spec)`` (frozen: one object may serve every reader)."""
    return TaskSpec.model_validate_json(text)


def pack_result(result: WorkerResult, task_id: str, agent_id: str | None) -> str:
    """``pack(result)`` without its ``task_id`` / ``agent_id`` where they are ``task_id`` /
    ``agent_id`` (the task's own, which it keeps beside the text): ~60 bytes less per result.

    ``unpack_result(text, task_id, agent_id)`` gives ``result`` back (tested)."""
    omit = {"task_id"} if result.task_id == task_id else set()
    if agent_id is not None and result.agent_id == agent_id:
        omit.add("agent_id")
    return result.model_dump_json(exclude_defaults=True, exclude=omit or None)


def unpack_result(
    text: str | None, task_id: str | None = None, agent_id: str | None = None
) -> WorkerResult | None:
    """The ``WorkerResult`` of ``pack(result)`` or of ``pack_result(result, task_id,
    agent_id)`` (the ids left out are put back); None for None."""
    if text is None:
        return None
    from air.contracts.worker_result import WorkerResult  # IMPL-BOOT-12: loaded when met

    if task_id is None and agent_id is None:
        return WorkerResult.model_validate_json(text)
    fields = json.loads(text)
    if task_id is not None:
        fields.setdefault("task_id", task_id)
    if agent_id is not None:
        fields.setdefault("agent_id", agent_id)
    return WorkerResult.model_validate(fields)
