"""Mid-run steering, the worker's side: a correction the person sent while the task runs.

Owns ``STEER_MESSAGE``, ``take_steering`` and ``add_note``: the corrections the runtime received
(``agent.steer`` controls, kept in ``WorkerRuntime.steering``) become one user text block of the
conversation, added right before the loop's next model turn, in the order they came. The parent
side that sends them is ``air.supervision.steering``.
"""

from __future__ import annotations

from typing import Any

from air.ipc.runtime import WorkerRuntime

__all__ = ["STEER_MESSAGE", "add_note", "take_steering"]

STEER_MESSAGE = (
    "A correction from the person arrived while you work. It takes precedence over the task "
    "description where they differ; carry on with it in mind:\n{text}"
)


def take_steering(runtime: WorkerRuntime, messages: list[dict[str, Any]]) -> bool:
    """Append the waiting corrections to ``messages`` as one user message (merged into a last
    user message, so roles still alternate) and clear them; False when none waited."""
    if not runtime.steering:
        return False
    notes, runtime.steering = runtime.steering, []
    add_note(messages, "\n\n".join(n.text for n in notes))
    return True


def add_note(messages: list[dict[str, Any]], text: str) -> None:
    """Append ``STEER_MESSAGE`` with ``text``: into a last user message as a new dict (a sent
    message is never changed in place, IMPL-TURN-1), else as a user message of its own."""
    block = {"type": "text", "text": STEER_MESSAGE.format(text=text)}
    if messages and messages[-1].get("role") == "user":
        last = messages[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        messages[-1] = {**last, "content": [*content, block]}
    else:
        messages.append({"role": "user", "content": [block]})
