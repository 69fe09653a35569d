"""fs tools through the registry: read-before-edit, exact edits, patches, diff artifacts."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest
import trio

from air.contracts.tool_runs import ToolResultEnvelope
from tests.tools.conftest import Env, assert_payloads_valid


async def test_read_then_edit_records_events_and_a_diff(env: Env) -> None:
    ctx = env.ctx()
    read = await env.registry.call("fs.read", {"path": "src/app.py"}, ctx)
    assert read.status == "ok"
    edit = await env.registry.call(
        "fs.edit", {"path": "src/app.py", "old_string": "hello", "new_string": "world"}, ctx
    )
    assert edit.status == "ok", edit.error
    assert (env.root / "src" / "app.py").read_text() == "print('world')\n"
    assert len(edit.artifacts) == 1
    diff = env.session.artifacts.read(edit.artifacts[0].artifact_id)
    assert b"+print('world')" in diff.content
    types = env.types()
    assert types.count("tool.started") == 2
    assert types.count("tool.completed") == 2
    assert "permission.decision.recorded" in types
    runs = {r["id"]: r for r in env.rows("tool_runs")}
    assert runs[read.tool_run_id]["status"] == "ok"
    assert runs[edit.tool_run_id]["status"] == "ok"
    assert runs[edit.tool_run_id]["tool_name"] == "fs.edit"
    artifacts = env.rows("artifacts")
    assert [a["artifact_id"] for a in artifacts] == [edit.artifacts[0].artifact_id]
    assert artifacts[0]["tool_run_id"] == edit.tool_run_id
    assert_payloads_valid(env.events())


async def test_edit_without_read_fails_and_sha_works(env: Env) -> None:
    ctx = env.ctx()
    res = await env.registry.call(
        "fs.edit", {"path": "src/app.py", "old_string": "hello", "new_string": "x"}, ctx
    )
    assert res.status == "error"
    assert res.error is not None
    assert "fs.read" in (res.error.user_action or "")
    sha = hashlib.sha256((env.root / "src" / "app.py").read_bytes()).hexdigest()
    ok = await env.registry.call(
        "fs.edit",
        {
            "path": "src/app.py",
            "old_string": "hello",
            "new_string": "x",
            "expected_existing_sha256": sha,
        },
        ctx,
    )
    assert ok.status == "ok"
    assert "tool.failed" in env.types()
    statuses = {r["id"]: r["status"] for r in env.rows("tool_runs")}
    assert statuses == {res.tool_run_id: "error", ok.tool_run_id: "ok"}


async def test_edit_needs_unique_match(env: Env) -> None:
    ctx = env.ctx()
    (env.root / "src" / "d.py").write_text("a\na\n")
    await env.registry.call("fs.read", {"path": "src/d.py"}, ctx)
    dup = await env.registry.call(
        "fs.edit", {"path": "src/d.py", "old_string": "a", "new_string": "b"}, ctx
    )
    assert dup.status == "error"
    allr = await env.registry.call(
        "fs.edit",
        {"path": "src/d.py", "old_string": "a", "new_string": "b", "replace_all": True},
        ctx,
    )
    assert allr.status == "ok"
    assert (env.root / "src" / "d.py").read_text() == "b\nb\n"


async def test_patch_is_atomic_and_saves_rejects(env: Env) -> None:
    ctx = env.ctx()
    (env.root / "src" / "b.py").write_text("one\ntwo\n")
    patch = (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('hello')\n+print('patched')\n"
        "--- a/src/b.py\n+++ b/src/b.py\n@@ -1,2 +1,2 @@\n one\n-three\n+four\n"
    )
    res = await env.registry.call("fs.patch", {"patch": patch}, ctx)
    assert res.status == "error"
    assert (env.root / "src" / "app.py").read_text() == "print('hello')\n"
    assert any(a.path.endswith(".rej") for a in res.artifacts)
    partial = await env.registry.call("fs.patch", {"patch": patch, "allow_partial": True}, ctx)
    assert partial.status == "ok"
    assert (env.root / "src" / "app.py").read_text() == "print('patched')\n"
    assert (env.root / "src" / "b.py").read_text() == "one\ntwo\n"


async def test_invalid_input_and_unknown_tool(env: Env) -> None:
    bad = await env.registry.call("fs.read", {"path": 3}, env.ctx())
    assert isinstance(bad, ToolResultEnvelope)
    assert bad.status == "error"
    assert bad.error is not None
    assert bad.error.kind == "validation_error"
    unknown = await env.registry.call("fs.nope", {}, env.ctx())
    assert unknown.error is not None
    assert unknown.error.kind == "tool_error"


async def test_reviewer_cannot_write(env: Env) -> None:
    res = await env.registry.call(
        "fs.write", {"path": "src/n.py", "content": "x"}, env.ctx(permission_template="reviewer")
    )
    assert res.status == "denied"
    assert not (env.root / "src" / "n.py").exists()


async def test_an_fs_write_of_a_long_file_leaves_the_loop_running(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its diff is made while other tasks run (git's, in a subprocess), not by difflib on the
    Trio thread, which held every task for the whole diff: 23 s for this file (IMPL-DIFF-1)."""
    old = "".join(f"line {i}\n" for i in range(20_000))
    new = "".join(f"line {i}\n" if i % 2 else f"changed {i}\n" for i in range(20_000))
    (env.root / "big.txt").write_text(old)
    await env.registry.call("fs.read", {"path": "big.txt"}, env.ctx())
    scratch = tmp_path / "scratch"  # where the diff's sides are written, this test's alone
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    during = 0

    async def ticker() -> None:
        nonlocal during
        while True:
            await trio.sleep(0.005)
            during += any(scratch.iterdir())  # the diff is being made now

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        res = await env.registry.call("fs.write", {"path": "big.txt", "content": new}, env.ctx())
        nursery.cancel_scope.cancel()
    assert during >= 1  # another task ran while the diff was made
    assert res.status == "ok", res.error
    assert (env.root / "big.txt").read_text() == new
    assert isinstance(res.output, dict)
    diff_id = res.output["diff_artifact_id"]
    stored = [a for a in env.payloads("artifact.created") if a["artifact_id"] == diff_id]
    assert stored
    assert stored[0]["size_bytes"] > 20_000 * 8  # the whole diff, kept
    assert list(scratch.iterdir()) == []  # and its sides removed
