"""The same failure in two sessions (issue #14): the first session's debugger files its fix in
the project's DebugKnowledgeStore; the second session's debug task is told that record in the
request the model receives, and a model that reads its context finishes in fewer turns.

Real parts throughout: `air run --headless` with real workers, the real ProviderManager over
HTTP to the strict local Anthropic server, real git, cmake, ninja, g++, ctest and bwrap. The
model is scripted (``CassetteModel``) but reacts to what it is sent: a debug request that
carries the known fix goes straight to the edit; one without it reads the source first.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from air.artifacts.knowledge import DebugKnowledgeStore
from air.session.project import ProjectStore
from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply
from tests.cpp.test_example import EXAMPLE, _claim, _false_claim, _project, _use
from tests.gitrepo import git
from tests.trusted import trust_project

KEY = "zq81-debug-memory-key-3c5e7a9b1d2f4e6a8c0b"
MODELS = (
    "default: anthropic/claude-sonnet-4-5\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_E2E_KEY\n"
    "    models:\n"
    "      claude-sonnet-4-5: {{context_window: 200000, max_output_tokens: 64000}}\n"
)

DIAGNOSIS = "spread.variance expects the population variance"
FIX = {
    "path": "spread/spread.cpp",
    "old_string": "return squares / (values.size() - 1);",
    "new_string": "return squares / values.size();",
}
RESULT = {
    "diagnosis": DIAGNOSIS,
    "root_cause": "variance() divided by n - 1",
    "fixed": True,
}


def _scripts(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The batch, and the two scripts of the debug task: exploring and informed."""
    batch, executor = _false_claim(tmp_path, retry_budget=1)
    exploring = tmp_path / "exploring"
    informed = tmp_path / "informed"
    for directory in (exploring, informed):
        directory.mkdir()
        shutil.copy(executor / "fix-spread.jsonl", directory / "fix-spread.jsonl")
    build = ("cpp.build", {"source_dir": "spread", "build_dir": "build/spread"})
    test = ("cpp.test", {"build_dir": "build/spread"})
    explore = [
        _use("d1", "fs.read", {"path": "spread/spread.cpp"}),
        _use("d2", "fs.read", {"path": "spread/spread.h"}),
        _use("d3", "fs.read", {"path": "spread/spread_test.cpp"}),
        _use("d4", "fs.edit", FIX),
        _use("d5", *build),
        _use("d6", *test),
        _claim("variance divides by n", RESULT),
    ]
    known = [
        _use("k1", "fs.read", {"path": "spread/spread.cpp"}),
        _use("k2", "fs.edit", FIX),
        _use("k3", *build),
        _use("k4", *test),
        _claim("applied the known fix", RESULT),
    ]
    (exploring / "fix-spread.debug1.jsonl").write_text("\n".join(explore) + "\n")
    (informed / "fix-spread.debug1.jsonl").write_text("\n".join(known) + "\n")
    return batch, exploring, informed


class ReadsItsContext:
    """The debug task's script depends on whether its first request names the known fix."""

    def __init__(self, exploring: Path, informed: Path) -> None:
        self.exploring = CassetteModel(exploring)
        self.informed = CassetteModel(informed)
        self.debug_turns: list[str] = []

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        first = json.dumps((body.get("messages") or [{}])[0])
        if "fix-spread.debug1" not in first:
            return self.exploring(wire, body)
        told = DIAGNOSIS in first
        self.debug_turns.append("informed" if told else "exploring")
        return (self.informed if told else self.exploring)(wire, body)


def _run(
    root: Path, batch: Path, server: StrictServer, home: Path
) -> subprocess.CompletedProcess[str]:
    models = root / ".air" / "shared" / "models.yaml"
    models.parent.mkdir(parents=True, exist_ok=True)
    models.write_text(MODELS.format(url=server.url))
    trust_project(root, home)
    env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
    return subprocess.run(
        [sys.executable, "-m", "air.cli", "run", "--headless", str(batch), "--project", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _debug_records(root: Path) -> list[Any]:
    store = DebugKnowledgeStore.open(ProjectStore().initialize(root))
    try:
        return store.lookup_by_signature("ctest:spread.variance")
    finally:
        store.close()


def _sessions(root: Path) -> list[sqlite3.Connection]:
    dbs = sorted((root / ".air" / "local" / "sessions").glob("*/session.db"))
    return [sqlite3.connect(db) for db in dbs]


@pytest.mark.slow
def test_the_second_sessions_debugger_is_told_the_first_fix_and_needs_fewer_turns(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    batch, exploring, informed = _scripts(tmp_path)
    model = ReadsItsContext(exploring, informed)
    with StrictServer(api_key=KEY, model=model) as server:
        first = _run(root, batch, server, home)
        assert first.returncode == 0, first.stderr
        (record,) = _debug_records(root)
        assert record.diagnosis == DIAGNOSIS
        assert record.fixed
        # the same defect again, in a new session
        shutil.copy(EXAMPLE / "spread" / "spread.cpp", root / "spread" / "spread.cpp")
        git(root, "commit", "-qam", "the variance bug is back")
        second = _run(root, batch, server, home)
        assert second.returncode == 0, second.stderr
        rejected = list(server.rejected)
    assert rejected == [], [r.problem for r in rejected]
    first_turns = model.debug_turns.count("exploring")
    second_turns = model.debug_turns.count("informed")
    assert model.debug_turns == ["exploring"] * first_turns + ["informed"] * second_turns
    assert (first_turns, second_turns) == (7, 5)
    # the parent saw the same difference: the tool calls it ran for each debug task
    one, two = _sessions(root)
    tools = [
        [
            name
            for (name,) in conn.execute(
                "SELECT json_extract(payload_json, '$.tool_name') FROM events "
                "WHERE type = 'tool.started' AND json_extract(payload_json, '$.task_id') = ? "
                "ORDER BY seq",
                ("fix-spread.debug1",),
            )
        ]
        for conn in (one, two)
    ]
    assert tools == [
        ["fs.read", "fs.read", "fs.read", "fs.edit", "cpp.build", "cpp.test"],
        ["fs.read", "fs.edit", "cpp.build", "cpp.test"],
    ]
    # the second debug task's spec names the first session's record
    (spec,) = two.execute(
        "SELECT json_extract(payload_json, '$.task_spec.description') FROM events "
        "WHERE type = 'task.created' AND json_extract(payload_json, '$.task_spec.id') = ?",
        ("fix-spread.debug1",),
    ).fetchone()
    assert DIAGNOSIS in spec
    assert len(_debug_records(root)) == 2  # one record per session's fix, none duplicated
