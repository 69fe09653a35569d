"""Event payload models, group ``conversation`` (``air.events.payloads``; IMPL-BOOT-7).

What the Main Agent and the console record: messages, the Main Agent's state, requirement
changes and the architecture plan, and the console's frames.
"""

from typing import Any, Literal

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import empty_list
from air.events.payloads.start import EventPayload

__all__ = [
    "ArchitectureImpactCompletedPayload",
    "ArchitecturePlanUpdatedPayload",
    "AssistantMessageCreatedPayload",
    "AssistantMessageDeltaPayload",
    "AssistantMessageFailedPayload",
    "AssistantMessageStartedPayload",
    "HudFrameRenderedPayload",
    "MainAgentStateChangedPayload",
    "RequirementChangedPayload",
    "RequirementDeliveredPayload",
    "SessionModelChangedPayload",
    "UserMessageCreatedPayload",
]


# --- messages -----------------------------------------------------------------------------


class UserMessageCreatedPayload(EventPayload):
    message_id: str
    content: list[dict[str, Any]]
    """Anthropic canonical content blocks, e.g. ``[{"type": "text", "text": "..."}]``."""
    task_id: str | None = None


class AssistantMessageStartedPayload(EventPayload):
    message_id: str
    agent_id: str | None = None
    task_id: str | None = None
    model_id: str | None = None


class AssistantMessageDeltaPayload(EventPayload):
    """Ephemeral: a piece of streamed assistant text."""

    message_id: str
    index: int = 0
    """Content block index the delta belongs to."""
    text: str


class AssistantMessageCreatedPayload(EventPayload):
    message_id: str
    content: list[dict[str, Any]]
    agent_id: str | None = None
    task_id: str | None = None
    model_id: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


class AssistantMessageFailedPayload(EventPayload):
    message_id: str
    error: AirError
    failure_artifact_id: str | None = None


# --- main agent ---------------------------------------------------------------------------


class MainAgentStateChangedPayload(EventPayload):
    """One transition of the Main Agent's state machine (SDD §20.1, IMPL-AGENT-1)."""

    from_state: str
    to_state: str
    trigger: str
    message_id: str | None = None
    """The user message that caused it, when one did."""
    reason: str | None = None


# --- requirements / architecture ----------------------------------------------------------


class RequirementChangedPayload(EventPayload):
    requirement_id: str
    description: str
    change_class: Literal["execution", "possible_design", "design_interface_goal"]
    impacted_task_ids: list[str] = Field(default_factory=empty_list)
    origin_message_id: str | None = None


class RequirementDeliveredPayload(EventPayload):
    """IMPL: a correction sent to the running workers (mid-run steering): the tasks it reached,
    each of which adds it before its next model turn."""

    requirement_id: str
    description: str
    task_ids: list[str] = Field(default_factory=empty_list)
    agent_ids: list[str] = Field(default_factory=empty_list)


class SessionModelChangedPayload(EventPayload):
    """IMPL: ``/model`` switched the provider and model for what comes next (issue 24 item 4):
    the session row names them from then on; tasks made later record theirs in their spec."""

    session_id: str
    model_provider_id: str
    model_id: str
    previous_provider_id: str | None = None
    previous_model_id: str | None = None


class ArchitecturePlanUpdatedPayload(EventPayload):
    plan_ref: str
    summary: str
    artifact_ids: list[str] = Field(default_factory=empty_list)


class ArchitectureImpactCompletedPayload(EventPayload):
    result_class: Literal[
        "silent_continue", "requires_user_confirmation", "requires_replan", "reject_or_escalate"
    ]
    summary: str
    requirement_id: str | None = None
    impacted_task_ids: list[str] = Field(default_factory=empty_list)


# --- HUD ----------------------------------------------------------------------------------


class HudFrameRenderedPayload(EventPayload):
    """Ephemeral: the console rendered a frame (for frame-rate diagnostics)."""

    frame: int
    render_ms: float = 0.0
