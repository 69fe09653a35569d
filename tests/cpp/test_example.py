"""examples/cpp-stats end to end: `air run --headless` with real workers replaying cassettes,
real git worktrees, cmake, ninja, g++, ctest and bwrap; each task's evidence comes from the
parent's records, and a worker that claims success while ctest fails ends failed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "cpp-stats"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "cpp-stats"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".air"))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the broken library")
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


def test_an_executor_that_claims_success_while_ctest_fails_ends_failed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "version: 1\nname: a false claim\n"
        "defaults: {constraints: {max_turns: 6, retry_budget: 0, hard_timeout_ms: 120000}}\n"
        "tasks:\n"
        "  - id: fix-spread\n    title: claims a fix\n    description: d\n"
        "    scope: {write_area: ['spread/spread.cpp']}\n"
    )
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    usage = {"input_tokens": 10, "output_tokens": 10}

    def use(i: str, name: str, inp: dict[str, object]) -> str:
        content = [{"type": "tool_use", "id": i, "name": name, "input": inp}]
        return json.dumps({"content": content, "stop_reason": "tool_use", "usage": usage})

    claim = {"status": "completed", "summary": "fixed", "result": {"changes_made": True}}
    text = "All good.\n```json:result\n" + json.dumps(claim) + "\n```\n"
    (cassettes / "fix-spread.jsonl").write_text(
        "\n".join(
            [
                use("t1", "fs.read", {"path": "spread/spread.cpp"}),
                use(
                    "t2",
                    "fs.edit",
                    {
                        "path": "spread/spread.cpp",
                        "old_string": "double squares = 0.0;",
                        "new_string": "double squares = 0.0;  // sum of squared deviations",
                    },
                ),
                use("t3", "cpp.build", {"source_dir": "spread", "build_dir": "build/spread"}),
                use("t4", "cpp.test", {"build_dir": "build/spread"}),
                json.dumps(
                    {
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn",
                        "usage": usage,
                    }
                ),
            ]
        )
        + "\n"
    )
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
