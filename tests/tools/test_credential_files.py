"""The user's credential files beside a project are out of every sandboxed command's sight
(IMPL-SBX-3): ``fs.read .env`` asks as sensitive, and now ``grep -r``, a glob, ``find -exec``,
a Makefile or ``fs.search`` cannot read the file without naming it either; a sensitive grant
shows the command exactly what it granted; tracked fixtures and package trees stay visible.
Real bubblewrap, real git, a real session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.policy import parse_policy
from air.tools.credential_files import credential_files, forget_scan, hidden_credentials
from tests.gitrepo import git
from tests.tools.conftest import Env

# plain values no redaction pattern knows: only hiding keeps them out
SECRETS = {
    ".env": "DEPLOY=planted-env-41\n",
    ".netrc": "machine example.com login me password planted-netrc-42\n",
    "config/credentials.json": '{"x": "planted-json-43"}\n',
    ".aws/config": "[default]\nregion = planted-aws-44\n",
    "keys/deploy.pem": "planted-pem-45\n",
}
TRACKED_FIXTURE = "tests/certs/server.pem"


def _plant(root: Path) -> None:
    for rel, text in SECRETS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / TRACKED_FIXTURE).parent.mkdir(parents=True)
    (root / TRACKED_FIXTURE).write_text("fixture-cert-visible\n")
    venv = root / "venv2"
    (venv / "lib" / "site-packages" / "certifi").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "site-packages" / "certifi" / "cacert.pem").write_text("ca-bundle-visible\n")
    (root / "walk.py").write_text(
        "import os\nfor d, _, names in os.walk('.'):\n    for n in names:\n"
        "        with open(os.path.join(d, n), errors='replace') as f:\n"
        "            print(f.read())\n"
    )
    (root / "Makefile").write_text(
        "all:\n\t@cat .env config/credentials.json || true\nwalk:\n\t@python3 walk.py\n"
    )
    (root / ".gitignore").write_text(".env\n.netrc\nconfig/\n.aws/\nkeys/\nvenv2/\n")
    git(root, "add", ".gitignore", "Makefile", "walk.py", TRACKED_FIXTURE, "src")
    git(root, "commit", "-qm", "project")


def _granting(tmp: Path, path: str) -> Env:
    """An Env whose policy allows the sensitive path ``path`` (the user's rule)."""
    rules = f"rules:\n  - action: allow\n    path: '{path}'\n    sensitive: true\n"
    engine = PermissionEngine(
        policy=parse_policy(rules, "permissions.yaml"),
        classifier=PathClassifier(home=str(tmp / "home")),
    )
    return Env(tmp, engine=engine)


def _planted(text: str) -> list[str]:
    return [marker for marker in ("planted-",) if marker in text]


async def _out(env: Env, command: str, **ctx: object) -> str:
    envelope = await env.registry.call("shell.run", {"command": command}, env.ctx(**ctx))
    assert envelope.status == "ok", (command, envelope.error)
    output = envelope.output
    assert isinstance(output, dict)
    return str(output["stdout"]) + str(output["stderr"])


@pytest.mark.parametrize("view", [False, True], ids=["writer", "read-only view"])
async def test_no_command_reads_an_untracked_credential_file(env: Env, view: bool) -> None:
    _plant(env.root)
    ctx: dict[str, object] = {"headless": True, "write_area": [] if view else None}
    for command in (
        "grep -r planted . || true",
        "cat .en* .ne* config/* keys/* .a*/* 2>&1 || true",
        "find . -type f | xargs cat 2>&1 || true",
        "make -s",  # a build runs what the project says: here, a walk reading every file
        "make -s walk",
    ):
        seen = await _out(env, command, **ctx)
        assert _planted(seen) == [], (command, seen)
    everything = await _out(env, "grep -r visible . || true", **ctx)
    assert "fixture-cert-visible" in everything  # a tracked fixture is in git's history anyway
    assert "ca-bundle-visible" in everything  # a package tree is nobody's secret
    listing = await _out(env, "ls -a", **ctx)
    assert ".env" in listing  # hidden is empty, not gone: the project's layout is unchanged
    for rel, text in SECRETS.items():  # and nothing was changed on the host
        assert (env.root / rel).read_text() == text
    # fs.search shows no credential-named file at all (fs.read asks for each, tracked or not)
    found = await env.registry.call("fs.search", {"pattern": "planted|hello"}, env.ctx(**ctx))
    assert found.status == "ok"
    assert isinstance(found.output, dict)
    assert [m["path"] for m in found.output["matches"]] == ["src/app.py"]


@pytest.mark.parametrize("view", [False, True], ids=["writer", "read-only view"])
async def test_no_command_reads_the_task_s_denied_paths(env: Env, view: bool) -> None:
    """The analyzer refuses a command naming a denied path (``cat secrets/plan.txt``), but a
    glob, a recursive read or a build read it: in a git project a task with denied paths works
    in a worktree that holds them. Hidden from its commands, none of them sees them."""
    files = ("secrets/plan.txt", "secrets/deep/more.txt", "data/a.csv", "data/sub/.b.csv")
    for rel in (*files, "data/readme.txt"):
        (env.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (env.root / rel).write_text(f"{'denied' if 'readme' not in rel else 'open'}-{rel}\n")
    ctx: dict[str, object] = {
        "headless": True,
        "write_area": [] if view else None,
        "denied_paths": ["secrets", "data/*.csv"],
    }
    for command in (
        "cat */* */*/* 2>&1 || true",
        "grep -r denied- . || true",
        "find . -type f | xargs cat 2>&1 || true",
    ):
        seen = await _out(env, command, **ctx)
        assert "denied-" not in seen, (command, seen)
    assert "open-data/readme.txt" in await _out(env, "cat data/*", **ctx)
    everything = await _out(env, "cat */* */*/* 2>&1 || true")  # without the scope
    assert "denied-secrets/deep/more.txt" in everything
    assert "denied-data/a.csv" in everything
    # the glob denies as the merge judges it (in_write_area_entry), everywhere: the engine
    # allowed fs.read of a file it matched, git.diff and fs.search showed it (they matched
    # denied paths as directories only)
    read = await env.registry.call("fs.read", {"path": "data/a.csv"}, env.ctx(**ctx))
    assert read.status == "denied", read
    found = await env.registry.call("fs.search", {"pattern": "denied-"}, env.ctx(**ctx))
    assert isinstance(found.output, dict), found.error
    assert found.output["matches"] == []
    assert "denied-data/sub/.b.csv" in await _out(env, "cat data/sub/.b.csv")


@pytest.mark.parametrize("where", ["project", "read-only view", "worktree"])
async def test_no_command_reads_a_denied_path_from_git_s_objects(env: Env, where: str) -> None:
    """Hiding a denied path's file leaves its tracked versions in git's objects (``git show
    HEAD:secrets/plan.txt``, ``git log -p``, a version deleted since): a task denied paths
    gets no git metadata in its commands, neither the project's ``.git`` nor a worktree's main
    git dir; git.diff and git.log still work, withholding them."""
    (env.root / "secrets").mkdir()
    (env.root / "secrets" / "plan.txt").write_text("denied-plan\n")
    (env.root / "secrets" / "old.txt").write_text("denied-old\n")
    git(env.root, "add", "secrets", "src")
    git(env.root, "commit", "-qm", "with secrets")
    git(env.root, "rm", "-q", "secrets/old.txt")
    git(env.root, "commit", "-qm", "an old secret deleted")
    workspace = env.root
    if where == "worktree":
        workspace = env.root / ".air" / "worktrees" / "t1"
        git(env.root, "worktree", "add", "-q", "-b", "t1", str(workspace))
    ctx: dict[str, object] = {
        "headless": True,
        "workspace_root": str(workspace),
        "write_area": [] if where == "read-only view" else None,
    }
    # the analyzer refuses a command naming a .git; a script it cannot read names the main one
    (workspace / "peek.py").write_text(
        "import subprocess\nsubprocess.run(['git', '--git-dir', "
        f"{str(env.root / '.git')!r}, 'log', '-p', '--all'])\n"
    )
    commands = (
        "git show HEAD:secrets/plan.txt 2>&1 || true",
        "git log -p --all 2>&1 || true",
        "python3 peek.py 2>&1 || true",
    )
    for command in commands:  # the scope's absence is what lets them see
        assert "denied-" in await _out(env, command, **ctx), command
    scoped = {**ctx, "denied_paths": ["secrets"]}
    for command in commands:
        seen = await _out(env, command, **scoped)
        assert "denied-" not in seen, (command, seen)
    diff = await env.registry.call("git.diff", {"rev": "HEAD~1"}, env.ctx(**scoped))
    assert diff.status == "ok", diff.error and diff.error.message
    assert isinstance(diff.output, dict)
    assert "denied-" not in str(diff.output)
    assert diff.output["withheld"] == ["secrets/old.txt"]
    log = await env.registry.call("git.log", {}, env.ctx(**scoped))
    assert isinstance(log.output, dict)
    assert "an old secret deleted" in log.output["log"]


async def test_a_sensitive_grant_shows_the_command_what_it_granted(tmp_path: Path) -> None:
    env = _granting(tmp_path, ".env")
    try:
        _plant(env.root)
        seen = await _out(env, "cat .env; grep -r planted . || true", headless=True)
        assert "DEPLOY=planted-env-41" in seen  # named and granted
        assert seen.count("planted-") == 2  # .env read twice; nothing else
        refused = await env.registry.call(
            "shell.run", {"command": "cat .netrc"}, env.ctx(headless=True)
        )
        assert refused.status == "denied"  # not granted: asked, and headless fails closed
        ungranted = await _out(env, "grep -r planted . || true", headless=True)
        assert _planted(ungranted) == []  # a grant is per call: this one names no file
    finally:
        env.close()


def test_what_is_hidden_where(tmp_path: Path) -> None:
    root = tmp_path / "plain"  # no repository: every credential-named file is the user's
    (root / "src").mkdir(parents=True)
    (root / "src" / "server.pem").write_text("x")
    (root / ".env").write_text("x")
    (root / ".env.example").write_text("x")
    (root / "deploy").mkdir()
    (root / "deploy" / "prod.env").write_text("x")
    (root / "deploy" / "example.env").write_text("x")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "test.key").write_text("x")
    (root / "linked.pem").symlink_to(root / "src" / "server.pem")
    real = os.path.realpath(root)
    assert sorted(credential_files(real)) == [
        f"{real}/.env",
        f"{real}/deploy/prod.env",
        f"{real}/src/server.pem",
    ]
    revealed = (f"{real}/src/**",)  # a granted tree read
    assert sorted(trio.run(hidden_credentials, str(root), str(root), revealed)) == [
        f"{real}/.env",
        f"{real}/deploy/prod.env",
    ]
    # a task's linked worktree holds tracked files and its task's own: nothing of the user's
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("x")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "a")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    wt = os.path.realpath(tmp_path / "wt")
    (tmp_path / "wt" / ".env").write_text("the task's own")
    (repo / ".env").write_text("the user's")
    assert credential_files(wt, str(repo)) == ()
    assert credential_files(os.path.realpath(repo)) == (f"{os.path.realpath(repo)}/.env",)
    # a project that is itself a linked worktree (the user's own): its untracked files are hers
    assert credential_files(wt, str(tmp_path / "wt")) == (f"{wt}/.env",)
    # a project that is a subdirectory of a repository: its tracked fixture stays in sight
    app = repo / "app"
    (app / "certs").mkdir(parents=True)
    (app / "certs" / "server.pem").write_text("fixture")
    git(repo, "add", "app")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "app")
    (app / ".env").write_text("the user's")
    assert credential_files(os.path.realpath(app)) == (f"{os.path.realpath(app)}/.env",)
    # a project no repository tracks inside one that does (a home under a dotfiles repository)
    loose = repo / "loose"
    (loose / "keys").mkdir(parents=True)
    (loose / "keys" / "a.pem").write_text("x")
    (loose / ".env").write_text("x")
    real = os.path.realpath(loose)
    assert sorted(credential_files(real)) == [f"{real}/.env", f"{real}/keys/a.pem"]


def test_a_home_made_a_project_hides_what_a_home_keeps_credentials_in(tmp_path: Path) -> None:
    """A dotfiles repository (or a home made a project): ``.config/gh`` (the GitHub CLI's token),
    ``.mozilla``, ``.local/share/keyrings`` are no credential names, but a home's credential
    directories: hidden whole when untracked, file by file when the repository tracks some of
    their files (those stay in sight); ``.config`` itself and its other folders stay."""
    home = tmp_path / "dotfiles"
    for rel in (".config/gh/hosts.yml", ".config/nvim/init.lua", ".mozilla/cookies.sqlite",
                ".local/share/keyrings/login.keyring", ".config/op/config"):  # fmt: skip
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x")
    real = os.path.realpath(home)
    expected = [".config/gh", ".config/op", ".local/share/keyrings", ".mozilla"]
    assert sorted(credential_files(real)) == [f"{real}/{rel}" for rel in expected]  # no git
    forget_scan(real)
    git(home, "init", "-q")
    git(home, "add", ".config/nvim", ".config/gh/hosts.yml")
    git(home, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "dotfiles")
    (home / ".config" / "gh" / "token.yml").write_text("planted")
    assert sorted(credential_files(real)) == [
        f"{real}/{rel}"
        for rel in (".config/gh/token.yml", ".config/op", ".local/share/keyrings", ".mozilla")
    ]


async def test_git_commit_leaves_the_user_s_credential_files_out(tmp_path: Path) -> None:
    """``git.commit`` with ``all`` (or a directory) in the project itself added an untracked
    ``.env`` and ``keys/id_rsa`` to history without a question; they stay out now, the rest
    goes in, and a sensitive grant that names one commits that one."""
    env = _granting(tmp_path, "config/**")
    try:
        (env.root / ".env").write_text("K=planted\n")
        (env.root / "keys").mkdir()
        (env.root / "keys" / "id_rsa").write_text("planted\n")
        (env.root / "src" / "more.py").write_text("x = 2\n")
        ctx = env.ctx(headless=True)
        done = await env.registry.call("git.commit", {"message": "all", "all": True}, ctx)
        assert done.status == "ok", done.error
        committed = git(env.root, "show", "--name-only", "--format=", "HEAD").split()
        assert "src/more.py" in committed
        assert ".env" not in committed
        assert "keys/id_rsa" not in committed
        (env.root / "src" / "third.py").write_text("x = 3\n")
        done = await env.registry.call("git.commit", {"message": "dot", "paths": ["."]}, ctx)
        assert done.status == "ok", done.error
        assert git(env.root, "show", "--name-only", "--format=", "HEAD").split() == ["src/third.py"]
        (env.root / "config").mkdir()
        (env.root / "config" / "credentials.json").write_text("{}\n")
        named = {"message": "granted", "paths": ["config/credentials.json"]}
        done = await env.registry.call("git.commit", named, ctx)
        assert done.status == "ok", done.error and done.error.message  # named and granted
        assert git(env.root, "show", "--name-only", "--format=", "HEAD").split() == [
            "config/credentials.json"
        ]
        assert git(env.root, "status", "--porcelain", "--", ".env", "keys").split() == [
            "??",
            ".env",
            "??",
            "keys/",
        ]
    finally:
        env.close()


async def test_git_commit_never_commits_a_denied_path(env: Env) -> None:
    """A task denied ``secrets`` working in the project itself (``--isolation main``) had
    ``git.commit`` put the untracked ``secrets/plan.txt`` into the person's history: ``paths:
    ["."]`` or ``all`` staged it, and ``paths: [":(glob)secrets/*"]`` passed the permission
    check (the path it judged is no denied one, nor ``.env``; git read the pathspec's magic:
    a tracked ``.env`` went in with ``:(glob).e*``, unasked). Now a path is
    a literal name, and a denied path staged (by the task's add or already in the index) is
    unstaged before the commit, its file left as it is."""
    (env.root / ".env").write_text("K=1\n")
    (env.root / "config").mkdir()
    (env.root / "config" / "credentials.json").write_text("{}\n")
    (env.root / ".aws").mkdir()
    (env.root / ".aws" / "config").write_text("[default]\n")
    git(env.root, "add", "-A")
    git(env.root, "add", "-f", ".env", "config/credentials.json", ".aws/config")
    git(env.root, "commit", "-qm", "base")
    (env.root / ".env").write_text("K=changed\n")  # tracked: only a grant names it
    (env.root / "config" / "credentials.json").write_text('{"k": "changed"}\n')
    (env.root / ".aws" / "config").write_text("[default]\nregion = x\n")  # in a credential dir
    (env.root / ".config" / "gh").mkdir(parents=True)  # found by the scan, not by its name
    (env.root / ".config" / "gh" / "hosts.yml").write_text("oauth_token: planted\n")
    (env.root / "src" / "caf\udce9.txt").write_text("a name that is no UTF-8\n")
    git(env.root, "add", "src")
    (env.root / "secrets").mkdir()
    (env.root / "secrets" / "plan.txt").write_text("denied-plan\n")
    (env.root / "secrets" / "staged.txt").write_text("denied-staged\n")
    git(env.root, "add", "secrets/staged.txt")  # the person's own staged change
    ctx = env.ctx(headless=True, denied_paths=["secrets"])
    calls: list[dict[str, object]] = [{"paths": ["."]}, {"all": True}, {}]
    for n, call in enumerate(calls):
        (env.root / "src" / f"n{n}.py").write_text(f"n = {n}\n")
        if not call:  # a commit of the index as it is
            git(env.root, "add", f"src/n{n}.py")
        done = await env.registry.call("git.commit", {"message": f"c{n}", **call}, ctx)
        assert done.status == "ok", done.error
        committed = git(env.root, "show", "--name-only", "--format=", "HEAD").split()
        odd = ['"src/caf\\351.txt"'] if n == 0 else []  # git quotes a name that is no UTF-8
        assert sorted(committed) == sorted([f"src/n{n}.py", *odd]), call
        assert isinstance(done.output, dict)
        assert done.output["commit"] == git(env.root, "rev-parse", "HEAD")
        said = [
            ".aws/config",
            ".config/gh/hosts.yml",
            ".env",
            "config/credentials.json",
            "secrets/plan.txt",
            "secrets/staged.txt",
        ]
        assert done.output.get("withheld") == (said if n < 2 else None), call  # the model is told
    for magic in (":(glob)secrets/*", ":(glob).e*"):
        named = {"message": "m", "paths": [magic]}
        done = await env.registry.call("git.commit", named, ctx)
        assert done.status == "error", magic  # no file has that name
    assert git(env.root, "show", "HEAD:.env") == "K=1"
    index = env.root / ".git" / "index"
    kept_index = index.read_bytes()
    index.write_bytes(b"DIRC not an index")  # what is staged cannot be told: no commit
    done = await env.registry.call("git.commit", {"message": "blind"}, ctx)
    assert done.status == "error"
    assert done.error is not None
    assert done.error.message == "git.commit: cannot tell which staged files it may commit"
    assert done.error.user_action == "Commit named paths (paths), fewer at a time."
    index.write_bytes(kept_index)
    (env.root / ":(glob)n.txt").write_text("the file named\n")
    (env.root / "n.txt").write_text("another file\n")
    named = {"message": "named", "paths": [":(glob)n.txt"]}
    done = await env.registry.call("git.commit", named, ctx)
    assert done.status == "ok", done.error
    assert git(env.root, "show", "--name-only", "--format=", "HEAD") == ":(glob)n.txt"
    history = git(env.root, "log", "--all", "--name-only", "--format=")
    assert "secrets" not in history
    assert (env.root / "secrets" / "staged.txt").read_text() == "denied-staged\n"
    assert git(env.root, "status", "--porcelain", "--", "secrets") == "?? secrets/"


@pytest.mark.parametrize("kind", ["linked worktree", "submodule"])
async def test_a_project_with_a_git_file_hides_the_user_s_credential_files(
    env: Env, kind: str
) -> None:
    """A project whose ``.git`` is a file — the user's own linked worktree (``git worktree add
    ../feature``, her ``.env`` copied in) or a submodule's checkout — was taken for a task's
    worktree, where nothing is the user's: every command read her untracked ``.env`` and
    ``git.commit all`` put it in history. A task's worktree still hides nothing."""
    git(env.root, "add", "-A")
    git(env.root, "commit", "-qm", "project")
    if kind == "linked worktree":
        project = env.tmp / "feature"
        git(env.root, "worktree", "add", "-q", str(project))
    else:
        outer = env.tmp / "outer"
        outer.mkdir()
        git(outer, "init", "-q")
        git(
            outer,
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            str(env.root),
            "lib",
        )
        project = outer / "lib"
    assert (project / ".git").is_file()
    (project / ".env").write_text("DEPLOY=planted-env-41\n")
    (project / "src" / "more.py").write_text("x = 2\n")
    ctx = env.ctx(headless=True, project_root=str(project), workspace_root=str(project))
    seen = await env.registry.call("shell.run", {"command": "grep -r planted . || true"}, ctx)
    assert seen.status == "ok", seen.error
    assert _planted(str(seen.output)) == []
    if kind == "linked worktree":  # (air's git tools take no submodule's checkout for a project)
        done = await env.registry.call("git.commit", {"message": "all", "all": True}, ctx)
        assert done.status == "ok", done.error
        committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
        assert committed == ["src/more.py"]
    # the same checkout as a task's worktree of that project: the task's own files, all in sight
    task = env.ctx(headless=True, workspace_root=str(project))
    own = await env.registry.call("shell.run", {"command": "grep -r planted . || true"}, task)
    assert _planted(str(own.output)) == ["planted-"]


def test_the_scan_walks_past_a_virtual_environment_and_scans_the_workspace_it_is_given(
    tmp_path: Path,
) -> None:
    """A venv is passed over whole, and the walk goes on after it (a `break` there left every
    credential file after the first venv in sight); a task's copy of the project is scanned
    itself, not the project it was copied from."""
    project = tmp_path / "project"
    for name in ("aaa-venv", "zzz-venv"):  # one is walked before mmm, whatever the order
        venv = project / name
        (venv / "lib").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "lib" / "test.pem").write_text("x")
    (project / "mmm").mkdir()
    (project / "mmm" / ".env").write_text("K=v\n")
    # the walk goes on past what it does not enter, too: links and package or build trees (a
    # `break` there left every directory listed after the first of them unscanned)
    for name in ("node_modules", "build", "site-packages"):
        (project / name).mkdir()
        (project / name / "cacert.pem").write_text("x")  # not the user's: not scanned
    for i in range(8):
        os.symlink(tmp_path, project / f"link{i}")
    real = os.path.realpath(project)
    assert credential_files(real) == (f"{real}/mmm/.env",)
    copy = tmp_path / "copy"
    (copy / "deploy").mkdir(parents=True)
    (copy / "deploy" / "prod.env").write_text("K=v\n")
    found = trio.run(hidden_credentials, str(copy), str(project))
    assert found == (f"{os.path.realpath(copy)}/deploy/prod.env",)
