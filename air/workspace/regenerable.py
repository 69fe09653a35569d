"""Which directory trees a tool makes again: never merged back, never in a backup.

Owns ``regenerable`` (a directory is such a tree by its marker: ``CMakeCache.txt`` for a CMake
build directory, ``pyvenv.cfg`` for a Python virtualenv, a ``CACHEDIR.TAG`` with the Cache
Directory Tagging Specification's signature for a tagged cache such as Cargo's ``target/``) and
``untracked_regenerable`` (the ones a task made among a worktree's untracked directories). A
build a task ran through ``shell.run`` into a directory the project does not ignore would
otherwise be committed to the task's branch and merged into the user's history with its object
files and absolute paths; a snapshot would store it again after every rebuild. Standard library
only; blocking file work: callers run it in a thread.
"""

from __future__ import annotations

import os

from air.tree_walk import walk

__all__ = ["CACHEDIR_TAG", "regenerable", "untracked_regenerable"]

CACHEDIR_TAG = b"Signature: 8a477f597d28d172789f06886806bc55"
"""The first bytes of a ``CACHEDIR.TAG`` (the Cache Directory Tagging Specification)."""


def regenerable(dirpath: str, filenames: list[str]) -> bool:
    """Whether the directory at ``dirpath`` (holding ``filenames``) is a tree its tool makes
    again: a CMake build directory, a virtualenv or a tagged cache."""
    if "CMakeCache.txt" in filenames or "pyvenv.cfg" in filenames:
        return True
    if "CACHEDIR.TAG" not in filenames:
        return False
    # a task chose what is there: a FIFO would block the open (and the merge) until a writer
    # came (opened without blocking, it reads as empty), a link could name anything
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(os.path.join(dirpath, "CACHEDIR.TAG"), flags)
    except OSError:
        return False
    try:
        return os.read(fd, len(CACHEDIR_TAG)) == CACHEDIR_TAG
    except OSError:
        return False
    finally:
        os.close(fd)


def untracked_regenerable(root: str, untracked_dirs: list[str]) -> list[str]:
    """The regenerable trees in ``untracked_dirs`` (relative to ``root``, as ``git ls-files
    --others --directory`` names them, ``/``-separated), relative to ``root``, outermost only.
    A nested repository is not looked into (git keeps it as a gitlink)."""
    found: list[str] = []
    for top in untracked_dirs:
        for dirpath, dirnames, filenames in walk(os.path.join(root, top)):
            if regenerable(dirpath, filenames):
                dirnames[:] = []
                found.append(os.path.relpath(dirpath, root).replace(os.sep, "/"))
            elif ".git" in dirnames or ".git" in filenames:
                dirnames[:] = []
    return sorted(found)
