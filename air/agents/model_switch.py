"""``/model PROVIDER/MODEL``: switch the provider and model for what comes next (issue 24 item 4).

Owns ``switch_model`` (the ``ModelPort`` checks the reference — an unknown provider or model is
its ``config_error``, told to the person, nothing changed; then the Main Agent's next turns use
it and ``session.model.changed`` moves the session row) and ``with_task_model`` (tasks made
after a switch name the model in their spec's ``constraints.model_id``, so each task records
its own where it differs from the session's start; running tasks keep the model they began on).
"""

from __future__ import annotations

from collections.abc import Sequence

from air.agents.turns import TurnRunner
from air.contracts.provider import ModelAssignment, ModelRequirement
from air.contracts.task import TaskSpec

__all__ = ["switch_model", "with_task_model"]


async def switch_model(turns: TurnRunner, session_id: str, ref: str) -> ModelAssignment:
    """Check ``ref`` (``provider/model``), make it the Main Agent's model, record the switch.

    Raises:
        AirException: ``config_error`` from the ModelPort for a provider or model that is not
            configured (the model stays what it was).
    """
    assignment = turns.models.select_model(ModelRequirement(model=ref))
    previous = turns.model
    turns.model = assignment
    turns.last_usage = None  # the context use is the new model's from its first turn
    await turns.record(
        "session.model.changed",
        {
            "session_id": session_id,
            "model_provider_id": assignment.provider_id,
            "model_id": assignment.model_id,
            "previous_provider_id": previous.provider_id,
            "previous_model_id": previous.model_id,
        },
    )
    await turns.say(
        f"Model: {assignment.provider_id}/{assignment.model_id} from now on (was "
        f"{previous.provider_id}/{previous.model_id}); running tasks keep theirs."
    )
    return assignment


def with_task_model(specs: Sequence[TaskSpec], model: str | None) -> list[TaskSpec]:
    """``specs`` with ``model`` as the model of each that names none (unchanged without one)."""
    if model is None:
        return list(specs)
    return [
        s
        if s.constraints.model_id
        else s.model_copy(
            update={"constraints": s.constraints.model_copy(update={"model_id": model})}
        )
        for s in specs
    ]
