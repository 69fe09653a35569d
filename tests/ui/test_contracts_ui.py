"""The console's contracts: UiCommand shapes and the protocols' structural fit."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from air.contracts.ui import (
    PERMISSION_ANSWERS,
    PermissionPromptProjection,
    ProjectionSnapshot,
    UiCommand,
)


def test_ui_command_kinds_and_answers() -> None:
    assert UiCommand(kind="interrupt").kind == "interrupt"
    cmd = UiCommand(kind="permission_response", prompt_id="p1", decision="allow_task")
    assert cmd.decision == "allow_task"
    with pytest.raises(ValidationError):
        UiCommand(kind="permission_response", prompt_id="p1", decision="allow_forever")
    with pytest.raises(ValidationError):
        UiCommand(kind="reboot")


def test_prompt_offers_every_scope_by_default() -> None:
    prompt = PermissionPromptProjection(
        prompt_id="p", tool_name="shell", summary="ls", risk_level="low"
    )
    assert tuple(prompt.scopes) == PERMISSION_ANSWERS
    assert ProjectionSnapshot().main_agent.state == "IDLE"
