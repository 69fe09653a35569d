"""CommandRiskAnalyzer against the golden table: every program table, handler branch and shell
construct keeps its category, reason, segments and write targets (``command_golden.py`` says how
the table was made and how to update it after an intended change)."""

from __future__ import annotations

import json
from typing import Any

from air.security.commands import CommandRiskAnalyzer
from tests.security.command_golden import GOLDEN, analyse, commands


def test_the_golden_table_covers_the_generators_commands() -> None:
    records = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert [r["command"] for r in records] == commands()
    assert len(records) >= 1500


def test_every_command_is_classified_as_in_the_golden_table() -> None:
    analyzer = CommandRiskAnalyzer()
    records: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    changed = []
    for expected in records:
        got = analyse(analyzer, expected["command"])
        if got != expected:
            changed.append((expected, got))
            if len(changed) == 3:  # enough to show; stop early (mutation runs kill faster)
                break
    assert changed == [], f"changed (first {len(changed)}): {changed}"
