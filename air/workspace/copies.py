"""The ``isolated_copy`` strategy's files: copy the project out, list what changed, copy back.

Owns: the hash manifest of a tree (sha256 per regular file, ``link:<target>`` per symlink,
never followed), the copy of a project without ``.git``/``.air`` and build caches
(``JUNK_DIRS``, which no strategy ever merges back), the copy's changes against its manifest,
and the file-by-file copy back, where a file changed on both sides (or one below a directory
link of the project) is a conflict and nothing is written; what it writes it writes under
names of its own, in directories opened a level at a time below the project (one a command
swapped for a link since stops the merge, nothing written through it), with the modes git
gives (0755 or 0644), and a copy back a crash cut short
can be done again (a file already copied is no conflict) once its temporary files are
dropped. Blocking file work: callers run these in a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable

from air.contracts.error import AirException, ErrorKind
from air.tree_walk import dir_beneath, walk
from air.workspace.changes import SYMLINK, PathChange
from air.workspace.regenerable import regenerable

__all__ = [
    "JUNK_DIRS",
    "copy_back",
    "copy_project",
    "drop_copy_back_temps",
    "entry_hash",
    "manifest_changes",
    "tree_manifest",
]

_COPY_IGNORE = (".git", ".air")
_TEMP = ".air-merge.tmp"
"""How a merge's temporary files end (``air.workspace.backups`` leaves them out)."""
JUNK_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Build/cache directories an isolated copy neither copies nor merges back, and that a
worktree's commit leaves out."""


def _hash_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def entry_hash(path: str) -> str | None:
    """A manifest entry: a regular file's sha256, ``link:<target>`` for a symlink (never
    followed), None for anything else or nothing."""
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    return _hash_file(path) if os.path.isfile(path) else None


def tree_manifest(root: str, known: dict[str, str] | None = None) -> dict[str, str]:
    """Every file and link under ``root`` (relative path -> ``entry_hash``), without ``.git`` and
    ``.air`` at the top, build caches, bytecode and the trees a tool makes again below the top
    (``air.workspace.regenerable``) — unless ``known`` (the manifest the copy was made with)
    has a file there: a marker a task planted in a directory of the project never hides that
    directory's files (they would read as deleted, and a merge would delete them)."""
    held = _directories_of(known or {})
    manifest: dict[str, str] = {}
    for dirpath, dirnames, filenames in walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir != "." and rel_dir not in held and regenerable(dirpath, filenames):
            dirnames[:] = []  # a build tree, virtualenv or tagged cache: never merged back
            continue
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in _COPY_IGNORE]
        dirnames[:] = [d for d in dirnames if d not in JUNK_DIRS]
        # a link to a directory is listed among the directories (never entered): it is an
        # entry of its own, as git keeps it, or one a task made would never be merged back
        for name in [*filenames, *_dir_links(dirpath, dirnames)]:
            if name.endswith((".pyc", ".pyo")):
                continue
            digest = entry_hash(os.path.join(dirpath, name))
            if digest is not None:
                manifest[os.path.normpath(os.path.join(rel_dir, name))] = digest
    return manifest


def _dir_links(dirpath: str, dirnames: list[str]) -> list[str]:
    """The links among a walk's ``dirnames`` (listed there, never entered): entries of their own."""
    return [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]


def _directories_of(manifest: dict[str, str]) -> set[str]:
    """Every directory (relative, ``os.sep``-separated) holding a file of ``manifest``."""
    held: set[str] = set()
    for rel in manifest:
        parent = os.path.dirname(rel)
        while parent and parent not in held:
            held.add(parent)
            parent = os.path.dirname(parent)
    return held


def copy_project(
    project_root: str, dest: str, *, leave_out: Callable[[str], bool] | None = None
) -> dict[str, str]:
    """Copy the project to ``dest`` (symlinks as links; a FIFO, socket or device is left out:
    opening a FIFO waits for a writer, a socket cannot be opened) and return the copy's
    manifest. Directories are made a level at a time (``copytree`` recursed once per level: a
    tree a task had merged 1,500 deep ended the next copy with ``RecursionError``). A path
    ``leave_out`` names (relative, ``/``-separated: the task's denied paths) is not copied, nor
    anything below it: no command of the task reads it, and nothing of it is merged back.

    Raises:
        OSError: the first file's failure as it was.
    """
    made: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in walk(project_root):
        rel = os.path.relpath(dirpath, project_root)
        target = dest if rel == "." else os.path.join(dest, rel)
        if rel == ".":
            os.makedirs(target)
        else:
            os.mkdir(target)
        made.append((dirpath, target))
        dirnames[:] = [
            d
            for d in dirnames
            if not ((rel == "." and d in _COPY_IGNORE) or d in JUNK_DIRS)
            and not (leave_out and leave_out(_posix(rel, d)))
        ]
        for name in sorted(filenames) + _dir_links(dirpath, dirnames):
            if rel == "." and name in _COPY_IGNORE:
                continue
            if leave_out and leave_out(_posix(rel, name)):
                continue
            source = os.path.join(dirpath, name)
            info = os.lstat(source)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(source), os.path.join(target, name))
            elif stat.S_ISREG(info.st_mode):  # a FIFO, socket or device holds no content
                shutil.copy2(source, os.path.join(target, name))
    for source, target in reversed(made):  # as copytree: modes and times once filled
        shutil.copystat(source, target)
    return tree_manifest(dest)


def _posix(rel_dir: str, name: str) -> str:
    """``name`` in the directory ``rel_dir`` (relative to the project), ``/``-separated."""
    return name if rel_dir == "." else "/".join([*rel_dir.split(os.sep), name])


def _mode(digest: str | None) -> str:
    if digest is None:
        return "000000"
    return SYMLINK if digest.startswith("link:") else "100644"


def manifest_changes(manifest: dict[str, str], path: str) -> list[PathChange]:
    """The copy at ``path`` against its ``manifest``: added, deleted and modified paths (a
    symlink is reported as one, with its target)."""
    now = tree_manifest(path, manifest)
    changes = []
    for rel in sorted(set(now) | set(manifest)):
        old, new = manifest.get(rel), now.get(rel)
        if old == new:
            continue
        status = "A" if old is None else "D" if new is None else "M"
        target = new[len("link:") :] if new and new.startswith("link:") else None
        changes.append(PathChange(rel, status, _mode(old), _mode(new), link_target=target))
    return changes


def copy_back(
    project_root: str, copy: str, manifest: dict[str, str], changed: list[str]
) -> list[str]:
    """Copy the ``changed`` paths from ``copy`` into the project, each by an atomic rename
    from a temporary name of this process's own (``O_EXCL``: never a link someone planted by
    a predictable name). A file's mode is what a git merge gives it, 0755 when its owner may
    execute it, else 0644: never a set-id bit (a task's command run as root writes root's
    files), nor one that lets others write.

    Returns:
        The conflicts (a path the project changed too since the copy was made, or one below a
        directory of the project that is a link: written there, it would land elsewhere);
        when there is one, nothing was written.
    """
    conflicts = []
    for rel in changed:
        if _below_a_link(project_root, rel):
            conflicts.append(rel)
            continue
        current = entry_hash(os.path.join(project_root, rel))
        if current != manifest.get(rel) and current != entry_hash(os.path.join(copy, rel)):
            conflicts.append(rel)
    if conflicts:
        return conflicts
    for rel in changed:
        _write_back(os.path.realpath(project_root), copy, rel)
    return []


def _write_back(project: str, copy: str, rel: str) -> None:
    """``rel`` of ``copy`` (the task's, its commands ended) written into ``project``, in the
    directory reached a component at a time without following a link (``dir_beneath``): one a
    command of another task (``--isolation main``, another session) swapped for a link since
    ``copy_back``'s check is refused, nothing written through it.

    Raises:
        AirException: ``workspace_error`` when a link or a file is in the way now.
    """
    parent, name = os.path.split(rel)
    source = os.path.join(copy, rel)
    try:
        mode = os.lstat(source).st_mode
    except FileNotFoundError:
        mode = 0
    written = stat.S_ISLNK(mode) or stat.S_ISREG(mode)
    try:
        here = dir_beneath(project, parent.split(os.sep) if parent else [], make=written)
    except FileNotFoundError:
        return  # deleted in the copy, its directory gone from the project too
    except NotADirectoryError as exc:
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=f"{rel} was not merged: {exc.filename!r} on its way in the project is a "
            "link or a file now; nothing was written through it",
            user_action="See what changed that directory of the project, then run the task "
            "again (its copy is kept as it is).",
        ) from exc
    try:
        if stat.S_ISLNK(mode):  # checked: it stays inside the project
            _link_over(os.readlink(source), name, here)
        elif written:
            _copy_over(source, name, here)
        else:
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISDIR(os.lstat(name, dir_fd=here).st_mode):
                    os.unlink(name, dir_fd=here)  # a link to a directory too, never what it names
    finally:
        os.close(here)


def drop_copy_back_temps(project_root: str, changed: list[str]) -> list[str]:
    """Remove the temporary files a copy back cut short (a crash) left beside the ``changed``
    paths in the project (names of air's own: ``.<random>.air-merge.tmp``), none below a
    directory link; the caller holds the project's ``TREE`` lock, so no copy back is under
    way. Returns what it removed (relative paths)."""
    removed = []
    project = os.path.realpath(project_root)
    for parent in sorted({os.path.dirname(rel) for rel in changed}):
        try:  # a directory reached without following a link (``parent`` itself too)
            here = dir_beneath(project, parent.split(os.sep) if parent else [])
        except OSError:
            continue
        try:
            for name in os.listdir(here):
                if name.startswith(".") and name.endswith(_TEMP):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=here)
                        removed.append(os.path.join(parent, name))
        finally:
            os.close(here)
    return removed


def _below_a_link(root: str, rel: str) -> bool:
    """Whether a directory on the way to ``rel`` in ``root`` is a symbolic link."""
    parent = os.path.dirname(rel)
    while parent:
        if os.path.islink(os.path.join(root, parent)):
            return True
        parent = os.path.dirname(parent)
    return False


def _temp_name() -> str:
    """A name of this process's own for a file it puts in place (``.<random>.air-merge.tmp``)."""
    return f".{secrets.token_hex(8)}{_TEMP}"


def _temporary(here: int) -> tuple[int, str]:
    """A new file in the directory ``here`` under a name of this process's own (``O_EXCL``),
    open for writing."""
    while True:
        tmp = _temp_name()
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(tmp, flags, 0o600, dir_fd=here), tmp
        except FileExistsError:
            continue


def _copy_over(source: str, name: str, here: int) -> None:
    """``source``'s bytes and times over ``name`` in the directory ``here``, 0755 or 0644 as
    git would make it."""
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(src)
        fd, tmp = _temporary(here)
        try:
            with open(fd, "wb") as out, open(src, "rb", closefd=False) as data:
                shutil.copyfileobj(data, out)
                os.fchmod(out.fileno(), 0o755 if info.st_mode & stat.S_IXUSR else 0o644)
                out.flush()
                os.utime(out.fileno(), ns=(info.st_atime_ns, info.st_mtime_ns))
            os.replace(tmp, name, src_dir_fd=here, dst_dir_fd=here)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=here)
            raise
    finally:
        os.close(src)


def _link_over(link_target: str, name: str, here: int) -> None:
    """A symbolic link to ``link_target`` over ``name`` in the directory ``here``."""
    while True:
        tmp = _temp_name()
        try:
            os.symlink(link_target, tmp, dir_fd=here)
        except FileExistsError:
            continue
        break
    try:
        os.replace(tmp, name, src_dir_fd=here, dst_dir_fd=here)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=here)
        raise
