"""``git apply``, hardened, on a private copy of the files a patch names (``fs.patch``).

Owns ``git_apply_command`` (git with hooks, fsmonitor and attributes switched off), the
environment it runs in (no system or global config, an empty HOME, no repository discovery) and
``apply_in_copy`` (copy the checked paths out of the workspace through the O_NOFOLLOW walk, a
CRLF file with LF line breaks when the patch has none, let git apply the patch there, and return
what it changed, refusing any change outside the checked paths, a deletion, a rename, a mode or
a link). Writing the result back is ``air.tools.fs``'s.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile

from air.contracts.error import AirException, ErrorKind
from air.search_path import absolute_search_path
from air.tools.safefs import read_beneath
from air.tools.text_form import crlf_bytes, form_of, to_lf
from air.tree_walk import make_dirs, walk

__all__ = ["apply_in_copy", "git_apply_command"]

_GIT_TIMEOUT = 30.0


def _bad(message: str, action: str) -> AirException:
    return AirException.of(kind=ErrorKind.TOOL_ERROR, message=message, user_action=action)


def _git_apply_env(home: str) -> dict[str, str]:
    """No system/global config, an empty HOME, no repository discovery above the copy."""
    return {
        "PATH": absolute_search_path(os.environ.get("PATH")),
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": os.path.dirname(home),
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }


def git_apply_command(*extra: str) -> list[str]:
    """``git apply`` with everything a repository or config could inject switched off."""
    return [
        "git",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.attributesFile=/dev/null",
        "apply",
        *extra,
        "-",
    ]


def _run_git_apply(work: str, home: str, patch: bytes, *extra: str) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            git_apply_command(*extra),
            input=patch,
            cwd=work,
            env=_git_apply_env(home),
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as exc:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message="git is not installed; fs.patch applies patches with git apply",
            user_action="Install git, or use fs.edit.",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise _bad("git apply did not finish", "Send a smaller patch.") from exc
    return done.returncode == 0, done.stderr.decode("utf-8", "replace").strip()


def _snapshot_tree(work: str) -> dict[str, tuple[bytes | None, int]]:
    """Every entry under ``work``: regular files' bytes and modes (None for anything else)."""
    out: dict[str, tuple[bytes | None, int]] = {}
    for dirpath, dirnames, filenames in walk(work):
        for name in [
            *filenames,
            *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d))),
        ]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, work)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    out[rel] = (fh.read(), stat.S_IMODE(st.st_mode))
            else:
                out[rel] = (None, st.st_mode)
    return out


def apply_in_copy(
    root: str, patch: str, paths: list[str], allow_partial: bool
) -> tuple[dict[str, tuple[bytes | None, bytes]], dict[str, str]]:
    """Run ``git apply`` on a private copy of ``paths`` and return what it changed.

    The files are copied out of the workspace through the O_NOFOLLOW walk into a fresh
    directory outside any repository; git runs there with no config, hooks or attributes.

    Returns:
        ({path: (before, after)} for every changed file, {path: git's error} for rejected
        files).

    Raises:
        AirException: git changed a path the permission check did not judge, deleted or
            renamed a file, set a mode or made a link (fs.patch writes file contents only).
    """
    originals: dict[str, bytes | None] = {}
    with tempfile.TemporaryDirectory(prefix="air-patch-") as tmp:
        work = os.path.join(tmp, "tree")
        home = os.path.join(tmp, "home")
        os.mkdir(work, 0o700)
        os.mkdir(home, 0o700)
        lf_copies: set[str] = set()
        for rel in paths:
            data = read_beneath(root, rel)
            originals[rel] = data
            if data is None:
                continue
            if "\r" not in patch and form_of(data).line_breaks == "crlf":
                # a patch written with LF line breaks, a file with CRLF ones (IMPL-FS-5)
                data = to_lf(data)
                lf_copies.add(rel)
            dest = os.path.join(work, rel)
            make_dirs(os.path.dirname(dest))
            with open(dest, "wb") as fh:
                fh.write(data)
            os.chmod(dest, 0o644)
        before = _snapshot_tree(work)
        body = patch.encode("utf-8")
        rejected: dict[str, str] = {}
        ok, err = _run_git_apply(work, home, body)
        if not ok:
            if not allow_partial:
                for rel in paths:
                    if not _run_git_apply(work, home, body, "--check", f"--include={rel}")[0]:
                        rejected[rel] = err
                return {}, rejected or {p: err for p in paths}
            for rel in paths:
                good, why = _run_git_apply(work, home, body, f"--include={rel}")
                if not good:
                    rejected[rel] = why
        after = _snapshot_tree(work)
    changed: dict[str, tuple[bytes | None, bytes]] = {}
    for rel in sorted(set(before) | set(after)):
        old_entry, new_entry = before.get(rel), after.get(rel)
        if old_entry == new_entry:
            continue
        if os.path.normpath(rel) not in paths:
            raise _bad(
                f"git apply changed {rel}, which is not among the patch's checked paths",
                "Send a plain unified diff whose ---/+++ lines name every file it changes.",
            )
        if new_entry is None:
            raise _bad(
                f"{rel}: deleting or renaming files with fs.patch is not supported",
                "Use shell.run with rm or git mv (asks).",
            )
        content, mode = new_entry
        if content is None or mode & 0o111:
            raise _bad(
                f"{rel}: fs.patch writes file contents only (no links, no mode changes)",
                "Drop the mode/symlink change from the patch; use shell.run chmod (asks).",
            )
        if rel in lf_copies:
            content = crlf_bytes(content)
        changed[rel] = (originals.get(rel), content)
    return changed, rejected
