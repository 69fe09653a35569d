"""``/plan BATCH`` in the console's input (issue 25 item 2): a command for the console's own
handler, never a message to the Main Agent; without a file it is refused where typed."""

from __future__ import annotations

from air.contracts.ui import UiCommand
from air.ui_urwid.commands import SLASH_COMMANDS, parse_input


def test_slash_plan_names_a_batch_file() -> None:
    assert parse_input("/plan jobs/batch.yaml") == parse_input("  /PLAN jobs/batch.yaml ")
    assert parse_input("/plan jobs/batch.yaml").command == UiCommand(
        kind="plan", text="jobs/batch.yaml"
    )
    assert parse_input("/plan").error == "/plan needs a batch file: /plan BATCH (a YAML file)"
    assert parse_input("/plan").command is None
    assert "/plan" in SLASH_COMMANDS
