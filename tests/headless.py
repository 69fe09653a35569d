"""Shared by the tests (and bench/startup.py) that run ``air run --headless``: a one-review
batch and the reply that completes it, the ``batch.yaml --json`` run itself (a process forked
from the warm air, tests/forked_air.py), the JSON event lines it prints and the events its
session database recorded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.forked_air import air_cli

REVIEW_BATCH = """version: 1
tasks:
  - id: review-notes
    type: review
    title: Review the notes
    description: Read notes.txt and say whether it is fit to ship.
"""
"""A batch of one review task (a project holding ``notes.txt``)."""

LOOK_BATCH = """version: 1
tasks:
  - id: look
    title: Look around
    description: Look at the project and report.
    scope: {write_area: ["notes.txt"]}
"""
"""A batch of one executor task that may write ``notes.txt`` only (a project holding it)."""


def review_verdict() -> str:
    """The model's answer that completes ``REVIEW_BATCH``'s task: an approving result block."""
    block = json.dumps(
        {
            "status": "completed",
            "summary": "notes.txt is short and clear.",
            "result": {"verdict": "approved", "findings": []},
        }
    )
    return f"Looks fine.\n```json:result\n{block}\n```\n"


def review_project(tmp: Path, batch: str = REVIEW_BATCH) -> tuple[Path, Path]:
    """``tmp/proj`` holding ``notes.txt``, ``batch`` as ``batch.yaml`` and an empty
    ``.air/shared`` (for a models.yaml), and an empty ``tmp/home``: (project root, HOME)."""
    root, home = tmp / "proj", tmp / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    (root / "batch.yaml").write_text(batch)
    return root, home


def strict_openai_models(root: Path, url: str, auth_ref: str) -> None:
    """``root``'s ``.air/shared/models.yaml``: one ``openai_compatible`` model ``local/m`` served
    at ``url`` (a strict local server), its key in the variable ``auth_ref``."""
    (root / ".air" / "shared" / "models.yaml").write_text(
        "default: local/m\nproviders:\n  local:\n    kind: openai_compatible\n"
        f"    base_url: {url}/v1\n    auth_ref: {auth_ref}\n"
        "    models: {m: {max_output_tokens: 4096}}\n"
    )


def run_batch_json(
    root: Path, env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``air run --headless batch.yaml --json *args`` in ``root`` with exactly ``env``."""
    return air_cli(
        ["run", "--headless", "batch.yaml", "--json", *args], cwd=root, env=env, timeout=timeout
    )


def json_events(stdout: str) -> list[dict[str, Any]]:
    """The events of a ``--json`` run's stdout (its JSON lines; anything else, and the closing
    ``air.summary`` record, which is not an event, is skipped)."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e for e in lines if e.get("type") != "air.summary"]


def session_events(root: Path) -> list[dict[str, Any]]:
    """Every event of the one session under ``root``'s ``.air``: its type and its payload."""
    [db_path] = list((root / ".air" / "local" / "sessions").glob("*/session.db"))
    db = open_session_database(db_path)
    try:
        return [{"type": e.type, **e.payload} for e in EventStore(db).query()]
    finally:
        db.close()


def write_file_cassette(
    path: Path, file: str, content: str, summary: str = "wrote", *, tool_id: str = "toolu_w"
) -> None:
    """A two-turn cassette at ``path``: ``fs.write`` of ``content`` to ``file``, then a completed
    result (``changes_made``) with ``summary``."""
    tool_calls_cassette(path, [("fs.write", {"path": file, "content": content})], summary, tool_id)


def tool_calls_cassette(
    path: Path, calls: list[tuple[str, dict[str, Any]]], summary: str = "done", tool_id: str = "t"
) -> None:
    """A cassette at ``path``: one turn per ``(tool, input)`` of ``calls``, then a completed
    result (``changes_made``) with ``summary``, whatever the calls answered."""
    result = json.dumps(
        {"status": "completed", "summary": summary, "result": {"changes_made": True}}
    )
    usage = {"input_tokens": 10, "output_tokens": 5}
    turns = [
        {
            "content": [{"type": "tool_use", "id": f"{tool_id}{n}", "name": tool, "input": args}],
            "stop_reason": "tool_use",
        }
        for n, (tool, args) in enumerate(calls)
    ]
    text = f"ok\n```json:result\n{result}\n```\n"
    turns.append({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})
    path.write_text("".join(json.dumps({**t, "usage": usage}) + "\n" for t in turns))
