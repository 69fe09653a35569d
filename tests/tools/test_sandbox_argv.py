"""The sandbox's bubblewrap command line as air builds it, and what a command then finds in it.

The probe tests (tests/tools/sandbox_probe.py) prove the sandbox from inside, in a process of
their own; these hold the pieces air assembles in its own process (area ``sandbox`` of
scripts/mutation.sh): the environment allowlist, the generated ``/etc`` files, which credential
entries get hidden and how, when a task worktree's repository is bound (read-only, and only a
repository in git's own shape), when ``.air`` is covered, and a real command in a real linked
worktree: git works, its metadata cannot be written, ``/dev``, ``/tmp``, ``/etc/mtab`` and the
host name are the sandbox's own, and nothing is left in the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.tools.sandbox import SANDBOX_HOME, SandboxRunner, pin_protected, sandbox_environment
from air.tools.sandbox_check import sandbox_ids
from tests.gitrepo import git
from tests.tools.conftest import Env

BWRAP = "/usr/bin/bwrap"


def _argv(workspace: Path, **kw: object) -> list[str]:
    pinned = pin_protected(str(workspace))
    try:
        return SandboxRunner(bwrap_path=BWRAP).argv(
            "true",
            workspace=str(workspace),
            cwd=str(workspace),
            network=False,
            pinned=pinned,
            **kw,  # type: ignore[arg-type]
        )
    finally:
        for fd in pinned.values():
            os.close(fd)


def _binds(argv: list[str], flag: str) -> list[list[str]]:
    """Each ``flag`` of ``argv`` with its two operands."""
    return [argv[i : i + 3] for i, a in enumerate(argv) if a == flag]


def test_the_environment_is_the_allowlist_and_air_s_own_values() -> None:
    environ = {
        "PATH": "/opt/cc/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "CC": "clang",
        "CMAKE_GENERATOR": "Ninja",
        "HOME": "/root",
        "USER": "root",
        "TMPDIR": "/var/tmp",
        "AWS_SECRET_ACCESS_KEY": "planted",
        "GITHUB_TOKEN": "planted",
        "LD_PRELOAD": "/tmp/evil.so",
    }
    assert sandbox_environment(environ) == {
        "PATH": "/opt/cc/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "CC": "clang",
        "CMAKE_GENERATOR": "Ninja",
        "HOME": SANDBOX_HOME,
        "USER": "air",
        "LOGNAME": "air",
        "SHELL": "/bin/bash",
        "TMPDIR": "/tmp",
    }
    assert sandbox_environment({})["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def test_the_generated_etc_files_name_root_air_and_nobody_only() -> None:
    uid, gid = sandbox_ids()
    files = SandboxRunner(bwrap_path=BWRAP).generated_files()
    assert sorted(files) == ["/etc/group", "/etc/passwd"]
    assert files["/etc/passwd"].decode().splitlines() == [
        "root:x:0:0:root:/root:/usr/sbin/nologin",
        f"air:x:{uid}:{gid}:air sandbox:{SANDBOX_HOME}:/bin/bash",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    ]
    assert files["/etc/group"].decode().splitlines() == [
        "root:x:0:",
        f"air:x:{gid}:",
        "nogroup:x:65534:",
    ]
    with_network = SandboxRunner(bwrap_path=BWRAP).generated_files(network=True)
    assert sorted(with_network) == ["/etc/group", "/etc/passwd", "/etc/resolv.conf"]


def test_only_credential_entries_inside_the_workspace_are_hidden_each_as_what_it_is(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / ".env").write_text("K=v\n")
    (ws / "key.pem").write_text("k\n")
    (ws / "link.pem").symlink_to(ws / "key.pem")
    (tmp_path / "outside.pem").write_text("o\n")
    real = os.path.realpath(ws)
    hidden = [
        f"{real}/.env",
        f"{real}/gone.pem",  # removed since the scan
        str(tmp_path / "outside.pem"),
        real,  # the workspace itself is never covered
        f"{real}/secrets",
        f"{real}/link.pem",  # a link is never a mount point
        f"{real}/key.pem",
    ]
    argv = _argv(ws, hidden=hidden)
    assert _binds(argv, "--ro-bind")[-2:] == [
        ["--ro-bind", "/dev/null", f"{real}/.env"],
        ["--ro-bind", "/dev/null", f"{real}/key.pem"],
    ]
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert tmpfs == ["/tmp", SANDBOX_HOME, f"{real}/secrets"]
    assert f"{real}/secrets" in _binds(argv, "--remount-ro")[0]
    assert not any(str(tmp_path / "outside.pem") in a for a in argv)


@pytest.fixture
def worktree(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with one commit and a linked worktree of it: (worktree, common dir)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "a")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "wt"))
    return tmp_path / "wt", Path(os.path.realpath(repo / ".git"))


def test_a_worktrees_repository_is_bound_read_only_beside_its_git_file(
    worktree: tuple[Path, Path],
) -> None:
    wt, common = worktree
    real = os.path.realpath(wt)
    argv = _argv(wt)
    fds = _binds(argv, "--ro-bind-fd")
    assert [b[2] for b in fds] == [f"{real}/.git"]
    assert ["--ro-bind", str(common), str(common)] in _binds(argv, "--ro-bind")
    view = _argv(wt, read_only=True)  # the view's own .git is the overlay's; the repository not
    assert _binds(view, "--ro-bind-fd") == []
    assert ["--ro-bind", str(common), str(common)] in _binds(view, "--ro-bind")


def test_a_worktree_with_a_relative_pointer_is_bound_the_same(
    worktree: tuple[Path, Path],
) -> None:
    """git 2.48 and later may write both pointers relative (``worktree.useRelativePaths``): each
    is read from where it is (the worktree, the record), not from air's working directory."""
    wt, common = worktree
    record = common / "worktrees" / "wt"
    (wt / ".git").write_text(f"gitdir: {os.path.relpath(record, wt)}\n")
    assert ["--ro-bind", str(common), str(common)] in _binds(_argv(wt), "--ro-bind")
    # and the record's own pointer back, relative to the record
    (record / "gitdir").write_text(os.path.relpath(wt / ".git", record) + "\n")
    assert ["--ro-bind", str(common), str(common)] in _binds(_argv(wt), "--ro-bind")


@pytest.mark.parametrize(
    "tamper",
    [
        "not a pointer",
        "outside worktrees/",
        "commondir elsewhere",
        "no commondir",
        "no objects",
        "no HEAD",
        "undecodable",
        "inside the workspace",
        "another repository's worktree",
        "another worktree of it",
    ],
)
def test_a_git_file_not_in_gits_own_shape_exposes_no_repository(
    worktree: tuple[Path, Path], tmp_path: Path, tamper: str
) -> None:
    wt, common = worktree
    dot_git = wt / ".git"
    record = Path(dot_git.read_text().split(":", 1)[1].strip())
    if tamper == "not a pointer":
        dot_git.write_text(f"path: {record}\n")
    elif tamper == "outside worktrees/":
        elsewhere = tmp_path / "fake" / "wt"
        elsewhere.mkdir(parents=True)
        (elsewhere / "commondir").write_text("../..\n")
        dot_git.write_text(f"gitdir: {elsewhere}\n")
    elif tamper == "commondir elsewhere":
        (record / "commondir").write_text(str(tmp_path) + "\n")
    elif tamper == "no commondir":
        (record / "commondir").unlink()
    elif tamper == "no objects":
        os.rename(common / "objects", common / "objects.away")
    elif tamper == "no HEAD":
        os.rename(common / "HEAD", common / "HEAD.away")
    elif tamper == "undecodable":
        dot_git.write_bytes(b"gitdir: \xff\xfe\n")
    elif tamper == "another repository's worktree":  # a .git file a task wrote in a copy
        other = tmp_path / "other"
        git(tmp_path, "init", "-q", "other")
        git(other, "commit", "-q", "--allow-empty", "-m", "o")
        git(other, "worktree", "add", "-q", "--detach", str(tmp_path / "other-wt"))
        dot_git.write_text(f"gitdir: {other / '.git' / 'worktrees' / 'other-wt'}\n")
    elif tamper == "another worktree of it":  # a sibling task's record names its own back
        git(common.parent, "worktree", "add", "-q", "--detach", str(tmp_path / "sibling"))
        dot_git.write_text(f"gitdir: {common / 'worktrees' / 'sibling'}\n")
    else:  # the repository inside the workspace is bound with it already
        inner = wt / "inner"
        git(inner.parent, "init", "-q", "inner")
        (inner / ".git" / "worktrees" / "x").mkdir(parents=True)
        (inner / ".git" / "worktrees" / "x" / "commondir").write_text("../..\n")
        dot_git.write_text(f"gitdir: {inner / '.git' / 'worktrees' / 'x'}\n")
    binds = _binds(_argv(wt), "--ro-bind")
    assert not [b for b in binds if b[1] == b[2] and "/dev/null" not in b[1] and ".git" in b[1]]


def test_air_s_state_is_covered_only_where_it_is(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    real = os.path.realpath(ws)
    assert f"{real}/.air" not in _argv(ws)  # none there: no mount point made in the project
    (tmp_path / "elsewhere").mkdir()
    (ws / ".air").symlink_to(tmp_path / "elsewhere")
    argv = _argv(ws)
    assert f"{real}/.air" not in argv
    assert os.path.realpath(tmp_path / "elsewhere") not in argv
    (ws / ".air").unlink()
    (ws / ".air").mkdir()
    argv = _argv(ws)
    at = argv.index(f"{real}/.air")
    air = f"{real}/.air"
    assert argv[at - 3 : at + 3] == ["--perms", "0555", "--tmpfs", air, "--remount-ro", air]


async def test_a_command_in_a_task_worktree_finds_git_and_the_sandbox_s_own_system(
    tmp_path: Path, worktree: tuple[Path, Path]
) -> None:
    wt, common = worktree
    (tmp_path / "env").mkdir()
    env = Env(tmp_path / "env")
    env.engine.headless_allow_ask = True
    script = (
        "git status --porcelain; git log --oneline | wc -l; "
        "(echo x > .git) 2>/dev/null || echo git-file-read-only; "
        f"(touch {common}/planted) 2>/dev/null || echo repository-read-only; "
        "uname -n; readlink /etc/mtab; head -c 4 /dev/urandom | wc -c; "
        "echo t > /tmp/t && cat /tmp/t"
    )
    try:
        ctx = env.ctx(headless=True, project_root=str(env.root), workspace_root=str(wt))
        done = await env.registry.call("shell.run", {"command": script}, ctx)
        assert done.status == "ok", done.error
        assert isinstance(done.output, dict)
        assert done.output["stdout"].splitlines() == [
            "1",
            "git-file-read-only",
            "repository-read-only",
            "air-sandbox",
            "/proc/self/mounts",
            "4",
            "t",
        ], done.output
    finally:
        env.close()
    assert not (common / "planted").exists()
    assert sorted(p.name for p in wt.iterdir()) == [".git", "a.txt"]  # no .air, nothing made
