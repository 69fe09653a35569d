"""Issue #25 item 9 through the real CLI: a project capability is approved and enabled with
``air capability``, the approval lives in ``~/.air/capabilities.json`` keyed by the manifest's
hash (a changed manifest needs approval again), and an enabled capability's tool call still
gets a permission decision: headless it fails closed; allowed, it runs in the sandbox
(IMPL-CAP-1)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from air.testing.cassette_model import CassetteModel
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.knowledge.pyproject_sessions import claim, run_session, use
from tests.trusted import trust_project

MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "capability_id": "lines",
    "name": "Line counter",
    "version": "1.0.0",
    "tools": [
        {
            "name": "lines.count",
            "description": "Count the lines of a file.",
            "category": "project",
            "input_schema": {
                "type": "object",
                "required": ["path"],
                "properties": {"path": {"type": "string"}},
            },
            "command": "wc -l {path}",
        }
    ],
}
BATCH = (
    "version: 1\nname: lines\ntasks:\n"
    "  - id: {task}\n    type: review\n    title: count\n"
    "    description: Count the lines of notes.txt.\n"
)


def _project(tmp: Path) -> tuple[Path, Path, Path]:
    root, home, tapes = tmp / "proj", tmp / "home", tmp / "tapes"
    (root / ".air" / "shared" / "capabilities").mkdir(parents=True)
    home.mkdir(exist_ok=True)
    tapes.mkdir()
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (root / ".gitignore").write_text(".air/local/\n")
    (root / ".air" / "shared" / "capabilities" / "lines.json").write_text(json.dumps(MANIFEST))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    verdict = {"verdict": "approved", "findings": []}
    calls = [use("c1", "lines.count", {"path": "notes.txt"}), claim("Counted.", verdict)]
    (tapes / "count.jsonl").write_text("\n".join(calls) + "\n")
    (tapes / "plain.jsonl").write_text(claim("Nothing to count.", verdict) + "\n")
    trust_project(root, home)
    return root, home, tapes


def _air(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return air_cli(
        ["capability", *args, "--project", str(root)],
        env={**os.environ, "HOME": str(home)},
        timeout=60,
    )


def _status(root: Path, home: Path, name: str) -> str:
    listed = _air(root, home, "list")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith(name + " "))
    return line.split("  ", 2)[2]


def _events(root: Path, kind: str) -> list[dict[str, Any]]:
    db = max((root / ".air" / "local" / "sessions").glob("*/session.db"), key=os.path.getmtime)
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT payload_json FROM events WHERE type = ? ORDER BY seq", (kind,))
        return [json.loads(p) for (p,) in rows]
    finally:
        conn.close()


def _session(root: Path, home: Path, tapes: Path, task: str, *extra: str) -> None:
    (root / "batch.yaml").write_text(BATCH.format(task=task))
    done, server = run_session(root, home, CassetteModel(tapes), *extra)
    assert done.returncode == 0, done.stderr
    assert [r.problem for r in server.rejected] == []


def _lines_states(root: Path) -> list[str]:
    changes = _events(root, "capability.state.changed")
    return [c["to_state"] for c in changes if c["capability_id"] == "lines"]


@pytest.mark.slow
def test_a_project_capability_is_approved_enabled_and_still_asks_for_each_call(
    tmp_path: Path,
) -> None:
    root, home, tapes = _project(tmp_path)
    assert _status(root, home, "lines").startswith("needs approval")
    assert _status(root, home, "cpp") == "enabled"
    refused = _air(root, home, "enable", "lines")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "not approved" in refused.stderr
    assert "Traceback" not in refused.stderr

    assert _air(root, home, "approve", "lines").returncode == 0
    assert _status(root, home, "lines").startswith("approved, not enabled")
    assert _air(root, home, "enable", "lines").returncode == 0
    assert _status(root, home, "lines") == "enabled"
    recorded = json.loads((home / ".air" / "capabilities.json").read_text())
    assert len(recorded["approved"]) == 1
    assert not list(root.rglob("capabilities.json"))  # nothing of it in the project

    # enabled: its tool is registered, and headless its call is asked and fails closed
    _session(root, home, tapes, "count")
    assert _lines_states(root)[-1] == "active"
    (decision,) = [
        d for d in _events(root, "permission.decision.recorded") if d["tool_name"] == "lines.count"
    ]
    assert decision["decision"]["action"] == "deny"
    assert decision["decision"]["layer"] == "6-prompt"
    assert "a capability's tool" in decision["decision"]["reason"]
    assert "headless mode cannot ask" in decision["decision"]["reason"]
    assert not _events(root, "command.started")

    # allowed by the run's permission mode: the call runs, in the sandbox, as a command
    _session(root, home, tapes, "count", "--permission-mode", "allow-ask")
    (started,) = _events(root, "command.started")
    assert started["command"] == "wc -l notes.txt"
    (done,) = _events(root, "command.completed")
    assert done["exit_code"] == 0

    # a changed manifest needs approval again: the next session does not enable it
    changed = {**MANIFEST, "version": "1.0.1"}
    (root / ".air" / "shared" / "capabilities" / "lines.json").write_text(json.dumps(changed))
    trust_project(root, home)
    assert _status(root, home, "lines").startswith("needs approval again")
    _session(root, home, tapes, "plain")
    assert "active" not in _lines_states(root)

    # disabling a built-in one is the user's choice too
    assert _air(root, home, "disable", "cpp").returncode == 0
    assert _status(root, home, "cpp") == "disabled"
    missing = _air(root, home, "approve", "nothing")
    assert missing.returncode == 2
    assert "no capability named nothing" in missing.stderr
