"""The suite's one git helper: runs the real git for a test's set-up and its reads, and writes
the files a test's project is made of (``write_files``, ``commit_files``).

Every call passes a fixed identity and no signing (``-c``), so a commit works on a machine
with no git configuration and never picks up the user's; a failing command fails the test
with git's stderr. Tests that need git to see no global configuration pass ``env``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false")
"""The ``-c`` options every call carries (an explicit ``-c`` in a call's args wins)."""


def git(cwd: Path | str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``git ARGS`` in ``cwd`` with the test identity and return its stdout, stripped.

    Raises:
        AssertionError: git exited non-zero (its stderr is in the message).
    """
    done = subprocess.run(
        ["git", *IDENTITY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else dict(env),
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)} in {cwd}: {done.stderr}"
    return done.stdout.strip()


def init_repo(root: Path, *, message: str | None = None, branch: str = "main") -> Path:
    """Make ``root`` (created if missing) a git repository on ``branch``; with ``message``,
    commit everything in it. Returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    if message is not None:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", message)
    return root


def commit_files(
    root: Path, files: Mapping[str, str | bytes], *, message: str = "init", branch: str = "main"
) -> Path:
    """``root`` (created if missing) holding ``files`` (``write_files``), made a repository on
    ``branch`` with them committed (``init_repo``). Returns ``root``."""
    write_files(root, files)
    return init_repo(root, message=message, branch=branch)


def with_submodules(
    root: Path, library: Path, places: tuple[str, ...], files: Mapping[str, str | bytes]
) -> Path:
    """``root`` (created if missing) holding ``files`` and the repository ``library`` as a
    checked-out submodule at each of ``places``, made a repository on ``main`` with all of it
    committed. Returns ``root``."""
    write_files(root, files)
    init_repo(root)
    for place in places:
        git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), place)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write each of ``files`` (relative path -> text, UTF-8, or bytes) under ``root``, making
    the directories on the way."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def git_stops(cwd: Path | str, *args: str) -> None:
    """Run ``git ARGS`` that is meant to stop (a conflict).

    Raises:
        AssertionError: git exited 0.
    """
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, capture_output=True, timeout=120, check=False
    )
    assert done.returncode != 0, f"git {' '.join(args)} in {cwd} did not stop: {done.stdout!r}"


def diverge(repo: Path, name: str, ours: str, theirs: str) -> None:
    """Branch ``theirs`` (from ``main``) and ``main`` each commit their own ``name``: merging
    one into the other conflicts there. ``repo`` is left on ``main``."""
    git(repo, "switch", "-q", "-c", "theirs")
    (repo / name).write_text(theirs)
    git(repo, "commit", "-q", "-am", "theirs")
    git(repo, "switch", "-q", "main")
    (repo / name).write_text(ours)
    git(repo, "commit", "-q", "-am", "ours")
