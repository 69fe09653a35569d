"""Issue #25 item 10 through the real CLI: the architecture gate updates what it guards.

Run 1 is the console (``--plain``, real workers, cassettes): a task changes a declared contract,
the ArchitectureDesigner says ``requires_user_confirmation``, the person answers ``once``; air
appends the change to docs/architecture.md through ``fs.write`` (its diff kept as an artifact)
and records ``architecture.plan.updated`` with the diff. Run 2 is headless, where nobody can
confirm: the same change (the same task again after the contract was reset) is not held —
no review call, no prompt, the task completes (IMPL-ARCH-5).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import git
from tests.knowledge.pyproject_sessions import claim, use
from tests.trusted import trust_project

DECLARATION = "docs: [docs/architecture.md]\nareas:\n  contracts: ['src/contracts/**']\n"
TASK = {
    "id": "bump",
    "type": "execute",
    "title": "Bump the API version",
    "description": "Set VERSION in src/contracts/api.py to 2.",
    "scope": {"write_area": ["src/contracts/api.py"]},
    "constraints": {"max_turns": 6, "hard_timeout_ms": 120000},
}
VERDICT = {"result_class": "requires_user_confirmation", "summary": "API version 2 for clients"}
_USAGE = {"input_tokens": 10, "output_tokens": 10}


def _text(text: str) -> str:
    content = [{"type": "text", "text": text}]
    return json.dumps({"content": content, "stop_reason": "end_turn", "usage": _USAGE})


def _project(tmp: Path) -> tuple[Path, Path]:
    root, home = tmp / "proj", tmp / "home"
    (root / "src" / "contracts").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir(exist_ok=True)
    (root / "src" / "contracts" / "api.py").write_text("VERSION = 1\n")
    (root / "docs" / "architecture.md").write_text("# Architecture\n\nThe API is versioned.\n")
    (root / ".air" / "shared" / "architecture.yaml").write_text(DECLARATION)
    (root / ".gitignore").write_text(".air/local/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "version 1")
    trust_project(root, home)
    return root, home


def _tapes(directory: Path, *, main: bool) -> Path:
    directory.mkdir()
    work = [
        use("b1", "fs.read", {"path": "src/contracts/api.py"}),
        use("b2", "fs.write", {"path": "src/contracts/api.py", "content": "VERSION = 2\n"}),
        claim("VERSION is 2.", {"changes_made": True}),
    ]
    (directory / "bump.jsonl").write_text("\n".join(work) + "\n")
    (directory / "architecture_designer.jsonl").write_text(_text(json.dumps(VERDICT)) + "\n")
    if main:
        plan = {"summary": "Bump the API version.", "needs_plan": False, "tasks": [TASK]}
        turns = [_text('{"intent": "task"}'), _text(json.dumps(plan))]
        (directory / "main.jsonl").write_text("\n".join(turns) + "\n")
    return directory


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, "HOME": str(home)}


def _air(*args: str) -> list[str]:
    return [sys.executable, "-m", "air.cli", *args]


def _events(root: Path, kind: str) -> list[dict[str, Any]]:
    db = max((root / ".air" / "local" / "sessions").glob("*/session.db"), key=os.path.getmtime)
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT payload_json FROM events WHERE type = ? ORDER BY seq", (kind,))
        return [json.loads(p) for (p,) in rows]
    finally:
        conn.close()


def _console_confirms(root: Path, home: Path, tapes: Path) -> str:
    proc = subprocess.Popen(
        _air("run", str(root), "--plain", "--cassette", str(tapes)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(home),
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    seen: list[str] = []

    def wait_line(text: str) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"never printed {text!r}: {''.join(seen)}")

    try:
        proc.stdin.write("bump the API version\n")
        proc.stdin.flush()
        wait_line("answer with one of:")
        time.sleep(0.8)  # past the prompt guard
        proc.stdin.write("once\n")
        proc.stdin.flush()
        wait_line("air> Run completed.")
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0, "".join(seen)
    finally:
        proc.kill()
    return "".join(seen)


@pytest.mark.slow
def test_a_confirmed_change_updates_the_architecture_document_and_is_not_held_again(
    tmp_path: Path,
) -> None:
    root, home = _project(tmp_path)
    out = _console_confirms(root, home, _tapes(tmp_path / "one", main=True))
    assert "architecture.confirm" in out
    assert "recorded the confirmed architecture change in docs/architecture.md" in out
    assert "+## Confirmed architecture changes" in out  # the diff, in the console
    doc = (root / "docs" / "architecture.md").read_text()
    assert "## Confirmed architecture changes" in doc
    assert "API version 2 for clients" in doc
    assert "contracts: src/contracts/api.py" in doc
    (updated,) = _events(root, "architecture.plan.updated")
    assert updated["plan_ref"] == "docs/architecture.md"
    assert "+## Confirmed architecture changes" in updated["summary"]
    diffs = {a["artifact_id"]: a for a in _events(root, "artifact.created") if a["type"] == "diff"}
    (diff_id,) = [a for a in updated["artifact_ids"] if a in diffs]
    assert "+## Confirmed architecture changes" in Path(diffs[diff_id]["path"]).read_text()
    assert (root / "src" / "contracts" / "api.py").read_text() == "VERSION = 2\n"

    # the contract goes back to version 1; the same task runs again, headless
    (root / "src" / "contracts" / "api.py").write_text("VERSION = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "back to version 1, architecture doc kept")
    tapes = _tapes(tmp_path / "two", main=False)
    (root / "batch.yaml").write_text(json.dumps({"version": 1, "tasks": [TASK]}))
    done = subprocess.run(
        _air("run", "--headless", "batch.yaml", "--cassette", str(tapes)),
        cwd=root,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert _events(root, "architecture.impact.completed") == []  # no review call
    assert _events(root, "permission.prompt.requested") == []
    (completed,) = _events(root, "task.completed")
    assert completed["task_id"] == "bump"
    assert (root / "src" / "contracts" / "api.py").read_text() == "VERSION = 2\n"


def test_the_console_s_designer_reads_no_protected_file_through_a_declared_document(
    tmp_path: Path,
) -> None:
    """The Main Agent's architect (the plan path, in the console) gets the runtime's document
    check too: a declared document linked to ``.env`` is named, left out, never sent."""
    from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse

    systems: list[str] = []
    main_turns = [
        '{"intent": "task"}',
        json.dumps({"summary": "Bump the API.", "needs_plan": True, "tasks": [TASK]}),
    ]

    def model(wire: str, body: dict[str, Any]) -> Reply:
        system = json.dumps(body.get("system"))
        if "result_class" in system:
            systems.append(system)
            verdict = {"result_class": "reject_or_escalate", "summary": "VERDICT-REJECTED"}
            return Reply(chunks=anthropic_sse(Turn(text=[json.dumps(verdict)])))
        return Reply(chunks=anthropic_sse(Turn(text=[main_turns.pop(0)])))

    root, home = tmp_path / "proj", tmp_path / "home"
    (root / "docs" / "design").mkdir(parents=True)
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / "docs" / "design" / "c4.md").write_text("# C4 context\n")
    (root / "docs" / "design" / "env.md").symlink_to("../../.env")
    (root / ".env").write_text("API_TOKEN=planted-c0ffee\n")
    (root / ".gitignore").write_text(".air/local/\n.env\n")
    with LocalServer(model=model) as server:
        (root / ".air" / "shared" / "architecture.yaml").write_text(
            "docs: [docs/design]\nareas:\n  contracts: ['src/contracts/**']\n"
        )
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/claude-test\nproviders:\n  local:\n    kind: anthropic\n"
            f"    base_url: {server.url}\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
            "      claude-test: {context_window: 32768, max_output_tokens: 4096}\n"
        )
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "design docs")
        trust_project(root, home)
        done = subprocess.run(
            _air("run", str(root), "--plain"),
            input="bump the API version\n",
            env={**_env(home), "AIR_TEST_PROVIDER_KEY": "k-test"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VERDICT-REJECTED" in done.stdout
    [system] = systems
    assert "# C4 context" in system
    assert "## docs/design/env.md\\n(left out: it leads to a protected file" in system
    assert "planted-c0ffee" not in system
