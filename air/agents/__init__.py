"""Runtime-resident agents: MainAgent and ArchitectureDesigner (SDD §14).

Owns the Main Agent (``air.agents.main``), its state machine (``air.agents.state``), its model
turns (``air.agents.turns``), its structured outputs (``air.agents.plan``), the stored
conversation (``air.agents.conversation``) and the console's UiCommandChannel
(``air.agents.channel``), direct mode (``air.agents.direct``), the progress/summary
messages (``air.agents.progress``), plan making (``air.agents.planning``) and the Scheduler's
background run (``air.agents.execution``). Imports contracts and ``air.context.loader`` only: the
event store, the model, the Scheduler and the tools are reached through ports (IMPL-AGENT-5).
"""

from __future__ import annotations

from air.agents.channel import MainAgentChannel, PendingPrompts, PromptAnswer
from air.agents.conversation import ConversationEntry, load_conversation, to_model_messages
from air.agents.direct import DirectMode, ToolPort
from air.agents.execution import TaskScheduler
from air.agents.main import MainAgent
from air.agents.plan import TaskPlan, parse_plan
from air.agents.progress import WorkTracker
from air.agents.state import STATE_EVENT, TRANSITIONS, MainAgentState, MainAgentTrigger, next_state
from air.agents.turns import EventSink, ModelPort, TurnRunner

__all__ = [
    "STATE_EVENT",
    "TRANSITIONS",
    "ConversationEntry",
    "DirectMode",
    "EventSink",
    "MainAgent",
    "MainAgentChannel",
    "MainAgentState",
    "MainAgentTrigger",
    "ModelPort",
    "PendingPrompts",
    "PromptAnswer",
    "TaskPlan",
    "TaskScheduler",
    "ToolPort",
    "TurnRunner",
    "WorkTracker",
    "load_conversation",
    "next_state",
    "parse_plan",
    "to_model_messages",
]
