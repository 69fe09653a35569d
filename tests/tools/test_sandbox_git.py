"""The workspace's git metadata is read-only inside the sandbox (issue 9 item 1, sandbox half).

A plain repository's ``.git`` directory and a worktree's ``.git`` file plus the main
repository's git dir are bound read-only: ``git status``/``diff``/``log`` work inside, while
``git config``, hooks, info, refs, HEAD and the ``.git`` entry itself cannot be written, moved
or removed (git state changes go through the parent's hardened ``git.commit``). A ``.git`` file
that does not lead to a real worktree of a repository exposes nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gitrepo import git
from tests.tools.sandbox_probe import Sandboxed, chown_tree

_SAFE = ("-c", "safe.directory=*")
"""The trees are chowned to the sandbox's user; root's own git calls must still read them."""


def _fails(box: Sandboxed, command: str, workspace: Path | None = None) -> None:
    out = box.run(command, workspace)
    assert out["exit_code"] != 0, (command, out)


def _ok(box: Sandboxed, command: str, workspace: Path | None = None) -> str:
    out = box.run(command, workspace)
    assert out["exit_code"] == 0, (command, out)
    return str(out["stdout"])


def _snapshot(gitdir: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(gitdir.rglob("*")) if p.is_file()}


def test_a_repository_git_dir_is_read_only(box: Sandboxed) -> None:
    ws = box.workspace
    (ws / "app.py").write_text("print(1)\n")
    git(ws, *_SAFE, "add", "app.py")
    git(ws, *_SAFE, "commit", "-qm", "one")
    (ws / "app.py").write_text("print(2)\n")
    if box.unprivileged:
        chown_tree(box.base)
    before = _snapshot(ws / ".git")
    assert _ok(box, "git status --porcelain") == " M app.py\n"
    assert "+print(2)" in _ok(box, "git diff")
    assert "one" in _ok(box, "git log --oneline")
    for command in (
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "echo '#!/bin/sh' > .git/hooks/pre-commit",
        "echo '* filter=x' > .git/info/attributes",
        ": >> .git/config",
        "echo 0000 > .git/HEAD",
        "git add app.py",
        "git commit -qam two",
        "mv .git moved",
        "rm -rf .git",
        "echo 'gitdir: /tmp' > .git",
    ):
        _fails(box, command)
    assert _snapshot(ws / ".git") == before
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert (ws / "app.py").read_text() == "print(2)\n"  # the work tree itself stays writable
    _ok(box, "echo 'print(3)' > app.py")
    assert (ws / "app.py").read_text() == "print(3)\n"


def test_a_worktree_sees_its_repository_read_only_and_cannot_repoint_dot_git(
    box: Sandboxed,
) -> None:
    main = box.base / "main"
    main.mkdir()
    git(main, *_SAFE, "init", "-q")
    (main / "a.txt").write_text("one\n")
    (main / "private.txt").write_text("AIRSBXSECRETMAINCHECKOUT\n")
    git(main, *_SAFE, "add", "a.txt")
    git(main, *_SAFE, "commit", "-qm", "base")
    wt = main / ".air" / "local" / "worktrees" / "ws1"
    git(main, *_SAFE, "worktree", "add", "-q", "-b", "air/ws/ws1", str(wt))
    (wt / "a.txt").write_text("two\n")
    if box.unprivileged:
        chown_tree(box.base)
    dot_git = (wt / ".git").read_bytes()
    before = _snapshot(main / ".git")
    assert _ok(box, "git status --porcelain", wt) == " M a.txt\n"
    assert "+two" in _ok(box, "git diff", wt)
    assert "base" in _ok(box, "git log --oneline", wt)
    gitdir = main / ".git"
    for command in (
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "git config --worktree core.fsmonitor x",
        "echo 'gitdir: /tmp/evil' > .git",
        "rm -f .git",
        "mv .git moved",
        f"echo '#!/bin/sh' > {gitdir}/hooks/post-commit",
        f": >> {gitdir}/config",
        f"echo '* diff=x' > {gitdir}/info/attributes",
        f": >> {gitdir}/worktrees/ws1/HEAD",
        f": >> {gitdir}/worktrees/ws1/gitdir",
        "git add a.txt",
        "git update-ref refs/heads/master HEAD",
        f"cat {main}/private.txt",
    ):
        _fails(box, command, wt)
    assert (wt / ".git").read_bytes() == dot_git
    assert _snapshot(main / ".git") == before
    assert "fsmonitor" not in (gitdir / "config").read_text()


def test_a_dot_git_file_that_is_no_worktree_exposes_nothing(box: Sandboxed) -> None:
    outside = box.base / "outside"
    (outside / "worktrees" / "x").mkdir(parents=True)
    (outside / "objects").mkdir()
    (outside / "HEAD").write_text("ref: refs/heads/main\n")
    (outside / "secret.txt").write_text("AIRSBXSECRETOUTSIDE\n")
    (outside / "worktrees" / "x" / "commondir").write_text("../../../elsewhere\n")
    ws = box.workspace
    subprocess.run(["rm", "-rf", str(ws / ".git")], check=True)
    (ws / ".git").write_text(f"gitdir: {outside}/worktrees/x\n")
    if box.unprivileged:
        chown_tree(box.base)
    out = box.run(f"cat {outside}/secret.txt; ls {outside}")
    assert out["exit_code"] != 0
    assert "AIRSBXSECRET" not in f"{out['stdout']}{out['stderr']}"
    _fails(box, "echo 'gitdir: /tmp/evil' > .git")
