"""Review verdicts decide (issue #14 item 1, IMPL-REVIEW-1): over a real session DB and virtual
time, a dependent of a reviewed change waits for the review; ``approved`` lets it run,
``changes_requested`` creates a repair task carrying the findings (reviewed again, at most
``MAX_REVIEW_ROUNDS`` times), ``blocked`` blocks with the reviewer's reason. The end-to-end run
with real workers and a model server is ``test_changes_requested_then_approved_end_to_end``."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.task import (
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    WorkspacePlan,
    WorkspaceRef,
    WorkspaceStrategy,
)
from air.nursery.ledger import fold_history
from air.nursery.reviews import MAX_REVIEW_ROUNDS, change_diff
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.security.redact import SecretRedactor
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.workspace.file_diff import INLINE_LINES
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git
from tests.headless import json_events, run_batch_json
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.nursery.conftest import SessionDB
from tests.trusted import trust_project

CHANGES = {"verdict": "changes_requested", "findings": ["FINDING-7c1: the note has no title"]}
APPROVED = {"verdict": "approved", "findings": []}


def _spec(tid: str, *, deps: tuple[str, ...] = (), area: list[str] | None = None) -> TaskSpec:
    return TaskSpec(
        id=tid,
        type="execute",
        title=tid,
        description=f"do {tid}",
        scope=TaskScope(write_area=area),
        dependencies=[TaskDependencySpec(depends_on_task_id=d) for d in deps],
    )


def _statuses(sdb: SessionDB) -> dict[str, str]:
    return {t: s.status.value for t, s in fold_history(sdb.ledger.history()).tasks.items()}


async def _run(sdb: SessionDB, script: dict[str, list[FakeStep]]) -> FakeTaskRunner:
    runner = FakeTaskRunner(script)
    sched = Scheduler(
        sdb.ledger, runner, project_root="/x", options=SchedulerOptions(4, review="wave")
    )
    await sched.create_tasks([_spec("write", area=["notes"]), _spec("publish", deps=("write",))])
    await sched.run_until_idle()
    return runner


async def test_approved_review_gates_the_dependent(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = await _run(session_db, {"write.review": [FakeStep(5, result=APPROVED)]})
    runs = {r.task_id: r for r in runner.log.records}
    review_end = runs["write.review"].ended_at
    assert review_end is not None
    assert runs["publish"].started_at >= review_end  # waited for the verdict
    assert _statuses(session_db)["publish"] == "completed"
    edges = [
        e.payload
        for e in session_db.ledger.history()
        if e.type == "task.dependency.added" and e.payload["task_id"] == "publish"
    ]
    assert [e["depends_on_task_id"] for e in edges] == ["write.review"]  # durable


async def test_changes_requested_creates_a_repair_with_the_findings(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = await _run(
        session_db,
        {
            "write.review": [FakeStep(1, result=CHANGES)],
            "write.repair1.review": [FakeStep(1, result=APPROVED)],
        },
    )
    order = [r.task_id for r in runner.log.records]
    assert order[:4] == ["write", "write.review", "write.repair1", "write.repair1.review"]
    assert order.index("publish") > order.index("write.repair1.review")
    folded = fold_history(session_db.ledger.history())
    repair = folded.tasks["write.repair1"]
    assert repair.parent_task_id == "write"
    assert "FINDING-7c1: the note has no title" in repair.spec.description
    assert repair.spec.scope.write_area == ["notes"]
    assert set(_statuses(session_db).values()) == {"completed"}


async def test_blocked_verdict_blocks_with_the_reviewers_reason(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    blocked = {"verdict": "blocked", "findings": ["REASON-4b2: the spec contradicts itself"]}
    runner = await _run(session_db, {"write.review": [FakeStep(1, result=blocked)]})
    assert "publish" not in [r.task_id for r in runner.log.records]
    events = session_db.ledger.history()
    reasons = {
        e.payload["task_id"]: e.payload["reason"] for e in events if e.type == "task.blocked"
    }
    assert "REASON-4b2" in reasons["write.review"]
    assert "write.review" in reasons["publish"]
    assert _statuses(session_db)["write"] == "completed"


async def test_review_rounds_are_bounded(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    reviews = [f"write{'.repair' + str(n) if n else ''}.review" for n in range(3)]
    runner = await _run(session_db, {r: [FakeStep(1, result=CHANGES)] for r in reviews})
    statuses = _statuses(session_db)
    assert f"write.repair{MAX_REVIEW_ROUNDS}" in statuses
    assert f"write.repair{MAX_REVIEW_ROUNDS + 1}" not in statuses
    assert statuses[reviews[-1]] == "blocked"
    assert statuses["publish"] == "blocked"
    assert "publish" not in [r.task_id for r in runner.log.records]


def _git_project(root: Path) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / "notes.txt").write_text("draft\n")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")


async def _diff_for_review(
    manager: WorkspaceManager, root: Path, ref: WorkspaceRef, redactor: SecretRedactor
) -> str | None:
    """``change_diff`` of ``ref`` with the ports it reads: the workspaces, the project, the
    run's redactor."""
    runner = SimpleNamespace(redactor=redactor)
    ports = SimpleNamespace(workspaces=manager, project_root=str(root), runner=runner)
    return await change_diff(ports, ref)  # type: ignore[arg-type]


async def test_the_diff_is_read_by_the_parent_without_following_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's symlink to a file outside its workspace is named in the diff, never read; a
    registered secret a worker wrote into a file is redacted; a long file's diff is git's, not
    difflib's (quadratic: 23 s for this one; IMPL-DIFF-1)."""
    root = tmp_path / "proj"
    _git_project(root)
    (root / "zz-data.txt").write_text("".join(f"line {i}\n" for i in range(20_000)))
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "data")
    real_unified_diff = difflib.unified_diff

    def short_only(a: list[str], b: list[str], *args: Any, **kwargs: Any) -> Iterator[str]:
        assert len(a) + len(b) <= INLINE_LINES, "difflib was asked to diff a long file"
        return real_unified_diff(a, b, *args, **kwargs)

    monkeypatch.setattr(difflib, "unified_diff", short_only)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-MATERIAL-1f0\n")
    records: list[tuple[str, dict[str, Any]]] = []

    async def record(type: str, payload: dict[str, Any]) -> None:
        records.append((type, payload))

    manager = WorkspaceManager(str(root), record)
    ref: WorkspaceRef = await manager.create_workspace(
        WorkspacePlan(task_id="t", strategy=WorkspaceStrategy.WORKTREE)
    )
    (Path(ref.path) / "notes.txt").write_text("# Title\ndraft\n")
    (Path(ref.path) / "more.txt").write_text("x\n")
    (Path(ref.path) / "more.txt").unlink()
    os.symlink(secret, Path(ref.path) / "more.txt")

    (Path(ref.path) / "env.txt").write_text("token=VALUE-OF-A-SECRET-9q\n")
    (Path(ref.path) / "zz-data.txt").write_text(
        "".join(f"line {i}\n" if i % 2 else f"changed {i}\n" for i in range(20_000))
    )

    diff = await _diff_for_review(manager, root, ref, SecretRedactor(["VALUE-OF-A-SECRET-9q"]))
    assert diff is not None
    assert "+token=" in diff
    assert "VALUE-OF-A-SECRET-9q" not in diff  # the run's redactor applies
    assert "+# Title" in diff
    assert " draft" in diff
    assert "more.txt: changed (not a readable regular file)" in diff
    assert "SECRET-MATERIAL" not in diff
    assert "--- a/zz-data.txt\n+++ b/zz-data.txt\n@@ -1," in diff  # cut at MAX_DIFF_CHARS


async def test_a_reviewed_change_inside_a_key_block_shows_no_key_line(tmp_path: Path) -> None:
    """A task changed a key inside a config's private key block: the review's diff showed the
    hunk's key lines, without the BEGIN line the redactor needs (and git's function line in
    the hunk header is one of them)."""
    root = tmp_path / "proj"
    _git_project(root)
    key = [f"MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64x{i:03d}Z" for i in range(9)]
    block = "\n".join(["-----BEGIN PRIVATE KEY-----", *key, "-----END PRIVATE KEY-----"])
    (root / "app.yaml").write_text(f"name: app\ntls: |\n{block}\nport: 80\n")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "conf")

    async def record(type: str, payload: dict[str, Any]) -> None:
        return None

    manager = WorkspaceManager(str(root), record)
    ref: WorkspaceRef = await manager.create_workspace(
        WorkspacePlan(task_id="t", strategy=WorkspaceStrategy.WORKTREE)
    )
    conf = Path(ref.path) / "app.yaml"
    conf.write_text(conf.read_text().replace(key[5], key[5].replace("Z", "Y")))

    diff = await _diff_for_review(manager, root, ref, SecretRedactor())
    assert diff is not None
    assert "@@" in diff
    assert "key0material" not in diff, diff


def _final(result: dict[str, Any], summary: str) -> str:
    block = json.dumps({"status": "completed", "summary": summary, "result": result})
    return f"Done.\n```json:result\n{block}\n```\n"


def _project(root: Path, home: Path, server: LocalServer) -> None:
    _git_project(root)
    home.mkdir()
    (root / ".air" / "shared").mkdir(parents=True)
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n"
        "  - id: write-note\n    title: Write the note\n"
        "    description: Put WRITE-9d2 at the top of notes.txt.\n"
        "    scope: {write_area: [notes.txt]}\n"
        "  - id: publish\n    title: Publish the note\n"
        "    description: PUBLISH-2aa say that notes.txt is published.\n"
        "    depends_on: [write-note]\n    scope: {write_area: []}\n"
    )
    (root / ".air" / "shared" / "models.yaml").write_text(
        f"default: local/claude-test\nproviders:\n  local:\n    kind: anthropic\n"
        f"    base_url: {server.url}\n    auth_ref: AIR_TEST_PROVIDER_KEY\n    models:\n"
        "      claude-test: {context_window: 32768, max_output_tokens: 4096}\n"
    )
    trust_project(root, home)


def _has_tool_result(body: dict[str, Any]) -> bool:
    last = (body.get("messages") or [{}])[-1]
    content = last.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def _write_tool(body: dict[str, Any]) -> str:
    for tool in body.get("tools") or []:
        if "write" in str(tool.get("name")) and "fs" in str(tool.get("name")):
            return str(tool["name"])
    raise AssertionError("no fs.write tool offered")


def test_changes_requested_then_approved_end_to_end(tmp_path: Path) -> None:
    """``air run --headless --review`` with real workers: the reviewer of ``write-note`` gets
    the diff and asks for changes; the repair task's request holds the findings; its review
    approves; only then does ``publish`` run."""
    root, home = tmp_path / "proj", tmp_path / "home"
    seen: list[str] = []

    def model(wire: str, body: dict[str, Any]) -> Reply:
        text = json.dumps(body)
        system = json.dumps(body.get("system"))
        if "# Role: reviewer" in system:
            if "Review: Repair (1)" in text:
                seen.append("repair-review")
                return Reply(chunks=anthropic_sse(Turn(text=[_final(APPROVED, "ok now")])))
            if "PUBLISH-2aa" in text:
                seen.append("publish-review")
                return Reply(chunks=anthropic_sse(Turn(text=[_final(APPROVED, "fine")])))
            seen.append("review")
            return Reply(chunks=anthropic_sse(Turn(text=[_final(CHANGES, "needs a title")])))
        if "PUBLISH-2aa" in text:
            seen.append("publish")
            done = _final({"changes_made": False}, "published")
            return Reply(chunks=anthropic_sse(Turn(text=[done])))
        repair = "Repair (1)" in text
        if _has_tool_result(body):
            seen.append("repair-done" if repair else "write-done")
            done = _final({"changes_made": True}, "written")
            return Reply(chunks=anthropic_sse(Turn(text=[done])))
        seen.append("repair" if repair else "write")
        content = "# Title\nWRITE-9d2\n" if repair else "WRITE-9d2\ndraft\n"
        args = json.dumps({"path": "notes.txt", "content": content})
        call = Turn(tool=(f"toolu_{len(seen)}", _write_tool(body), [args]), stop="tool_use")
        return Reply(chunks=anthropic_sse(call))

    with LocalServer(model=model) as server:
        _project(root, home, server)
        env = {**os.environ, "HOME": str(home), "AIR_TEST_PROVIDER_KEY": "k-test"}
        proc = run_batch_json(root, env, "--review", timeout=240)
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen == [
        "write",
        "write-done",
        "review",
        "repair",
        "repair-done",
        "repair-review",
        "publish",
        "publish-review",
    ]
    bodies = [json.dumps(r.body) for r in requests]
    review, repair = bodies[2], bodies[3]
    assert "--- a/notes.txt" in review
    assert "+WRITE-9d2" in review
    assert "FINDING-7c1: the note has no title" in repair  # the findings, in the repair's context
    assert "FINDING-7c1" not in bodies[0]
    assert (root / "notes.txt").read_text() == "# Title\nWRITE-9d2\n"
    events = json_events(proc.stdout)
    done = [e["payload"]["task_id"] for e in events if e["type"] == "task.completed"]
    assert done.index("publish") > done.index("write-note.repair1.review")
    created = {
        e["payload"]["task_spec"]["id"]: e["payload"] for e in events if e["type"] == "task.created"
    }
    assert created["write-note.repair1"].get("parent_task_id") == "write-note"
