"""ProjectStore: find, create and open an air project on disk (SDD §6.1, baselines §A.1).

Owns the ``.air/shared`` (git-shareable: project.json, permissions.yaml, rules/, plan/) and
``.air/local`` (gitignored: sessions/, state/, backups/, workspaces/, tmp/, locks/) trees,
``project.json`` (a stable UUID ``project_id`` generated once, never derived from the path) and
the ``.air/local/`` entry of the project's ``.gitignore``. Initialising records no event: there
is no session DB until a session opens. Opening (initialising ends with it) marks ``.air/local``
as air's own here when it is new (``air.session.local_owner``); what uses the state refuses
another's.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from air.contracts.display import shown
from air.contracts.error import AirException
from air.contracts.ids import new_uuid, utc_now_iso
from air.contracts.project import PROJECT_SCHEMA_VERSION, ProjectContext, ProjectInitOptions
from air.session.local_owner import mark_local_state
from air.session.local_state import LOCAL_DIRS, SHARED_DIRS, check_local_state, home_or_above
from air.small_file import MAX_BYTES, read_small

__all__ = [
    "GITIGNORE_ENTRY",
    "PROJECT_RULES",
    "TOOLCHAIN_RULES",
    "ProjectStore",
    "not_text_path",
]

GITIGNORE_ENTRY = ".air/local/"

_PERMISSIONS_STUB = """\
# air permission rules for this project (shared with the team through git).
# Each rule: {action: allow|ask|deny, tool?, path?, command?, category?, sensitive?, reason?}
# Deny wins; an allow never lifts a task-scope block or a sensitive item.
# Example:
# rules:
#   - action: allow
#     command: "make test"
#     reason: the test suite is safe to run
"""

PROJECT_RULES = """\
# Project rules

Rules every agent working on this project follows. Keep them short and concrete.
"""

TOOLCHAIN_RULES = """\
# Toolchain rules

How to build and test this project (commands, environment, known quirks).
"""


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _write_new(path: Path, text: str) -> None:
    """``text`` as a new file at ``path``; whatever is there already is kept and never followed
    (a repository's ``.air/shared/permissions.yaml -> ~/.bash_profile``, dangling, had air
    create that file)."""
    try:
        fd = os.open(path, _NEW, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _text_root(root: Path) -> None:
    """Refuse a project whose path is no UTF-8 text: air records paths as text (events, IPC,
    logs), and a directory named in Latin-1 ended ``air doctor`` and ``air demo`` with a
    traceback (its bytes decode to surrogates nothing can encode)."""
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        raise not_text_path("the project's path", str(root)) from None


def not_text_path(what: str, path: str) -> AirException:
    """The refusal of ``path`` (``what`` it is), which holds bytes that are no UTF-8."""
    return AirException.of(
        kind="validation_error",
        message=f"{what} {shown(path)} is not UTF-8 text",
        user_action="Rename the directory (or the one above it whose name is not UTF-8) to "
        "a UTF-8 name (convmv -f latin1 -t utf8 renames it), then run air again.",
    )


def _below_home(root: Path) -> None:
    """Refuse the user's home directory, or a directory above it, as a project. air keeps its
    own settings in ``~/.air`` (a home's project state would share that directory with the
    trust list and the models' configuration), and a task's workspace is the project: in a
    home every task would work among the user's keys and tokens, and a writer in a folder
    without git would copy the whole home into its workspace."""
    home = home_or_above(str(root))
    if home is None:
        return
    real = os.path.realpath(root)
    where = "your home directory" if real == home else f"above your home directory ({home})"
    raise AirException.of(
        kind="validation_error",
        message=f"{shown(str(root))} is {where}: air does not take it as a project",
        user_action=(
            "Run air in a project's own folder (cd into it, or pass --project PATH). An earlier "
            "air's .air/shared and .air/local there are not air's settings and can be removed."
        ),
    )


class ProjectStore:
    """Locate, initialise and open air projects (see the module docstring)."""

    def locate(self, start_path: str | os.PathLike[str]) -> ProjectContext | None:
        """Walk up from ``start_path`` to the nearest directory with ``.air/shared/project.json``.

        The walk stops below the user's home directory (which is no project's place: started
        there, ``open`` refuses it).

        Returns:
            Its ProjectContext, or None when no ancestor is an air project.

        Raises:
            AirException: ``config_error`` when a project.json is found but unreadable.
        """
        current = Path(os.path.abspath(start_path))
        if current.is_file():
            current = current.parent
        for candidate in (current, *current.parents):
            if candidate != current and home_or_above(str(candidate)) is not None:
                return None  # the walk ends below the home: never every folder's project
            if (candidate / ".air" / "shared" / "project.json").is_file():
                return self.open(candidate)
        return None

    def initialize(
        self,
        project_root: str | os.PathLike[str],
        options: ProjectInitOptions | None = None,
    ) -> ProjectContext:
        """Create the ``.air`` trees under ``project_root`` (idempotent: keeps an existing id).

        Raises:
            AirException: ``not_found`` when the root is not a directory; ``storage_error``
                when the trees cannot be written; ``untrusted_config`` when one of air's own
                directories is a link (``check_local_state``).
        """
        options = options or ProjectInitOptions()
        root = Path(os.path.abspath(project_root))
        _text_root(root)
        _below_home(root)
        if not root.is_dir():
            raise AirException.of(
                kind="not_found",
                message=f"{root} is not a directory",
                user_action="Create the directory first, or pass an existing one.",
            )
        check_local_state(str(root))  # before anything is made through a link the project ships
        shared = root / ".air" / "shared"
        local = root / ".air" / "local"
        try:
            for sub in SHARED_DIRS:
                (shared / sub).mkdir(parents=True, exist_ok=True)
            for sub in LOCAL_DIRS:
                (local / sub).mkdir(parents=True, exist_ok=True)
            project_json = shared / "project.json"
            if not project_json.exists():
                data = {
                    "project_id": new_uuid(),
                    "name": options.name or root.name,
                    "schema_version": PROJECT_SCHEMA_VERSION,
                    "created_at": utc_now_iso(),
                }
                tmp = project_json.with_name(f".project.json.{os.getpid()}.tmp")
                tmp.unlink(missing_ok=True)  # a crashed init's (or a link a repository put)
                _write_new(tmp, json.dumps(data, indent=2) + "\n")
                try:
                    # made whole or not at all, and only once: of two airs starting in a new
                    # project at once, the second keeps the first's id (its sessions' ids)
                    os.link(tmp, project_json)
                except FileExistsError:
                    pass
                except OSError:  # no hard links on this file system (FAT, some mounts)
                    if not project_json.exists():
                        os.replace(tmp, project_json)
                finally:
                    tmp.unlink(missing_ok=True)
            _write_new(shared / "permissions.yaml", _PERMISSIONS_STUB)
            if options.default_rules:
                _write_new(shared / "rules" / "project-rules.md", PROJECT_RULES)
                _write_new(shared / "rules" / "toolchain-rules.md", TOOLCHAIN_RULES)
            if options.update_gitignore:
                self._ensure_gitignore(root)
        except OSError as exc:
            raise AirException.of(
                kind="storage_error",
                message=f"cannot initialise an air project in {root}",
                detail=str(exc),
                user_action="Check that the directory is writable and the disk is not full.",
            ) from exc
        return self.open(root)

    def open(self, project_root: str | os.PathLike[str]) -> ProjectContext:
        """Load the ProjectContext of an initialised project.

        Raises:
            AirException: ``not_found`` when ``.air/shared/project.json`` is absent;
                ``config_error`` when it is unreadable or newer than this air;
                ``untrusted_config`` when one of air's own directories is a link
                (``check_local_state``).
        """
        root = Path(os.path.abspath(project_root))
        _text_root(root)
        _below_home(root)
        check_local_state(str(root))
        project_json = root / ".air" / "shared" / "project.json"
        if not project_json.is_file():
            raise AirException.of(
                kind="not_found",
                message=f"{root} is not an air project (no .air/shared/project.json)",
                user_action="Run `air init` in the project directory first.",
            )
        try:
            data: Any = json.loads(read_small(project_json))
            project_id = str(data["project_id"])
            version = int(data.get("schema_version", PROJECT_SCHEMA_VERSION))
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise AirException.of(
                kind="config_error",
                message=f"{project_json} is not a valid project file",
                detail=str(exc),
                user_action="Restore .air/shared/project.json from git, or re-run `air init`.",
            ) from exc
        if version > PROJECT_SCHEMA_VERSION:
            raise AirException.of(
                kind="schema_error",
                message=f"{project_json} has schema_version {version}, newer than this air",
                user_action="Upgrade air to open this project.",
            )
        try:  # what air writes under .air/local from here on is marked as recorded here
            mark_local_state(str(root))
        except OSError:
            pass  # a read-only project: nothing will be written there either
        return ProjectContext(
            project_id=project_id,
            project_root=str(root),
            shared_root=str(root / ".air" / "shared"),
            local_root=str(root / ".air" / "local"),
            name=str(data.get("name") or root.name),
            schema_version=version,
        )

    @staticmethod
    def _ensure_gitignore(root: Path) -> None:
        """``GITIGNORE_ENTRY`` added to the project's ``.gitignore`` (made if there is none). A
        link there is left alone: git never follows one (2.32+), and air would append to the
        file it names."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(root / ".gitignore", flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)  # a FIFO would never end a read: left alone
            return
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            if info.st_size > MAX_BYTES:  # appended to unread (IMPL-TRUST-5)
                last = os.pread(fd, 1, info.st_size - 1)
                handle.seek(0, os.SEEK_END)
                handle.write(("" if last == b"\n" else "\n") + GITIGNORE_ENTRY + "\n")
                return
            text = handle.read()
            lines = {line.strip() for line in text.splitlines()}
            if {GITIGNORE_ENTRY, "/.air/local/", ".air/local"} & lines:
                return
            handle.write(
                ("\n" if text and not text.endswith("\n") else "") + GITIGNORE_ENTRY + "\n"
            )
