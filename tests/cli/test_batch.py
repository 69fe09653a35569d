"""Batch files: valid files become TaskSpecs; every bad file names file, line and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from air.cli.batch import load_batch, load_batch_text, schema_text
from air.contracts.error import AirException
from air.contracts.task import DependencyType

GOOD = """\
version: 1
name: demo
defaults:
  constraints: {max_turns: 4, retry_budget: 2}
  verification: {commands: ["pytest -q"], required: true}
tasks:
  - id: a
    title: First
    scope: {write_area: ["src/a.py"]}
  - id: b
    title: Second
    description: the second one
    depends_on: [a]
    constraints: {max_turns: 9}
    dependencies:
      - {depends_on_task_id: a, dependency_type: soft}
  - id: c
    type: review
    title: Review
"""


def test_good_batch_becomes_specs_with_defaults_merged() -> None:
    batch = load_batch_text(GOOD, "good.yaml")
    assert batch.name == "demo"
    a, b, c = batch.specs
    assert a.description == "First"
    assert (a.constraints.max_turns, a.constraints.retry_budget) == (4, 2)
    assert (b.constraints.max_turns, b.constraints.retry_budget) == (9, 2)
    assert a.verification.commands == ["pytest -q"]
    assert [(d.depends_on_task_id, d.dependency_type) for d in b.dependencies] == [
        ("a", DependencyType.HARD),
        ("a", DependencyType.SOFT),
    ]
    assert c.output_contract == "ReviewerResult"


BAD = [
    ("tasks:\n  - id: a\n    title: x\n    colour: red\n", 4, "unknown field 'tasks.0.colour'"),
    ("tasks:\n  - id: a\n    title: x\n    depends_on: [zz]\n", 4, "depends on unknown task 'zz'"),
    (
        "tasks:\n  - id: a\n    title: x\n    depends_on: [b]\n"
        "  - id: b\n    title: y\n    depends_on: [a]\n",
        2,
        "dependency cycle: a -> b -> a",
    ),
    ("tasks:\n  - id: a\n    title: [oops\n", 4, "invalid YAML"),
    ("tasks:\n  - id: a\n    title: x\n    constraints:\n      max_turns: lots\n", 5, "max_turns"),
    ("tasks:\n  - id: a\n    title: x\n  - id: a\n    title: y\n", 4, "duplicate task id 'a'"),
    ("tasks:\n  - id: 'bad id'\n    title: x\n", 2, "tasks.0.id"),
    ("taskz: []\n", 1, "unknown field 'taskz'"),
    ("tasks:\n  - id: a\n", 2, "missing required field 'tasks.0.title'"),
    (
        "tasks:\n  - id: a\n    title: x\n    dependencies:\n"
        "      - {depends_on_task_id: q, dependency_type: soft}\n",
        5,
        "unknown task 'q'",
    ),
    ("- just a list\n", 1, "a batch file is a mapping"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD)
def test_bad_batch_names_file_line_and_reason(text: str, line: int, reason: str) -> None:
    with pytest.raises(AirException) as info:
        load_batch_text(text, "bad.yaml")
    error = info.value.error
    assert error.kind == "validation_error"
    assert error.metadata is not None
    assert error.metadata["file"] == "bad.yaml"
    assert error.metadata["line"] == line, error.message
    assert reason in error.message
    assert error.message.startswith(f"bad.yaml:{line}: ")
    assert error.user_action


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(AirException) as info:
        load_batch(tmp_path / "nope.yaml")
    assert info.value.kind == "not_found"


def test_shipped_schema_matches_the_models() -> None:
    shipped = Path(__file__).parents[2] / "air" / "cli" / "schemas" / "batch.schema.json"
    assert shipped.read_text() == schema_text()
    schema = json.loads(schema_text())
    assert schema["additionalProperties"] is False
    assert "tasks" in schema["required"]
