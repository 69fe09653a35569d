"""The conversation of one worker's model turns, kept by the parent turn by turn (issue 28).

Owns ``Conversation``: what a worker's ``provider.complete`` input says, turned into the
``ProviderCompletionInput`` the parent sends, at a cost that does not grow with the
conversation (IMPL-TURN-1). A worker sends the whole conversation once, then each turn only
``prefix`` (how many of the messages it sent before still stand) and the messages after them;
``system`` and ``tools`` only when they changed. Each message is validated once, when it
arrives, and kept; the request's other fields are validated when they change. An input without
``prefix`` is a whole conversation, validated whole, as any worker may send it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter

from air.contracts.provider import CanonicalMessage, ProviderCompletionInput

__all__ = ["Conversation", "ConversationError"]

_HEAD_KEYS = ("system", "tools", "max_tokens")
"""What the worker may send with a turn besides its messages (``max_tokens`` is ignored: the
parent owns the model's limits)."""


@cache
def _messages_adapter() -> TypeAdapter[list[CanonicalMessage]]:
    return TypeAdapter(list[CanonicalMessage])


class ConversationError(ValueError):
    """A ``prefix`` that does not fit what the parent holds (a validation problem of the input,
    reported to the worker like any invalid ``provider.complete`` input)."""


class Conversation:
    """The validated messages of one worker's conversation and the request fields around them.

    Args:
        fixed: the fields the parent decides (provider and model ids, who pays, ``max_tokens``
            when the parent caps it); they are merged into every request.
    """

    __slots__ = ("_fixed", "_head", "_head_input", "messages")

    def __init__(self, fixed: dict[str, Any]) -> None:
        self._fixed = fixed
        self.messages: list[CanonicalMessage] = []
        """Every message of the conversation, each validated once."""
        self._head: ProviderCompletionInput | None = None
        self._head_input: dict[str, Any] = {}

    def turn(self, input: dict[str, Any]) -> ProviderCompletionInput:
        """The request of the turn ``input`` asks for; the conversation keeps its messages.

        Raises:
            pydantic.ValidationError: a new message, ``system`` or ``tools`` is invalid.
            ConversationError: ``prefix`` is not an int within the messages held.
        """
        prefix = input.get("prefix")
        raw = input.get("messages") or []
        if prefix is None:
            kept = 0
            head_input = {"system": input.get("system"), "tools": input.get("tools") or []}
        else:
            if type(prefix) is not int or not 0 <= prefix <= len(self.messages):
                raise ConversationError(
                    f"prefix {prefix!r} is not a count of the {len(self.messages)} messages"
                    " the parent holds"
                )
            kept = prefix
            head_input = {
                "system": input["system"] if "system" in input else self._head_input.get("system"),
                "tools": input["tools"] if "tools" in input else self._head_input.get("tools", []),
            }
        new = _messages_adapter().validate_python(raw) if raw else []
        head = self._head
        if head is None or head_input != self._head_input:
            head = ProviderCompletionInput.model_validate(
                {**head_input, "tools": head_input["tools"] or [], "messages": [], **self._fixed}
            )
        # only now, with everything valid, does the conversation change
        self._head, self._head_input = head, head_input
        del self.messages[kept:]
        self.messages.extend(new)
        # a shallow copy: the request keeps the messages of this turn when later turns add more
        return head.model_copy(update={"messages": list(self.messages)})
