"""The ask_user prompt flow, headless fail-closed, the read-only tools, and git hardening."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.artifact import ArtifactType
from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput
from air.contracts.permission import PermissionGrantScope
from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
from air.contracts.tool_runs import ToolResultEnvelope
from air.tools import git as git_tools
from tests.gitrepo import git
from tests.tools.conftest import Env, assert_payloads_valid

ASKS = "curl -s https://example.com/x"


def out(result: ToolResultEnvelope) -> dict[str, Any]:
    """The output of a successful call, as a dict."""
    assert result.status == "ok", result.error
    assert isinstance(result.output, dict)
    return result.output


class ScriptedBroker:
    """A person answering prompts from a script; remembers what was asked."""

    def __init__(self, *answers: PermissionPromptResponse) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionPromptRequest] = []

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.append(request)
        return self.answers.pop(0)


async def test_ask_user_prompt_approved_for_the_task(tmp_path: Path) -> None:
    broker = ScriptedBroker(
        PermissionPromptResponse(approved=True, scope=PermissionGrantScope.TASK)
    )
    env = Env(tmp_path, prompts=broker)
    try:
        first = await env.registry.call("shell.run", {"command": ASKS}, env.ctx())
        assert first.status == "ok", first.error
        assert len(broker.asked) == 1
        assert broker.asked[0].command == ASKS
        again = await env.registry.call("shell.run", {"command": ASKS}, env.ctx())
        assert again.status == "ok"
        assert len(broker.asked) == 1  # the task grant covers the same segment
        types = env.types()
        assert types.count("permission.prompt.requested") == 1
        assert types.count("permission.prompt.resolved") == 1
        requested = env.payloads("permission.prompt.requested")[0]
        resolved = env.payloads("permission.prompt.resolved")[0]
        assert requested["prompt_id"] == resolved["prompt_id"]
        assert requested["tool_run_id"] == first.tool_run_id
        assert "curl" in requested["summary"]
        assert resolved["decision"] == "allow_task"
        assert resolved["resolved_by"] == "user"
        decisions = env.payloads("permission.decision.recorded")
        assert [d["decision"]["action"] for d in decisions[:2]] == ["ask_user", "allow"]
        assert decisions[1]["tool_run_id"] == first.tool_run_id
        assert len(env.rows("command_runs")) == 2
        assert_payloads_valid(env.events())
    finally:
        env.close()


async def test_ask_user_declined_and_headless_fail_closed(tmp_path: Path) -> None:
    broker = ScriptedBroker(PermissionPromptResponse(approved=False))
    env = Env(tmp_path, prompts=broker)
    try:
        declined = await env.registry.call("shell.run", {"command": ASKS}, env.ctx())
        assert declined.status == "denied"
        assert declined.error is not None
        assert declined.error.kind == "permission_denied"
        headless = await env.registry.call("shell.run", {"command": ASKS}, env.ctx(headless=True))
        assert headless.status == "denied"
        assert len(broker.asked) == 1  # headless never reaches the person
        resolved = env.payloads("permission.prompt.resolved")
        assert [(r["decision"], r["resolved_by"]) for r in resolved] == [("deny", "user")]
        last = env.payloads("permission.decision.recorded")[-1]
        assert last["decision"]["action"] == "deny"
        assert last["tool_run_id"] == headless.tool_run_id
        assert "headless" in last["decision"]["reason"]
        assert env.rows("command_runs") == []
        assert env.rows("tool_runs") == []
        assert_payloads_valid(env.events())
    finally:
        env.close()


class SilentPerson:
    """A person who never answers; says when a question reaches them."""

    def __init__(self) -> None:
        self.asked = trio.Event()

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_prompt_whose_call_is_cancelled_is_withdrawn(tmp_path: Path) -> None:
    """The call goes away while its question is open (its worker died, its task was
    cancelled): the prompt is resolved as a refusal, so no view keeps showing it."""
    person = SilentPerson()
    env = Env(tmp_path, prompts=person)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(env.registry.call, "shell.run", {"command": ASKS}, env.ctx())
            await person.asked.wait()
            nursery.cancel_scope.cancel()
        requested = env.payloads("permission.prompt.requested")
        resolved = env.payloads("permission.prompt.resolved")
        assert [r["prompt_id"] for r in resolved] == [requested[0]["prompt_id"]]
        assert (resolved[0]["decision"], resolved[0]["resolved_by"]) == ("deny", "policy")
        assert env.rows("command_runs") == []
        assert_payloads_valid(env.events())
    finally:
        env.close()


async def test_fs_list_project_info_and_artifact_read(env: Env) -> None:
    await trio.Path(env.root / "pyproject.toml").write_text("[project]\nname='p'\n")
    await trio.Path(env.root / "src" / "pkg").mkdir()
    listed = await env.registry.call("fs.list", {"path": "src"}, env.ctx())
    assert listed.status == "ok", listed.error
    assert out(listed)["entries"] == [
        {"name": "app.py", "type": "file"},
        {"name": "pkg", "type": "dir"},
    ]
    info = await env.registry.call("project.info", {}, env.ctx())
    assert info.status == "ok", info.error
    assert out(info)["is_git"] is True
    assert out(info)["build_files"] == ["pyproject.toml"]
    assert out(info)["name"] == "proj"
    # in a task's worktree (its .git a file): in git, and the project's name, not the worktree's
    git(env.root, "add", "-A")
    git(env.root, "commit", "-qm", "project")
    worktree = env.tmp / "ws_01"
    git(env.root, "worktree", "add", "-q", "--detach", str(worktree))
    info = await env.registry.call("project.info", {}, env.ctx(workspace_root=str(worktree)))
    assert (out(info)["is_git"], out(info)["name"]) == (True, "proj")
    assert out(info)["workspace_root"] == str(worktree.resolve())
    ref = env.session.artifacts.create(
        ArtifactCreateInput(type=ArtifactType.LOG, slug="note", extension=".txt", content=b"hi\n"),
        ArtifactContext(session_id=env.session_id),
    )
    read = await env.registry.call("artifact.read", {"artifact_id": ref.artifact_id}, env.ctx())
    assert read.status == "ok", read.error
    assert "hi" in json.dumps(out(read))
    missing = await env.registry.call("artifact.read", {"artifact_id": "art_nope"}, env.ctx())
    assert missing.status == "error"


async def test_artifact_read_reads_only_what_is_asked(env: Env) -> None:
    """A command's log artifact can be gigabytes: artifact.read loads ``max_bytes`` of it, at
    most ``OUTPUT_MAX`` (IMPL-FS-2): here 4 GiB (sparse) leave the parent's peak memory as it
    was."""
    ref = env.session.artifacts.create(
        ArtifactCreateInput(type=ArtifactType.LOG, slug="big", extension=".log", content=b"x\n"),
        ArtifactContext(session_id=env.session_id),
    )
    await trio.to_thread.run_sync(os.truncate, ref.path, 4 << 30)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    read = await env.registry.call(
        "artifact.read", {"artifact_id": ref.artifact_id, "max_bytes": 1000}, env.ctx()
    )
    assert read.status == "ok", read.error
    assert out(read)["content"].startswith("x\n")
    assert len(out(read)["content"]) == 1000
    assert out(read)["truncated"] is True
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 256 << 10  # KiB
    too_much = {"artifact_id": ref.artifact_id, "max_bytes": git_tools.OUTPUT_MAX + 1}
    refused = await env.registry.call("artifact.read", too_much, env.ctx())
    assert refused.status == "error"


async def test_git_status_and_log(env: Env) -> None:
    git(env.root, "add", "src/app.py")
    git(env.root, "commit", "-q", "-m", "first commit")
    await trio.Path(env.root / "src" / "new.py").write_text("x = 1\n")
    status = await env.registry.call("git.status", {}, env.ctx())
    assert status.status == "ok", status.error
    assert "?? src/new.py" in out(status)["status"]
    log = await env.registry.call("git.log", {"max_count": 5}, env.ctx())
    assert log.status == "ok", log.error
    lines = out(log)["log"].strip().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("\tfirst commit")


async def test_a_git_output_a_task_made_huge_is_cut_not_loaded(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task rewrote a tracked file with megabytes: git.diff reads at most ``OUTPUT_MAX`` of
    git's output (git is stopped there) and says it was cut (IMPL-FS-2)."""
    git(env.root, "add", "src/app.py")
    git(env.root, "commit", "-q", "-m", "first commit")
    await trio.Path(env.root / "src" / "app.py").write_text("x = 1\n" * 500_000)  # 3 MB
    monkeypatch.setattr(git_tools, "OUTPUT_MAX", 64 << 10)
    diff = await env.registry.call("git.diff", {}, env.ctx())
    assert diff.status == "ok", diff.error
    assert out(diff)["truncated"] is True
    assert out(diff)["diff"].startswith("diff --git a/src/app.py b/src/app.py\n")
    assert len(out(diff)["diff"]) == 64 << 10
    small = await env.registry.call("git.status", {}, env.ctx())
    assert out(small)["truncated"] is False
    assert " M src/app.py\n" in out(small)["status"]


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.mark.parametrize("how", ["from the empty tree", "a change", "named"])
async def test_git_diff_shows_no_credential_file_and_no_denied_path(env: Env, how: str) -> None:
    """fs.read asks before it reads a credential file, and never reads a task's denied path;
    git.diff showed both: their changed lines, and from the empty tree (``rev``) every tracked
    file whole. Now they are left out of the diff and named as withheld."""
    files = {
        "config/server.pem": "PEMKEYCONTENT\n",
        "deploy/.ssh/config": "SSHCONFIGCONTENT\n",
        "secrets/plan.txt": "DENIEDCONTENT\n",
        "src/ok.txt": "OKCONTENT\n",
        "src/data.csv": "GLOBBEDCONTENT\n",
    }
    for rel, text in files.items():
        (env.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (env.root / rel).write_text(text)
    git(env.root, "add", *files)
    git(env.root, "commit", "-q", "-m", "files")
    input: dict[str, Any] = {"rev": EMPTY_TREE} if how == "from the empty tree" else {}
    if how != "from the empty tree":
        for rel in files:
            (env.root / rel).write_text(files[rel].replace("CONTENT", "CHANGED"))
    if how == "named":
        input["paths"] = list(files)
    ctx = env.ctx(denied_paths=["secrets", "src/*.csv"])
    diff = await env.registry.call("git.diff", input, ctx)
    shown = out(diff)
    assert "OKC" in shown["diff"]
    for hidden in ("PEMKEY", "SSHCONFIG", "DENIED", "GLOBBED"):
        assert hidden not in shown["diff"], hidden
    assert shown["withheld"] == [
        "config/server.pem",
        "deploy/.ssh/config",
        "secrets/plan.txt",
        "src/data.csv",
    ]


async def test_git_diff_of_a_tree_or_blob_is_refused(env: Env) -> None:
    """A tree or blob is diffed under names relative to itself: ``HEAD:secrets..HEAD:data``
    showed ``secrets/plan.txt`` whole as ``plan.txt``, which no withholding recognised. A rev
    names commits (or the empty tree) only."""
    for rel in ("secrets/plan.txt", "data/d.txt", ".env"):
        (env.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (env.root / rel).write_text(f"SEEN-{rel}\n")
    git(env.root, "add", "-f", "secrets", "data", ".env")
    git(env.root, "commit", "-q", "-m", "files")
    for rel in ("secrets/plan.txt", "data/d.txt", ".env"):
        (env.root / rel).write_text(f"SEEN-{rel}-changed\n")
    git(env.root, "commit", "-q", "-a", "-m", "changed")
    ctx = env.ctx(denied_paths=["secrets"])
    blob = git(env.root, "rev-parse", "HEAD:secrets/plan.txt").strip()
    for rev in (
        "HEAD:secrets..HEAD:data",
        "HEAD:secrets",
        "HEAD:.env..HEAD:data/d.txt",
        f"{blob}..HEAD:data/d.txt",
        ":secrets/plan.txt",
    ):
        diff = await env.registry.call("git.diff", {"rev": rev}, ctx)
        assert diff.status == "error", (rev, diff.output)
        assert diff.error is not None
        assert diff.error.kind == "validation_error", (rev, diff.error.message)
    for rev in ("HEAD~1", "HEAD~1..HEAD", "HEAD~1...HEAD", "HEAD^!", EMPTY_TREE):
        done = await env.registry.call("git.diff", {"rev": rev}, ctx)
        shown = out(done)
        assert "SEEN-data/d.txt-changed" in shown["diff"], rev
        assert "SEEN-secrets" not in shown["diff"], rev
        assert "SEEN-.env" not in shown["diff"], rev


async def test_git_diff_inside_a_key_block_shows_no_key_line(env: Env) -> None:
    """A config holding a private key block (not named as a credential) whose key changed:
    the hunk showed the changed key lines, without the BEGIN line the redactor needs."""
    key = [f"MIIEowIBAAKCAQEA7bq98example0key0material0line0of0base64x{i:03d}Z" for i in range(9)]
    block = "\n".join(["-----BEGIN PRIVATE KEY-----", *key, "-----END PRIVATE KEY-----"])
    conf = env.root / "conf" / "app.yaml"
    conf.parent.mkdir()
    conf.write_text(f"name: app\ntls: |\n{block}\nport: 80\n")
    git(env.root, "add", "conf/app.yaml")
    git(env.root, "commit", "-q", "-m", "conf")
    conf.write_text(conf.read_text().replace(key[5], key[5].replace("Z", "Y")))
    diff = await env.registry.call("git.diff", {}, env.ctx())
    shown = out(diff)["diff"]
    assert "@@" in shown
    assert "key0material" not in shown, shown


async def test_git_diff_whose_file_list_is_cut_shows_nothing(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which files a diff may show is decided on the whole list of its files: one cut (past
    ``OUTPUT_MAX``) could leave a credential file off the withheld list."""
    for i in range(20):
        (env.root / f"file-{i:02d}.txt").write_text(f"TEXT{i}\n")
    (env.root / "zz-server.pem").write_text("PEMKEYCONTENT\n")
    git(env.root, "add", "-A")
    git(env.root, "commit", "-q", "-m", "files")
    monkeypatch.setattr(git_tools, "OUTPUT_MAX", 200)  # the listing: 20 names, 16 bytes each
    diff = await env.registry.call("git.diff", {"rev": EMPTY_TREE}, env.ctx())
    assert diff.status == "error"
    assert diff.error is not None
    assert "too many files" in diff.error.message
    assert "PEMKEY" not in json.dumps(env.payloads("tool.failed"))


def _arm_repository(env: Env, marker: Path) -> None:
    """Point every git extension point of the repository at a script that leaves a marker."""
    script = env.tmp / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    script.chmod(0o755)
    hooks = env.tmp / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        for directory in (hooks, env.root / ".git" / "hooks"):
            (directory / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
            (directory / name).chmod(0o755)
    git(env.root, "config", "core.hooksPath", str(hooks))
    git(env.root, "config", "core.fsmonitor", str(script))
    git(env.root, "config", "core.sshCommand", str(script))
    git(env.root, "config", "filter.evil.clean", str(script))
    git(env.root, "config", "filter.evil.smudge", str(script))
    git(env.root, "config", "filter.evil.required", "false")
    git(env.root, "config", "diff.evil.textconv", str(script))
    (env.root / ".gitattributes").write_text("* filter=evil diff=evil\n")


async def test_git_tools_never_run_repository_scripts(env: Env) -> None:
    marker = env.tmp / "marker"
    _arm_repository(env, marker)
    env.engine.headless_allow_ask = True
    ctx = env.ctx(headless=True)
    await trio.Path(env.root / "src" / "app.py").write_text("print('changed')\n")
    status = await env.registry.call("git.status", {}, ctx)
    assert status.status == "ok", status.error
    diff = await env.registry.call("git.diff", {}, ctx)
    assert diff.status == "ok", diff.error
    commit = await env.registry.call(
        "git.commit", {"message": "hardened", "paths": ["src/app.py"]}, ctx
    )
    assert commit.status == "ok", commit.error
    assert len(out(commit)["commit"]) == 40
    assert "hardened" in git(env.root, "log", "-1", "--format=%s")
    assert not await trio.Path(marker).exists()


async def test_git_commit_names_the_user_as_air_s_own_commits_do(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """air's git reads no global config: a user whose identity is in ~/.gitconfig (the usual
    place) had every git.commit fail ("Author identity unknown") while air's own merge commits
    named them. git.commit now commits as those do (IMPL-GIT-4): the user, with air as
    co-author; air itself only when the user has no identity; a model's control characters
    out of the message."""
    git(env.root, "config", "--unset", "user.name")
    git(env.root, "config", "--unset", "user.email")
    monkeypatch.setenv("HOME", str(env.home))
    env.engine.headless_allow_ask = True
    (env.home / ".gitconfig").write_text("[user]\n\tname = Pat User\n\temail = pat@example.com\n")
    (env.root / "a.txt").write_text("a\n")
    message = {"message": "Add\x1b a\n\nBecause.", "paths": ["a.txt"]}
    done = await env.registry.call("git.commit", message, env.ctx(headless=True))
    assert done.status == "ok", done.error
    shown = git(env.root, "log", "-1", "--format=%an <%ae>%n%B")
    assert shown.splitlines()[0] == "Pat User <pat@example.com>"
    assert "Add a\n\nBecause.\n\nCo-authored-by: air <air@localhost>" in shown
    assert "\x1b" not in shown
    (env.home / ".gitconfig").unlink()
    (env.root / "b.txt").write_text("b\n")
    bare = {"message": "Add b", "paths": ["b.txt"]}
    done = await env.registry.call("git.commit", bare, env.ctx(headless=True))
    assert done.status == "ok", done.error
    assert git(env.root, "log", "-1", "--format=%an <%ae>") == "air <air@localhost>"
