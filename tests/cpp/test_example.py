"""examples/cpp-stats end to end: `air run --headless` with real workers replaying cassettes,
real git worktrees, cmake, ninja, g++, ctest and bwrap; each task's evidence comes from the
parent's records, and a worker that claims success while ctest fails ends failed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from air.artifacts.knowledge import DebugKnowledgeStore
from air.contracts.artifact_records import DebugRecord
from air.session.project import ProjectStore
from tests.gitrepo import git

EXAMPLE = Path(__file__).parents[2] / "examples" / "cpp-stats"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "cpp-stats"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".air"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the broken library")
    return root


def _air(root: Path, batch: Path, cassettes: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "air.cli",
            "run",
            "--headless",
            str(batch),
            "--project",
            str(root),
            "--cassette",
            str(cassettes),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _bare_ctest(root: Path, build: Path) -> int:
    subprocess.run(
        ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja"],
        check=True,
        capture_output=True,
    )
    if subprocess.run(["cmake", "--build", str(build)], capture_output=True).returncode != 0:
        return -1
    return subprocess.run(
        ["ctest", "--test-dir", str(build), "--no-tests=error"], capture_output=True
    ).returncode


def _db(root: Path) -> sqlite3.Connection:
    (db,) = (root / ".air" / "local" / "sessions").glob("*/session.db")
    return sqlite3.connect(db)


@pytest.mark.slow
def test_example_batch_repairs_the_library_with_build_and_test_evidence(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _bare_ctest(root, tmp_path / "before") != 0
    proc = _air(root, root / "batch.yaml", root / "cassettes")
    assert proc.returncode == 0, proc.stderr
    assert "completed: done 3/3" in proc.stderr
    assert "waves 2" in proc.stderr  # the two fixes ran in parallel, check-all after
    assert _bare_ctest(root, tmp_path / "after") == 0
    conn = _db(root)
    exits = dict(conn.execute("SELECT id, exit_code FROM command_runs"))
    for task in ("fix-summary", "fix-spread", "check-all"):
        rows = conn.execute(
            "SELECT kind, location_json FROM evidence_refs WHERE entity_type = 'task' "
            "AND entity_id = ?",
            (task,),
        ).fetchall()
        kinds = {kind: json.loads(loc) for kind, loc in rows}
        assert {"build_output", "test_output"} <= set(kinds), (task, rows)
        for kind in ("build_output", "test_output"):
            assert kinds[kind]["ok"] is True
            assert exits[kinds[kind]["command_run_id"]] == 0
        assert kinds["test_output"]["filtered"] is False
        assert kinds["test_output"]["passed"] >= 2
    # the compiler error that guided fix-summary was parsed and stored
    (sig,) = conn.execute(
        "SELECT DISTINCT semantic_signature FROM diagnostics WHERE file = 'summary/summary.cpp' "
        "AND severity = 'error'"
    ).fetchall()
    assert sig[0].startswith("cppdiag1:")


_USAGE = {"input_tokens": 10, "output_tokens": 10}


def _use(i: str, name: str, inp: Mapping[str, object]) -> str:
    content = [{"type": "tool_use", "id": i, "name": name, "input": inp}]
    return json.dumps({"content": content, "stop_reason": "tool_use", "usage": _USAGE})


def _claim(summary: str, result: dict[str, object]) -> str:
    block = {"status": "completed", "summary": summary, "result": result}
    text = f"{summary}\n```json:result\n{json.dumps(block)}\n```\n"
    content = [{"type": "text", "text": text}]
    return json.dumps({"content": content, "stop_reason": "end_turn", "usage": _USAGE})


def _false_claim(tmp_path: Path, retry_budget: int) -> tuple[Path, Path]:
    """A batch whose fix-spread edits a comment, sees ctest fail and claims success anyway."""
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "version: 1\nname: a false claim\ndefaults: {constraints: "
        f"{{max_turns: 8, retry_budget: {retry_budget}, hard_timeout_ms: 120000}}}}\n"
        "tasks:\n"
        "  - id: fix-spread\n    title: claims a fix\n    description: d\n"
        "    scope: {write_area: ['spread/spread.cpp']}\n"
    )
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    comment = {
        "path": "spread/spread.cpp",
        "old_string": "double squares = 0.0;",
        "new_string": "double squares = 0.0;  // sum of squared deviations",
    }
    turns = [
        _use("t1", "fs.read", {"path": "spread/spread.cpp"}),
        _use("t2", "fs.edit", comment),
        _use("t3", "cpp.build", {"source_dir": "spread", "build_dir": "build/spread"}),
        _use("t4", "cpp.test", {"build_dir": "build/spread"}),
        _claim("All good.", {"changes_made": True}),
    ]
    (cassettes / "fix-spread.jsonl").write_text("\n".join(turns) + "\n")
    return batch, cassettes


@pytest.mark.slow
def test_an_executor_that_claims_success_while_ctest_fails_ends_failed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    batch, cassettes = _false_claim(tmp_path, retry_budget=0)
    proc = _air(root, batch, cassettes)
    assert proc.returncode != 0, proc.stderr
    conn = _db(root)
    (status,) = conn.execute("SELECT status FROM tasks WHERE id = 'fix-spread'").fetchone()
    assert status == "failed", proc.stderr
    (payload,) = conn.execute(
        "SELECT payload_json FROM events WHERE type = 'task.failed'"
    ).fetchone()
    error = json.loads(payload)["error"]
    assert error["kind"] == "verification_failed"
    assert error["metadata"]["cpp_failure"] == "test_failure"
    assert error["semantic_signature"] == "ctest:spread.variance"
    assert not conn.execute(
        "SELECT 1 FROM evidence_refs WHERE entity_type = 'task' AND kind = 'test_output'"
    ).fetchall()


@pytest.mark.slow
def test_a_ctest_failure_routes_to_a_debugger_and_its_fix_is_remembered(tmp_path: Path) -> None:
    root = _project(tmp_path)
    project = ProjectStore().initialize(root)
    store = DebugKnowledgeStore.open(project)
    now = "2026-01-01T00:00:00.000Z"
    store.insert(
        DebugRecord(
            debug_record_id="dbg_old",
            failure_signature="ctest:spread.variance",
            diagnosis="an earlier session saw variance off by n/(n-1)",
            fixed=True,
            created_at=now,
            updated_at=now,
        )
    )
    store.close()
    batch, cassettes = _false_claim(tmp_path, retry_budget=1)
    fix = {
        "path": "spread/spread.cpp",
        "old_string": "return squares / (values.size() - 1);",
        "new_string": "return squares / values.size();",
    }
    debugger = [
        _use("d1", "fs.read", {"path": "spread/spread.cpp"}),
        _use("d2", "fs.edit", fix),
        _use("d3", "cpp.build", {"source_dir": "spread", "build_dir": "build/spread"}),
        _use("d4", "cpp.test", {"build_dir": "build/spread"}),
        _claim(
            "variance divides by n",
            {
                "diagnosis": "spread.variance expects the population variance",
                "root_cause": "variance() divided by n - 1",
                "fixed": True,
                "failure_signature": "ctest:spread.variance",
            },
        ),
    ]
    (cassettes / "fix-spread.debug1.jsonl").write_text("\n".join(debugger) + "\n")
    proc = _air(root, batch, cassettes)
    assert proc.returncode == 0, proc.stderr
    assert _bare_ctest(root / "spread", tmp_path / "after") == 0
    conn = _db(root)
    statuses = dict(conn.execute("SELECT id, status FROM tasks"))
    assert statuses == {"fix-spread": "completed", "fix-spread.debug1": "completed"}
    created = [
        json.loads(p)
        for (p,) in conn.execute("SELECT payload_json FROM events WHERE type = 'task.created'")
    ]
    debug_spec = next(c["task_spec"] for c in created if c["task_spec"]["id"].endswith("debug1"))
    assert "Failing tests: spread.variance." in debug_spec["description"]
    assert "an earlier session saw variance off by n/(n-1)" in debug_spec["description"]
    (payload,) = conn.execute(
        "SELECT payload_json FROM events WHERE type = 'debug.record.created'"
    ).fetchone()
    event = json.loads(payload)
    store = DebugKnowledgeStore.open(project)
    records = store.lookup_by_signature("ctest:spread.variance")
    store.close()
    new = [r for r in records if r.debug_record_id == event["debug_record_id"]]
    assert len(new) == 1
    assert new[0].fixed
    assert new[0].task_id == "fix-spread"
    assert new[0].root_cause == "variance() divided by n - 1"
