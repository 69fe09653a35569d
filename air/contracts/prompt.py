"""The permission-prompt interface (IMPL-SPINE-5).

Owns ``PermissionPrompt``, what asks the person about an ``ask_user`` decision (the console
implements it), and ``FailClosedPrompt``, the headless path's, which refuses every question. The
question and the answer are ``air.contracts.permission_records``' ``PermissionPromptRequest``
(the tool, the decision, the pending items, the command's segments and the risk) and
``PermissionPromptResponse`` (allow once / task / session / project, or deny), imported at the
first question (IMPL-BOOT-12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse

__all__ = ["FailClosedPrompt", "PermissionPrompt"]


class PermissionPrompt(Protocol):
    """Asks the person (the console implements it). Must answer; a refusal is ``deny``."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse: ...


class FailClosedPrompt:
    """The headless answer: nobody is there to ask, so every question is denied."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        from air.contracts.permission_records import PermissionPromptResponse

        return PermissionPromptResponse(approved=False)
