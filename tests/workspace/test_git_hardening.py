"""air's own git never runs what a repository or a task planted (issue #9 item 1).

Real git repositories whose config, hooks, attributes and includes point every extension point
at a payload that leaves a marker file; the WorkspaceManager creates, inspects, commits, merges
and cleans worktrees in them and the marker never appears. A task that rewrites its worktree's
``.git`` file (to an attacker repository, a symlink, a directory of its own) ends in
``workspace_error``: nothing is merged, the workspace is kept as it is, and the attacker's
config is never read by air's git.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import TaskScope, TaskSpec, WorkspacePlan
from air.contracts.task import WorkspaceStrategy as WS
from air.nursery.planner import WavePlanner
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.workspace.gitsafe import driver_overrides, git_environment, locate_git
from air.workspace.manager import WorkspaceManager
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.headless import write_file_cassette
from tests.nursery.conftest import SessionDB, open_session_db
from tests.workspace.recorder import Events

_AIR_RUN = ("run", "--headless")
HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-merge-commit",
    "post-merge",
    "post-checkout",
    "reference-transaction",
    "post-index-change",
    "pre-auto-gc",
)


def _git(cwd: Path, *args: str) -> str:
    """The shared helper with no system or global configuration (HOME is the repository)."""
    return git(
        cwd, *args, env={"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    )


def _exists(path: Path) -> bool:
    return path.exists()


def _plain_git_status(cwd: Path) -> None:
    subprocess.run(["git", "status"], cwd=cwd, capture_output=True, check=False)


class Payload:
    """An executable that appends its arguments to ``marker`` whenever anything runs it."""

    def __init__(self, base: Path) -> None:
        self.marker = base / "PWNED"
        self.script = base / "payload.sh"
        self.script.write_text(f'#!/bin/sh\necho "$0 $*" >> {self.marker}\ncat\n')
        self.script.chmod(0o755)

    def ran(self) -> str:
        return self.marker.read_text() if self.marker.exists() else ""


def _poison(git_dir: Path, payload: Payload, *, hooks_dir: Path) -> None:
    """Point every extension point of the config in ``git_dir`` at the payload."""
    script = str(payload.script)
    hooks_dir.mkdir(parents=True, exist_ok=True)
    for hooks in (hooks_dir, git_dir / "hooks"):
        hooks.mkdir(exist_ok=True)
        for name in HOOKS:
            (hooks / name).write_text(f"#!/bin/sh\n{script} hook-{name}\n")
            (hooks / name).chmod(0o755)
    included = git_dir.parent / "included.gitconfig"
    included.write_text(f'[core]\n\tfsmonitor = {script}\n[filter "inc"]\n\tclean = {script}\n')
    conditional = git_dir.parent / "conditional.gitconfig"
    conditional.write_text(
        f"[core]\n\tfsmonitor = {script}\n\thooksPath = {hooks_dir}\n"
        f'[filter "cond"]\n\tsmudge = {script}\n\tclean = {script}\n'
    )
    settings = {
        "core.hooksPath": str(hooks_dir),
        "core.fsmonitor": script,
        "core.editor": script,
        "core.pager": script,
        "core.sshCommand": script,
        "core.askPass": script,
        "core.alternateRefsCommand": script,
        "sequence.editor": script,
        "credential.helper": script,
        "diff.external": script,
        "filter.evil.clean": script,
        "filter.evil.smudge": script,
        "filter.evil.process": script,
        "filter.evil.required": "true",
        "diff.evil.textconv": script,
        "diff.evil.command": script,
        "merge.evil.driver": f"{script} %O %A %B",
        "gpg.program": script,
        "commit.gpgSign": "true",
        "log.showSignature": "true",
        "gc.auto": "1",
        "include.path": str(included),
        "includeIf.gitdir:/.path": str(conditional),
    }
    config = str(git_dir / "config")
    for key, value in settings.items():
        git(git_dir, "config", "--file", config, key, value)


@pytest.fixture
def payload(tmp_path: Path) -> Payload:
    return Payload(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    (root / ".gitignore").write_text(".air/local/\n")
    (root / ".gitattributes").write_text(
        "* filter=evil diff=evil merge=evil\n*.inc filter=inc\n*.cond filter=cond\n"
    )
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def session_db(tmp_path: Path) -> Iterator[SessionDB]:
    sdb = open_session_db(str(tmp_path / "s"))
    yield sdb
    sdb.db.close()


async def test_planted_config_hooks_filters_and_includes_never_execute(
    repo: Path, payload: Payload, tmp_path: Path
) -> None:
    _poison(repo / ".git", payload, hooks_dir=tmp_path / "evil-hooks")
    mgr = WorkspaceManager(str(repo), Events())
    assert await mgr.is_git_repo()
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
    ws = Path(ref.path)
    (ws / "a.txt").write_text("two\n")
    (ws / "new.inc").write_text("included filter\n")
    (ws / "new.cond").write_text("conditionally included filter\n")
    assert await mgr.changed_files(ref.workspace_id) == ["a.txt", "new.cond", "new.inc"]
    merged = await mgr.merge_workspace(ref.workspace_id)
    assert merged.status == "merged"
    assert (repo / "a.txt").read_text() == "two\n"  # no clean/smudge filter touched it
    await mgr.cleanup_workspace(ref.workspace_id)
    assert not _exists(ws)
    assert payload.ran() == ""
    _plain_git_status(repo)  # the poison is real: plain git in the same repository runs it
    assert "payload" in payload.ran()


async def test_hardened_git_keeps_no_git_variable_of_the_caller(repo: Path) -> None:
    env = git_environment(
        environ={"PATH": "/bin", "GIT_DIR": "/evil", "GIT_EXEC_PATH": "/evil", "LD_PRELOAD": "x"}
    )
    assert "LD_PRELOAD" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert not {k for k in env if k.startswith("GIT_")} & {"GIT_DIR", "GIT_EXEC_PATH"}
    pinned = git_environment(locate_git(str(repo), project_root=str(repo)), environ={})
    assert pinned["GIT_DIR"] == str(repo / ".git")
    assert pinned["GIT_WORK_TREE"] == str(repo)


def test_driver_overrides_survive_awkward_driver_names() -> None:
    listing = b"filter.a=b.clean\0diff.x.y.textconv\0merge.M.driver\0diff.external\0core.x.y\0"
    env = driver_overrides(listing)
    pairs = {
        env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"]
        for i in range(int(env["GIT_CONFIG_COUNT"]))
    }
    assert pairs == {
        "filter.a=b.clean": "",
        "filter.a=b.smudge": "",
        "filter.a=b.process": "",
        "filter.a=b.required": "false",
        "diff.x.y.command": "",
        "diff.x.y.textconv": "",
        "merge.M.driver": "exit 1",
    }


def _attacker_repo(base: Path, payload: Payload) -> Path:
    evil = base / "evil"
    evil.mkdir()
    _git(evil, "init", "-q", "-b", "main")
    _poison(evil / ".git", payload, hooks_dir=base / "evil-hooks2")
    return evil


def _tamper_gitdir(ws: Path, evil: Path) -> None:
    (ws / ".git").write_text(f"gitdir: {evil / '.git'}\n")


def _tamper_symlink(ws: Path, evil: Path) -> None:
    target = ws / "elsewhere.git"
    target.write_text((ws / ".git").read_text())
    (ws / ".git").unlink()
    (ws / ".git").symlink_to(target)


def _tamper_directory(ws: Path, evil: Path) -> None:
    (ws / ".git").unlink()
    os.rename(evil / ".git", ws / ".git")


def _tamper_commondir(ws: Path, evil: Path) -> None:
    git_dir = Path((ws / ".git").read_text().split(" ", 1)[1].strip())
    (git_dir / "commondir").write_text(str(evil / ".git") + "\n")


def _tamper_worktree_config(ws: Path, evil: Path) -> None:
    git_dir = Path((ws / ".git").read_text().split(" ", 1)[1].strip())
    (git_dir / "config.worktree").write_text((evil / ".git" / "config").read_text())


@pytest.mark.parametrize(
    "tamper",
    [
        _tamper_gitdir,
        _tamper_symlink,
        _tamper_directory,
        _tamper_commondir,
        _tamper_worktree_config,
    ],
)
async def test_tampered_worktree_is_refused_kept_and_never_merged(
    repo: Path, payload: Payload, tmp_path: Path, tamper: Any
) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
    ws = Path(ref.path)
    (ws / "a.txt").write_text("changed by the task\n")
    tamper(ws, _attacker_repo(tmp_path, payload))
    head = _git(repo, "rev-parse", "HEAD")
    for step in (
        lambda: mgr.changed_files(ref.workspace_id),
        lambda: mgr.merge_workspace(ref.workspace_id),
        lambda: mgr.cleanup_workspace(ref.workspace_id),
    ):
        with pytest.raises(AirException) as caught:
            await step()
        assert caught.value.kind == ErrorKind.WORKSPACE_ERROR
        assert caught.value.user_action
    assert await mgr.gc() == []
    assert payload.ran() == ""
    assert "workspace.merge.started" not in events.types()
    assert _git(repo, "rev-parse", "HEAD") == head  # never merged
    assert (repo / "a.txt").read_text() == "one\n"
    assert (ws / "a.txt").read_text() == "changed by the task\n"  # kept as it was
    assert mgr.get(ref.workspace_id).status == "active"


async def test_scheduler_fails_a_tampered_task_with_workspace_error_and_keeps_it(
    repo: Path, payload: Payload, tmp_path: Path, session_db: SessionDB
) -> None:
    evil = _attacker_repo(tmp_path, payload)
    ledger = session_db.ledger
    workspaces = WorkspaceManager(str(repo), ledger.record)
    runner = FakeTaskRunner(
        {
            "t": [
                FakeStep(0.01, writes=(("a.txt", "evil\n"), (".git", f"gitdir: {evil / '.git'}\n")))
            ],
            "ok": [FakeStep(0.01, writes=(("b.txt", "fine\n"),))],
        }
    )
    sched = Scheduler(
        ledger,
        runner,
        project_root=str(repo),
        workspaces=workspaces,
        planner=WavePlanner(git_repo=True),
        options=SchedulerOptions(max_workers=2),
    )
    head = _git(repo, "rev-parse", "HEAD")
    await sched.create_tasks(
        [
            TaskSpec(id="t", type="execute", title="t", description="t", scope=TaskScope()),
            TaskSpec(
                id="ok",
                type="execute",
                title="ok",
                description="ok",
                scope=TaskScope(write_area=["b.txt"]),
            ),
        ]
    )
    result = await sched.run_until_idle()
    assert (result.status, result.failed_task_ids) == ("blocked", ["t"]), result
    history = ledger.history()
    failed = [e.payload for e in history if e.type == "task.failed"]
    assert [(p["task_id"], p["error"]["kind"]) for p in failed] == [("t", "workspace_error")]
    assert failed[0]["error"]["retryability"] == "never"
    kept = Path(failed[0]["error"]["metadata"]["kept_path"])
    assert (kept / "a.txt").read_text() == "evil\n"
    assert [e.payload["task_id"] for e in history if e.type == "task.completed"] == ["ok"]
    assert (repo / "b.txt").read_text() == "fine\n"  # the honest task merged
    assert (repo / "a.txt").read_text() == "one\n"  # the tampered one did not
    assert _git(repo, "rev-list", "--count", f"{head}..HEAD") != "0"
    assert sum(r.task_id == "t" for r in runner.log.records) == 1  # not retried
    assert payload.ran() == ""


async def test_git_tools_refuse_a_tampered_or_foreign_workspace(
    tmp_path: Path, payload: Payload
) -> None:
    from tests.tools.conftest import Env

    (tmp_path / "env").mkdir()
    env = Env(tmp_path / "env")
    try:
        _git(env.root, "add", "-A")
        _git(env.root, "commit", "-q", "-m", "init")
        mgr = WorkspaceManager(str(env.root), Events())
        ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
        ctx = env.ctx(workspace_root=ref.path)
        ok = await env.registry.call("git.status", {}, ctx)
        assert ok.status == "ok", ok.error
        option = await env.registry.call("git.diff", {"rev": f"--output={payload.marker}"}, ctx)
        assert option.status == "error"  # an option smuggled in as a revision
        _tamper_gitdir(Path(ref.path), _attacker_repo(tmp_path, payload))
        for name in ("git.status", "git.diff", "git.log"):
            refused = await env.registry.call(name, {}, ctx)
            assert refused.status == "error", name
            assert refused.error is not None
            assert refused.error.kind == ErrorKind.WORKSPACE_ERROR
        copy = await mgr.create_workspace(WorkspacePlan(task_id="t2", strategy=WS.ISOLATED_COPY))
        walked = await env.registry.call("git.status", {}, env.ctx(workspace_root=copy.path))
        assert walked.status == "error"  # no .git: never the project's repository above it
        assert payload.ran() == ""
    finally:
        env.close()


def test_a_real_headless_run_in_a_poisoned_repository_runs_none_of_it(
    tmp_path: Path, payload: Payload
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".air/\nbatch.yaml\ncas/\n")
    (root / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (root / "a.txt").write_text("one\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    _poison(root / ".git", payload, hooks_dir=tmp_path / "evil-hooks")
    (root / "cas").mkdir()
    write_file_cassette(root / "cas" / "w.jsonl", "out.txt", "hello\n", "wrote")
    (root / "batch.yaml").write_text(
        "tasks:\n  - id: w\n    title: write\n    scope: {write_area: [out.txt]}\n"
    )
    done = air_cli(
        [*_AIR_RUN, "batch.yaml", "--cassette", "cas", "--isolation", "worktree"], cwd=root
    )
    assert done.returncode == 0, done.stderr
    assert (root / "out.txt").read_text() == "hello\n"  # created in a worktree, merged back
    assert _git(root, "branch", "--list", "air/ws/*") == ""  # landed: its branch is gone
    assert payload.ran() == ""


async def test_a_nested_repository_planted_by_the_task_runs_nothing(
    repo: Path, payload: Payload, tmp_path: Path
) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
    ws = Path(ref.path)
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    _git(nested, "init", "-q", "-b", "main")
    (nested / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (nested / "x.txt").write_text("x\n")
    _git(nested, "add", "-A")
    _git(nested, "commit", "-q", "-m", "nested")
    _poison(nested / ".git", payload, hooks_dir=tmp_path / "nested-hooks")
    (nested / "x.txt").write_text("dirty\n")  # a dirty submodule makes status look inside
    (ws / "a.txt").write_text("two\n")
    assert "a.txt" in await mgr.changed_files(ref.workspace_id)
    merged = await mgr.merge_workspace(ref.workspace_id)
    assert merged.status == "merged"
    assert (repo / "a.txt").read_text() == "two\n"
    assert payload.ran() == ""


async def test_a_project_that_is_itself_a_linked_worktree_gets_worktrees(
    repo: Path, payload: Payload, tmp_path: Path
) -> None:
    project = tmp_path / "linked"
    _git(repo, "worktree", "add", "-q", "-b", "feature", str(project))
    mgr = WorkspaceManager(str(project), Events())
    assert await mgr.is_git_repo()
    ref = await mgr.create_workspace(WorkspacePlan(task_id="t1", strategy=WS.WORKTREE))
    (Path(ref.path) / "a.txt").write_text("from the task\n")
    assert (await mgr.merge_workspace(ref.workspace_id)).status == "merged"
    assert (project / "a.txt").read_text() == "from the task\n"
    assert _git(repo, "show", "main:a.txt") == "one"  # the main checkout's branch is untouched
    # a workspace re-pointed at the project's own git directory is refused
    second = await mgr.create_workspace(WorkspacePlan(task_id="t2", strategy=WS.WORKTREE))
    (Path(second.path) / ".git").write_text((project / ".git").read_text())
    with pytest.raises(AirException) as caught:
        await mgr.merge_workspace(second.workspace_id)
    assert caught.value.kind == ErrorKind.WORKSPACE_ERROR
    assert payload.ran() == ""


async def test_a_project_repository_redirected_fails_the_task_not_the_run(
    repo: Path, payload: Payload, tmp_path: Path, session_db: SessionDB
) -> None:
    evil = _attacker_repo(tmp_path, payload)
    (repo / ".git" / "commondir").write_text(str(evil / ".git") + "\n")
    ledger = session_db.ledger
    workspaces = WorkspaceManager(str(repo), ledger.record)
    assert not await workspaces.is_git_repo()
    runner = FakeTaskRunner({"t": [FakeStep(0.01, writes=(("a.txt", "x\n"),))]})
    sched = Scheduler(
        ledger,
        runner,
        project_root=str(repo),
        workspaces=workspaces,
        planner=WavePlanner(git_repo=True),  # it was a repository when the run was planned
        options=SchedulerOptions(max_workers=1),
    )
    await sched.create_tasks(
        [TaskSpec(id="t", type="execute", title="t", description="t", scope=TaskScope())]
    )
    result = await sched.run_until_idle()
    assert result.failed_task_ids == ["t"]
    failed = [e.payload for e in ledger.history() if e.type == "task.failed"]
    assert [p["error"]["kind"] for p in failed] == ["workspace_error"]
    assert runner.log.records == []  # no worker ran
    assert payload.ran() == ""


async def test_a_project_without_dot_git_is_no_repository_without_asking_locate_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the start-up path of a plain project (IMPL-BOOT-13): no .git entry at all is answered
    # by one lstat, before locate_git builds the AirException it would refuse it with
    import air.workspace.worktrees as worktrees

    def refuse(*_: object, **__: object) -> object:
        raise AssertionError("locate_git called for a project without .git")

    monkeypatch.setattr(worktrees, "locate_git", refuse)
    assert not await WorkspaceManager(str(tmp_path), Events()).is_git_repo()
    (tmp_path / ".git").symlink_to(tmp_path / "nowhere")  # a dangling link still asks
    with pytest.raises(AssertionError):
        await WorkspaceManager(str(tmp_path), Events()).is_git_repo()
