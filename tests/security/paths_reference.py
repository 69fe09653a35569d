"""The path classifier as it was before issue 28 precomputed what depends only on the home:
every home entry joined per path, every glob matched one by one, every relative part taken
with ``relpath`` and ``PurePosixPath``. Kept as the straightforward computation that
``test_path_precompute.py`` holds ``air.security.paths.PathClassifier`` to; the tables are
the live ones, so a rule added there is checked here too.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import PurePosixPath

from air.contracts.permission import PathCategory
from air.contracts.permission_records import PathRiskClassification
from air.security.paths import (
    _GLOB_TARGETS,
    BUILD_DIR_GLOBS,
    BUILD_DIR_NAMES,
    CREDENTIAL_DIRS,
    CREDENTIAL_GLOBS,
    CREDENTIAL_NAMES,
    CREDENTIAL_SUFFIXES,
    HARMLESS_DEVICES,
    NOT_CREDENTIAL,
    SHELL_RC_NAMES,
    SYSTEM_DIRS,
    SYSTEM_HOME_ENTRIES,
    is_within,
)

P = PathCategory


def _realpath(path: str) -> str | None:
    """``os.path.realpath`` that survives a link swapped while it walks (None after retries).

    ``realpath`` ``lstat``s then ``readlink``s each component; a concurrent swap between the two
    raises ``EINVAL``/``ENOENT`` instead of returning a path.
    """
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return None


def _norm_component(part: str) -> str:
    """Fold the tricks a case-insensitive or trailing-dot file system would honour."""
    return part.rstrip(". ").lower()


class ReferencePathClassifier:
    """Classify paths for permission checks (SDD §9.2 ``PathClassifier.classify``).

    Args:
        home: the user's home directory (defaults to ``$HOME``); ``~`` expands to it.
    """

    def __init__(self, *, home: str | None = None) -> None:
        self._home = os.path.realpath(home or os.path.expanduser("~"))

    @property
    def home(self) -> str:
        return self._home

    def expand(self, path: str, base: str) -> str | None:
        """Expand ``~`` and make ``path`` absolute against ``base``; None for dynamic paths
        (``$`` or a backquote after ``base``, or a NUL anywhere)."""
        own = path[len(base) :] if path.startswith(base.rstrip("/") + "/") else path
        if "\x00" in path or "$" in own or "`" in own:
            return None
        if path == "~" or path.startswith("~/"):
            path = self._home + path[1:]
        elif path.startswith("~"):
            expanded = os.path.expanduser(path)
            if expanded == path:
                return None
            path = expanded
        if not os.path.isabs(path):
            path = os.path.join(base, path)
        return path

    def classify(
        self,
        path: str,
        project_root: str,
        *,
        workspace_root: str | None = None,
        for_write: bool = False,
    ) -> PathRiskClassification:
        """Classify ``path`` (relative paths are relative to the workspace root).

        Args:
            path: the path as given by a tool input or a command.
            project_root: the project root.
            workspace_root: where the task works (a worktree may live under ``.air/local``);
                defaults to ``project_root``.
            for_write: also treat hardlinked files as escapes (a write would reach the other
                name).

        Returns:
            The category, the realpath, the reason and whether the path escapes the workspace.
        """

        project = os.path.realpath(project_root)
        workspace = os.path.realpath(workspace_root or project_root)
        absolute = self.expand(path, workspace)
        if absolute is None:
            return PathRiskClassification(
                path=path,
                resolved_path=None,
                category=P.UNKNOWN,
                reason="the path depends on an expansion or holds a NUL byte",
                escapes=True,
            )
        lexical = os.path.normpath(absolute)
        resolved_or_none = _realpath(absolute)
        if resolved_or_none is None:
            return PathRiskClassification(
                path=path,
                resolved_path=None,
                category=P.UNKNOWN,
                reason="the path changed while it was checked (a link is being swapped)",
                escapes=True,
                via_link=True,
            )
        resolved = resolved_or_none
        inside_lexical = is_within(lexical, workspace) or is_within(lexical, project)
        inside = is_within(resolved, workspace) or is_within(resolved, project)
        escapes = not inside
        reason_escape = ""
        if inside_lexical and not inside:
            reason_escape = "a symlink leads out of the workspace; "
        elif not inside and not os.path.isabs(path) and not path.startswith("~"):
            reason_escape = "'..' leads out of the workspace; "
        if inside and for_write:
            try:
                st = os.lstat(resolved)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                return PathRiskClassification(
                    path=path,
                    resolved_path=resolved,
                    category=P.UNKNOWN,
                    reason="the file has other hard links; a write could reach a file elsewhere",
                    escapes=True,
                    via_link=True,
                )

        def result(cat: PathCategory, why: str) -> PathRiskClassification:
            return PathRiskClassification(
                path=path,
                resolved_path=resolved,
                category=cat,
                reason=reason_escape + why,
                escapes=escapes,
                via_link=inside_lexical and not inside,
            )

        # Check both the name as given and the target: a link named `notes` pointing at
        # `~/.ssh/id_rsa` is a credential, and a link named `.env` is one too.
        for candidate in (resolved, lexical):
            cred = self._credential_reason(candidate)
            if cred:
                return result(P.CREDENTIALS, cred)
        for candidate in (resolved, lexical):
            within = is_within(candidate, workspace) or is_within(candidate, project)
            sens = self._system_reason(candidate, within=within)
            if sens:
                return result(P.SYSTEM_SENSITIVE, sens)
        for candidate in (resolved, lexical):
            root = workspace if is_within(candidate, workspace) else project
            if not is_within(candidate, root):
                continue
            parts = [
                _norm_component(p) for p in PurePosixPath(os.path.relpath(candidate, root)).parts
            ]
            if ".git" in parts:
                return result(P.PROJECT_GIT_INTERNAL, "inside .git")
            if parts and parts[0] == ".air":
                return result(P.AIR_INTERNAL, "inside the project's .air directory")
        air_home = os.path.join(self._home, ".air")
        if is_within(resolved, air_home) or is_within(lexical, air_home):
            return result(P.AIR_INTERNAL, "inside ~/.air")
        if escapes:
            return result(P.OUTSIDE_PROJECT, "outside the project and its workspace")
        root = workspace if is_within(resolved, workspace) else project
        rel_parts = PurePosixPath(os.path.relpath(resolved, root)).parts
        for part in rel_parts[:-1] if rel_parts and not os.path.isdir(resolved) else rel_parts:
            if part in BUILD_DIR_NAMES or any(
                fnmatch.fnmatchcase(part, g) for g in BUILD_DIR_GLOBS
            ):
                return result(P.PROJECT_BUILD_OUTPUT, f"inside the build directory {part}")
        return result(P.PROJECT_SOURCE, "inside the workspace")

    def _credential_reason(self, path: str) -> str:
        name = os.path.basename(path)
        if name in NOT_CREDENTIAL:
            return ""
        if name in CREDENTIAL_NAMES or any(fnmatch.fnmatchcase(name, g) for g in CREDENTIAL_GLOBS):
            return f"{name} holds credentials"
        for d in CREDENTIAL_DIRS:
            if is_within(path, os.path.join(self._home, d)):
                return f"inside ~/{d}"
        parts = PurePosixPath(path).parts
        if path.endswith("/**"):
            why = self._tree_reason(path[:-3] or "/")
            if why:
                return why
        if path.startswith("/proc/") and name in ("environ", "mem"):
            return f"{path} holds a process's environment or memory (API keys)"
        if any(ch in path for ch in "*?["):
            why = self._glob_reason(parts)
            if why:
                return why
        if ".ssh" in parts or ".gnupg" in parts or ".aws" in parts or ".password-store" in parts:
            return "inside a credentials directory"
        for i in range(len(parts) - 1):
            if (parts[i], parts[i + 1]) in CREDENTIAL_SUFFIXES:
                return f"{parts[i]}/{parts[i + 1]} holds credentials"
        return ""

    def _tree_reason(self, top: str) -> str:
        """A whole-tree read of ``top`` (``tar czf x ~``) reaches the credentials below it."""
        top = os.path.normpath(top)
        for entry in (*(os.path.join(self._home, d) for d in CREDENTIAL_DIRS), "/etc/shadow"):
            if entry != top and is_within(entry, top):
                return f"reading all of {top} includes {entry}"
        return ""

    def _glob_reason(self, parts: tuple[str, ...]) -> str:
        """A wildcard directly under a home, ``/etc`` or ``/root`` that can match a credential.

        Bash's ``*`` and ``?`` do not match a leading dot, so ``~/*`` does not reach ``~/.ssh``
        but ``~/.*`` and ``~/.s?h`` do.
        """
        homes = {self._home, "/etc", "/root", "/etc/ssh"}
        for i, part in enumerate(parts[1:], start=1):  # parts[0] is "/": paths are absolute
            if not any(ch in part for ch in "*?["):
                continue
            parent = os.path.join(*parts[:i])
            if parent not in homes and os.path.dirname(parent) != "/home":
                continue
            for name in _GLOB_TARGETS:
                # Home entries are dot-names (a bare `*` skips them); /etc ones are not.
                if name.startswith(".") != (parent not in ("/etc", "/etc/ssh")) or (
                    name.startswith(".") and not part.startswith(".")
                ):
                    continue
                if fnmatch.fnmatchcase(name, part):
                    return f"{os.path.join(parent, part)} can match {name}"
        return ""

    def _system_reason(self, path: str, *, within: bool) -> str:
        if path in HARMLESS_DEVICES:
            return ""
        name = os.path.basename(path)
        if name in SHELL_RC_NAMES:
            return f"{name} is a shell start-up file"
        if within or path.startswith("/tmp/") or path == "/tmp" or path.startswith("/var/tmp"):
            return ""
        for d in SYSTEM_DIRS:
            # A home under a system directory (/var/lib/jenkins) unflags only itself.
            if is_within(path, d) and not is_within(path, self._home):
                return f"inside the system directory {d}"
        for entry in SYSTEM_HOME_ENTRIES:
            if is_within(path, os.path.join(self._home, entry)):
                return f"~/{entry} changes what runs at login"
        if path == "/" or path == self._home:
            return "a file-system or home root"
        return ""
