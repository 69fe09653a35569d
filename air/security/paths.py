"""PathClassifier: put a path into one of the 8 path categories after realpath normalisation.

Owns the protected-path tables (``.git`` internals, ``.air``, shell rc files, credentials, system
directories) and the escape checks (``..``, absolute paths, ``~``, symlinks, hardlinks, case and
trailing-dot tricks) of SDD §9.2 / §18.5. No I/O beyond ``realpath``/``lstat``/``stat``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import stat
from typing import TYPE_CHECKING

from air.contracts.permission import PathCategory

if TYPE_CHECKING:  # built at the first path checked (IMPL-BOOT-12)
    from air.contracts.permission_records import PathRiskClassification

__all__ = [
    "PROTECTED_NAMES",
    "PathClassifier",
    "in_write_area_entry",
    "is_build_dir_name",
    "is_within",
    "literal_parts",
    "names_credentials",
    "names_protected",
    "protected_part",
]

P = PathCategory

BUILD_DIR_NAMES = frozenset(
    """build dist out target node_modules __pycache__ .pytest_cache .mypy_cache .ruff_cache .tox
    .nox .venv venv _build .next coverage htmlcov .cache .gradle .hypothesis .eggs bin obj
    .parcel-cache .turbo""".split()
)
BUILD_DIR_GLOBS = ("cmake-build-*", "*.egg-info", "build-*")

SHELL_RC_NAMES = frozenset(
    """.bashrc .bash_profile .bash_login .bash_logout .profile .zshrc .zprofile .zshenv .zlogin
    .zlogout .kshrc .cshrc .tcshrc .inputrc .envrc .xprofile .xinitrc .xsession .pam_environment
    config.fish""".split()
)
CREDENTIAL_NAMES = frozenset(
    """.netrc .npmrc .pypirc .git-credentials .pgpass .my.cnf id_rsa id_dsa id_ecdsa id_ed25519
    authorized_keys known_hosts credentials credentials.json service-account.json .htpasswd
    .vault-token secrets.yaml secrets.yml secrets.json .dockercfg shadow gshadow sudoers
    master.key credentials.toml credentials.tfrc.json .boto .s3cfg .vaultrc .ssh .gnupg .aws
    .azure .kube .docker .password-store .terraform.d""".split()
)
CREDENTIAL_GLOBS = (
    ".env",
    ".env.*",
    "*.env",  # prod.env, docker/app.env: an env_file of Compose, systemd, a shell's `source`
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "*.gpg",
    "*.asc",
    "*.kdbx",
    "ssh_host_*_key",
    "*.ovpn",
)
CREDENTIAL_DIRS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".local/share/keyrings",
    ".terraform.d",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
)
# Credential files recognised wherever they are (another user's home, a copy, a `$X/` prefix).
CREDENTIAL_SUFFIXES = (
    (".kube", "config"),
    (".docker", "config.json"),
    (".config", "gh"),
    (".config", "gcloud"),
    (".config", "hub"),
)
_GLOB_TARGETS = tuple(
    sorted(
        {d.split("/")[0] for d in CREDENTIAL_DIRS}
        | {".netrc", ".git-credentials", ".pgpass", ".npmrc", ".pypirc", ".vault-token"}
        | {"shadow", "gshadow", "sudoers", "ssh_host_rsa_key", ".env", ".boto", ".s3cfg"}
    )
)
NOT_CREDENTIAL = frozenset(
    ".env.example .env.sample .env.template .env.dist example.env sample.env template.env".split()
)

SYSTEM_DIRS = (
    "/etc",
    "/boot",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sys",
    "/proc",
    "/dev",
    "/root",
    "/var",
    "/opt",
    "/srv",
    "/snap",
    "/System",
    "/Library",
    "/private/etc",
)
SYSTEM_HOME_ENTRIES = (
    ".config/autostart",
    ".config/systemd",
    ".config/git",
    ".gitconfig",
    ".local/bin",
    ".local/share/applications",
    ".config/environment.d",
    ".bashrc.d",
    ".ssh/rc",
    ".xsessionrc",
)
_UNDER_SYSTEM_DIRS = tuple(d + "/" for d in SYSTEM_DIRS)
HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def is_within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or below it (both already normalised)."""
    if path == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return path.startswith(prefix)


def in_write_area_entry(path: str, entry: str) -> bool:
    """True when ``path`` lies in one ``TaskScope.write_area`` entry (both absolute and
    normalised the same way): the entry itself or below it, or, for an entry holding a glob
    (``*?[``), a path the glob matches (``dir/**`` also covers ``dir`` and everything below).

    The one write-area rule: the PermissionEngine applies it to every write a tool makes, the
    merge check to every path a task's workspace changed (IMPL-MERGE-1).
    """
    if is_within(path, entry):
        return True
    if not any(ch in entry for ch in "*?["):
        return False
    if fnmatch.fnmatchcase(path, entry):
        return True
    return entry.endswith("/**") and is_within(path, entry[:-3])


PROTECTED_NAMES = frozenset({"AGENTS.md", "CLAUDE.md"})
"""Instruction files other agents (and air's L3 at the root) read: protected at any depth."""


def protected_part(parts: list[str]) -> int | None:
    """The index of the first component that makes a path (its components below the project
    or workspace root) protected: ``.air`` at the root (air's state, its rules and config), any
    ``.git*`` entry (``.gitignore``, ``.gitattributes``, ``.gitmodules``, ``.github``, ...)
    and ``AGENTS.md`` / ``CLAUDE.md`` at any depth; None for an ordinary path. A task writes
    one only when its scope names it (``literal_parts``): the merge check and the
    PermissionEngine hold the same rule."""
    if parts and parts[0] == ".air":
        return 0
    for index, part in enumerate(parts):
        if part.startswith(".git") or (index == len(parts) - 1 and part in PROTECTED_NAMES):
            return index
    return None


def literal_parts(entry: str, root: str) -> list[str] | None:
    """The leading components of a write-area entry (absolute, ``/``-separated) that hold no
    glob, relative to ``root``; None for an entry outside it. A protected path is named by an
    entry whose literal components reach its protected one (``AGENTS.md``,
    ``.air/shared/rules``; never ``.``, ``**`` or ``docs``)."""
    rel = posixpath.relpath(entry, root)
    if rel == ".":
        return []
    if rel == ".." or rel.startswith("../"):
        return None
    literal = []
    for part in rel.split("/"):
        if any(ch in part for ch in "*?["):
            break
        literal.append(part)
    return literal


def names_protected(parts: list[str], index: int, entries: list[str], root: str) -> bool:
    """Whether one of ``entries`` (absolute write-area entries holding the path) names the
    path ``parts`` (below ``root``) up to its protected component ``index``."""
    return any(
        (lit := literal_parts(e, root)) is not None
        and len(lit) > index
        and lit[: index + 1] == parts[: index + 1]
        for e in entries
    )


@functools.cache
def _any_glob(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern that matches a name when ``fnmatchcase`` matches it with any of ``globs``
    (compiled at the first name checked, not at import: IMPL-BOOT-12)."""
    return re.compile("|".join(fnmatch.translate(g) for g in globs))


def _is_credential_name(name: str) -> bool:
    return name in CREDENTIAL_NAMES or _any_glob(CREDENTIAL_GLOBS).match(name) is not None


def is_build_dir_name(name: str) -> bool:
    """A directory name builds and package managers make (``build``, ``cmake-build-debug``,
    ``node_modules``, ``x.egg-info``, ...): what is below it is an output, not a source."""
    return name in BUILD_DIR_NAMES or _any_glob(BUILD_DIR_GLOBS).match(name) is not None


def names_credentials(word: str) -> bool:
    """True when a word of a command names a credential file or directory by itself.

    Used by the command analyzer to decide which bare words (no ``/``, no ``~``) are worth a
    path check: ``.netrc``, ``id_rsa``, ``.ssh``, ``server.pem``, ``.env``.
    """
    name = word.rstrip("/").rsplit("/", 1)[-1]
    if name in NOT_CREDENTIAL:
        return False
    return _is_credential_name(name)


def _realpath(path: str, roots: tuple[str, ...] = ()) -> str | None:
    """``os.path.realpath`` that survives a link swapped while it walks (None after retries).

    ``realpath`` ``lstat``s then ``readlink``s each component; a concurrent swap between the two
    raises ``EINVAL``/``ENOENT`` instead of returning a path. A path below one of ``roots``
    (realpaths resolved for this decision) walks only the components below it (``_below``).
    """
    for root in roots:
        if path.startswith(root + "/" if root != "/" else root):
            below = _below(root, path[len(root) :])
            if below is not None:
                return below
            break
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return None


def _below(root: str, rest: str) -> str | None:
    """``os.path.realpath(root + rest)`` for a ``root`` that is a realpath, walking only the
    components of ``rest``; None (the caller walks the whole path) at a ``..`` or a link.

    What ``realpath`` does with a component that is no link: keep it; with one that cannot be
    ``lstat``ed (missing, no search permission): keep it and every one after it, as it does
    when it is not strict.
    """
    path = root.rstrip("/")
    parts = rest.split("/")
    for i, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part == "..":
            return None
        path = f"{path}/{part}"
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            tail = [p for p in parts[i + 1 :] if p not in ("", ".")]
            if ".." in tail:
                return None
            return "/".join([path, *tail])
        if stat.S_ISLNK(mode):
            return None
    return path or "/"


_ROOTS: dict[str, tuple[int, int, str]] = {}
"""``resolve_root``'s memory: a root's path -> the device and inode of its realpath, and it."""
_ROOTS_MAX = 64


def resolve_root(path: str) -> str:
    """``os.path.realpath(path)`` for a root decisions are made against (a project, a workspace),
    remembered with the identity of the directory it names: while ``path`` still leads to that
    directory (one ``stat``) the walk is not made again; when it leads elsewhere (a component
    swapped for a link) the root is resolved anew. A root reachable by two real paths (a bind
    mount) keeps the first: a target resolved through the other is judged outside it, never in."""
    try:
        now = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    known = _ROOTS.get(path)
    if known is not None and known[:2] == (now.st_dev, now.st_ino):
        return known[2]
    real = os.path.realpath(path)
    try:
        found = os.stat(real)
    except OSError:
        return real
    if len(_ROOTS) >= _ROOTS_MAX:
        _ROOTS.clear()
    _ROOTS[path] = (found.st_dev, found.st_ino, real)
    return real


def _parts_below(path: str, root: str) -> tuple[str, ...]:
    """The components of ``path`` below ``root``: ``PurePosixPath(relpath(path, root)).parts``
    without the two walks, for normalised absolute paths with ``is_within(path, root)``."""
    if path == root:
        return ()
    prefix = root if root.endswith("/") else root + "/"
    return tuple(filter(None, path[len(prefix) :].split("/")))  # "//x" under "/" too


def _norm_component(part: str) -> str:
    """Fold the tricks a case-insensitive or trailing-dot file system would honour."""
    return part.rstrip(". ").lower()


class PathClassifier:
    """Classify paths for permission checks (SDD §9.2 ``PathClassifier.classify``).

    Args:
        home: the user's home directory (defaults to ``$HOME``); ``~`` expands to it.
    """

    def __init__(self, *, home: str | None = None) -> None:
        self._home = home = os.path.realpath(home or os.path.expanduser("~"))
        # What depends on the home only, joined once here and not per path checked (issue 28).
        self._credential_dirs = tuple((d, os.path.join(home, d)) for d in CREDENTIAL_DIRS)
        self._tree_entries = (*(full for _, full in self._credential_dirs), "/etc/shadow")
        self._system_home_entries = tuple(
            (entry, os.path.join(home, entry)) for entry in SYSTEM_HOME_ENTRIES
        )
        self._air_home = os.path.join(home, ".air")
        self._under_home = home.rstrip("/") + "/"
        self._glob_homes = frozenset({home, "/etc", "/root", "/etc/ssh"})

    @property
    def home(self) -> str:
        return self._home

    def expand(self, path: str, base: str) -> str | None:
        """Expand ``~`` and make ``path`` absolute against ``base``; None for dynamic paths.
        Only what follows ``base`` is looked at for ``$`` and backquotes: a command's relative
        target arrives joined to the directory it runs in, whose name the user chose (a
        project in ``a $b`` had every command with a relative path refused)."""
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

    def scope_places(
        self, value: str, project: str, workspace: str, *, as_written: bool = True
    ) -> tuple[str, ...]:
        """Where a task-scope entry (``write_area``, ``allowed_paths``, ``denied_paths``) is,
        resolved. It names a path of the project, and a task in a worktree or a copy has that
        path at the same place below its workspace: a relative entry there, an absolute one
        inside the project (``/home/me/proj/secrets``, ``~/proj/secrets``) mapped there and kept
        as written. A relative denied entry (``as_written``) names the project's own copy too;
        a relative write-area entry only the workspace's. A dynamic entry is taken as written."""
        relative = not (os.path.isabs(value) or value.startswith("~"))
        if workspace == project or (relative and not as_written):
            return (os.path.realpath(self.expand(value, workspace) or value),)
        written = os.path.realpath(self.expand(value, project) or value)
        inside = os.path.relpath(written, project)
        if inside == ".." or inside.startswith("../"):
            return (written,)  # outside the project: nothing of it is in the workspace
        return (os.path.normpath(os.path.join(workspace, inside)), written)

    def classify(
        self,
        path: str,
        project_root: str,
        *,
        workspace_root: str | None = None,
        for_write: bool = False,
        roots_resolved: bool = False,
    ) -> PathRiskClassification:
        """Classify ``path`` (relative paths are relative to the workspace root).

        Args:
            path: the path as given by a tool input or a command.
            project_root: the project root.
            workspace_root: where the task works (a worktree may live under ``.air/local``);
                defaults to ``project_root``.
            for_write: also treat hardlinked files as escapes (a write would reach the other
                name).
            roots_resolved: the roots are realpaths the caller resolved for this decision.

        Returns:
            The category, the realpath, the reason and whether the path escapes the workspace.
        """
        from air.contracts.permission_records import PathRiskClassification

        project, workspace = project_root, workspace_root or project_root
        if not roots_resolved:
            project, workspace = resolve_root(project), resolve_root(workspace)
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
        resolved_or_none = _realpath(absolute, (workspace, project))
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
        candidates = (resolved,) if lexical == resolved else (resolved, lexical)
        for candidate in candidates:
            cred = self._credential_reason(candidate)
            if cred:
                return result(P.CREDENTIALS, cred)
        for candidate in candidates:
            within = is_within(candidate, workspace) or is_within(candidate, project)
            sens = self._system_reason(candidate, within=within)
            if sens:
                return result(P.SYSTEM_SENSITIVE, sens)
        for candidate in candidates:
            root = workspace if is_within(candidate, workspace) else project
            if not is_within(candidate, root):
                continue
            parts = [_norm_component(p) for p in _parts_below(candidate, root)]
            if ".git" in parts:
                return result(P.PROJECT_GIT_INTERNAL, "inside .git")
            if parts and parts[0] == ".air":
                return result(P.AIR_INTERNAL, "inside the project's .air directory")
        air_home = self._air_home
        if is_within(resolved, air_home) or is_within(lexical, air_home):
            return result(P.AIR_INTERNAL, "inside ~/.air")
        if escapes:
            return result(P.OUTSIDE_PROJECT, "outside the project and its workspace")
        root = workspace if is_within(resolved, workspace) else project
        rel_parts = _parts_below(resolved, root)
        for part in rel_parts[:-1] if rel_parts and not os.path.isdir(resolved) else rel_parts:
            if is_build_dir_name(part):
                return result(P.PROJECT_BUILD_OUTPUT, f"inside the build directory {part}")
        return result(P.PROJECT_SOURCE, "inside the workspace")

    def _credential_reason(self, path: str) -> str:
        name = os.path.basename(path)
        if name in NOT_CREDENTIAL:
            return ""
        if _is_credential_name(name):
            return f"{name} holds credentials"
        if path.startswith(self._under_home):  # every credential directory is in the home
            for d, full in self._credential_dirs:
                if is_within(path, full):
                    return f"inside ~/{d}"
        if path.endswith("/**"):
            why = self._tree_reason(path[:-3] or "/")
            if why:
                return why
        if path.startswith("/proc/") and name in ("environ", "mem"):
            return f"{path} holds a process's environment or memory (API keys)"
        if "*" in path or "?" in path or "[" in path:
            why = self._glob_reason(("/", *filter(None, path.split("/"))))
            if why:
                return why
        # the names between the slashes (empty ones at a leading or doubled slash match none)
        parts = path.split("/")
        if ".ssh" in parts or ".gnupg" in parts or ".aws" in parts or ".password-store" in parts:
            return "inside a credentials directory"
        for i in range(len(parts) - 1):
            if (parts[i], parts[i + 1]) in CREDENTIAL_SUFFIXES:
                return f"{parts[i]}/{parts[i + 1]} holds credentials"
        return ""

    def _tree_reason(self, top: str) -> str:
        """A whole-tree read of ``top`` (``tar czf x ~``) reaches the credentials below it."""
        top = os.path.normpath(top)
        below = top if top.endswith("/") else top + "/"
        for entry in self._tree_entries:
            if entry.startswith(below):
                return f"reading all of {top} includes {entry}"
        return ""

    def _glob_reason(self, parts: tuple[str, ...]) -> str:
        """A wildcard directly under a home, ``/etc`` or ``/root`` that can match a credential.

        Bash's ``*`` and ``?`` do not match a leading dot, so ``~/*`` does not reach ``~/.ssh``
        but ``~/.*`` and ``~/.s?h`` do.
        """
        homes = self._glob_homes
        for i, part in enumerate(parts[1:], start=1):  # parts[0] is "/": paths are absolute
            if "*" not in part and "?" not in part and "[" not in part:
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
        if path in SYSTEM_DIRS or path.startswith(_UNDER_SYSTEM_DIRS):
            for d in SYSTEM_DIRS:
                # A home under a system directory (/var/lib/jenkins) unflags only itself.
                if is_within(path, d) and not is_within(path, self._home):
                    return f"inside the system directory {d}"
        if path.startswith(self._under_home):  # every entry is in the home
            for entry, full in self._system_home_entries:
                if is_within(path, full):
                    return f"~/{entry} changes what runs at login"
        if path == "/" or path == self._home:
            return "a file-system or home root"
        return ""
