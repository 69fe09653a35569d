"""The one hardened way air runs git itself (outside the sandbox) (IMPL-GIT-1, IMPL-GIT-2).

Owns: ``GitLocation`` (a work tree and the git directory air verified for it), ``locate_git``
(find and verify that directory from the structure on disk, never from git's own discovery),
``verify_location`` (is it still the one recorded at creation), ``git_environment``,
``hardened_argv``, ``run_git``, ``run_git_bounded`` (at most so much of git's output),
``run_own_group``, ``user_excludes`` (the user's own ignore file, the one thing of their
global config air's git reads), and the verified locations of a project's submodule checkouts
(``submodule_location``) and of their worktrees (``linked_location``).

Everything a repository (or a file a task wrote) can name and git would execute is
neutralised: the environment keeps no ``GIT_*`` variable of the caller, reads no system or
global config and pins ``GIT_DIR`` / ``GIT_WORK_TREE`` to the verified location (so a
rewritten ``.git`` file or ``core.worktree`` is never followed); the command line sets
``core.fsmonitor``, ``core.hooksPath``, editors, pagers, ssh, askpass, credential helpers,
gpg, external diff, protocols, auto-gc and submodule recursion to inert values; and every
``filter.*`` / ``diff.*`` / ``merge.*`` driver the repository's config defines (includes
followed) is overridden through ``GIT_CONFIG_KEY_n`` (command-line scope, wins over the
repository; keys travel in their own variables so a driver name holding ``=`` cannot break
the override) before each command. Every git runs in a process group of its own: a Ctrl-C
at the terminal (SIGINT to the foreground group) reaches air, which ends its work
cooperatively, never a git command halfway through a merge or a checkout of the user's files.
One that the terminal's signal ended in the instant before it could leave air's group (between
the fork and its exec, which the default action ends) never ran, and is started again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
import stat
import subprocess
from collections.abc import Mapping
from typing import Any, NamedTuple

import trio

from air.contracts.error import AirException, ErrorKind
from air.search_path import absolute_search_path

__all__ = [
    "DRIVERLESS",
    "NEUTRAL_CONFIG",
    "GitLocation",
    "driver_overrides",
    "git_environment",
    "hardened_argv",
    "linked_location",
    "list_git",
    "locate_git",
    "run_git",
    "run_git_bounded",
    "run_own_group",
    "submodule_location",
    "user_excludes",
    "verify_location",
]

NEUTRAL_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=/bin/false",
    "core.gitProxy=",
    "core.askPass=",
    "core.pager=cat",
    "core.editor=/bin/false",
    "sequence.editor=/bin/false",
    "core.attributesFile=/dev/null",
    "core.alternateRefsCommand=",
    "core.untrackedCache=false",
    "credential.helper=",
    "ssh.variant=ssh",
    "diff.external=",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "protocol.allow=never",
    "protocol.ext.allow=never",
    "protocol.file.allow=never",
    "uploadpack.packObjectsHook=",
    "gpg.program=/bin/false",
    "gpg.ssh.program=/bin/false",
    "gpg.x509.program=/bin/false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "log.showSignature=false",
    "merge.stat=false",
    "rerere.enabled=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "color.ui=false",
    "color.diff=false",
    "color.status=false",
    "color.branch=false",
)
"""``-c`` options on every command: each names something git would execute or follow."""

DRIVERLESS = frozenset({"rev-parse", "rev-list"})
"""Subcommands that only read refs and objects: no filter, diff or merge driver can run, so
the driver listing is skipped for them."""
_KEEP_ENV: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
_KEEP_ENV += ("GNUPGHOME", "SSH_AUTH_SOCK")
"""Kept: what git needs, and what the user's signing program needs (workspace/authorship)."""
_DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "diff": {"command": "", "textconv": ""},
    # a merge driver cannot be undefined: make it report a conflict without running anything
    "merge": {"driver": "exit 1"},
}


OWN_GROUP = 0
"""``process_group`` for every git air runs (see the module docstring)."""
_NEVER_RAN = (-signal.SIGINT, -signal.SIGQUIT)
"""Exit statuses of a git that a terminal's signal ended before its exec (see the module
docstring): run it again, at most ``_STARTS`` times in all."""
_STARTS = 8


async def run_own_group(argv: list[str], **options: Any) -> subprocess.CompletedProcess[bytes]:
    """``trio.run_process`` in git's own process group, started again if it never ran."""
    for _ in range(_STARTS - 1):
        done = await trio.run_process(argv, process_group=OWN_GROUP, **options)
        if done.returncode not in _NEVER_RAN:
            return done
    return await trio.run_process(argv, process_group=OWN_GROUP, **options)


class GitLocation(NamedTuple):
    """A work tree and the git directory air verified for it."""

    work_tree: str
    git_dir: str
    common_dir: str
    fingerprint: str
    """sha256 over what decides which repository git uses (see ``locate_git``)."""


def _tampered(message: str, detail: str | None = None) -> AirException:
    return AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=message,
        detail=detail,
        user_action=(
            "The workspace's git metadata was changed after air created it; it is kept for "
            "inspection and was not merged. Inspect it, then remove it with `git worktree remove`."
        ),
    )


def _read_small(path: str) -> bytes:
    """A regular file's bytes (never through a symlink); raises ``OSError`` otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _linked(tree: str, common: str | None) -> GitLocation:
    """Verify the linked worktree ``tree``: its ``.git`` is a regular file naming a directory
    directly under ``<common>/worktrees/`` (any common dir when ``common`` is None) whose
    ``commondir`` leads to that common dir and whose ``gitdir`` points back at the file."""
    dot_git = os.path.join(tree, ".git")
    try:
        content = _read_small(dot_git)
    except OSError as exc:
        raise _tampered(f"{dot_git} is not a regular file", detail=str(exc)) from exc
    text = content.decode("utf-8", "replace")
    if not text.startswith("gitdir: ") or text.count("\n") > 1:
        raise _tampered(f"{dot_git} is not a worktree link", detail=text[:200])
    named = text[len("gitdir: ") :].strip()
    git_dir = os.path.realpath(os.path.join(tree, named))
    if not _is_real_dir(git_dir):
        raise _tampered(f"{dot_git} names no git directory", detail=named)
    try:
        commondir = _read_small(os.path.join(git_dir, "commondir")).decode().strip()
        back = _read_small(os.path.join(git_dir, "gitdir")).decode().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise _tampered(f"{git_dir} lost its commondir or gitdir file", detail=str(exc)) from exc
    resolved = os.path.realpath(os.path.join(git_dir, commondir))
    if common is not None and resolved != common:
        raise _tampered(f"{git_dir}/commondir was rewritten", detail=commondir)
    if os.path.dirname(git_dir) != os.path.join(resolved, "worktrees"):
        raise _tampered(f"{dot_git} names a git directory outside {resolved}/worktrees", named)
    if not _is_real_dir(resolved) or os.path.lexists(os.path.join(resolved, "commondir")):
        raise _tampered(f"{resolved} is not a repository's own git directory")
    # git >= 2.48 may write both links relative (worktree.useRelativePaths): the back-pointer
    # relative to the worktree's git directory
    if os.path.realpath(os.path.join(git_dir, back)) != dot_git:
        raise _tampered(f"{git_dir}/gitdir does not point back at {dot_git}", detail=back)
    digest = hashlib.sha256()
    for part in (b"worktree", content, git_dir.encode(), commondir.encode(), back.encode()):
        digest.update(part + b"\0")
    try:
        digest.update(_read_small(os.path.join(git_dir, "config.worktree")))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _tampered(f"{git_dir}/config.worktree is not a regular file") from exc
    return GitLocation(tree, git_dir, resolved, digest.hexdigest())


def _named_git_dir(tree: str) -> str | None:
    """The directory ``tree``'s ``.git`` file names (``gitdir: <path>``, relative to ``tree``
    or absolute); None when ``.git`` is no regular file in git's form."""
    try:
        text = _read_small(os.path.join(tree, ".git")).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: ") or text.count("\n") > 1:
        return None
    return os.path.realpath(os.path.join(tree, text[len("gitdir: ") :].strip()))


def _own_git_dir_elsewhere(root: str) -> GitLocation | None:
    """The project's own repository kept outside its checkout (a submodule's checkout naming
    ``<superproject>/.git/modules/<name>``, ``git init --separate-git-dir``): a git directory
    with ``objects`` and ``HEAD`` and no ``commondir`` (a linked worktree's has one)."""
    git_dir = _named_git_dir(root)
    if git_dir is None or not _is_real_dir(os.path.join(git_dir, "objects")):
        return None
    if os.path.lexists(os.path.join(git_dir, "commondir")) or not os.path.isfile(
        os.path.join(git_dir, "HEAD")
    ):
        return None
    digest = hashlib.sha256(b"main\0" + git_dir.encode()).hexdigest()
    return GitLocation(root, git_dir, git_dir, digest)


def locate_git(work_tree: str, *, project_root: str) -> GitLocation:
    """Find and verify the git directory of ``work_tree`` without asking git.

    The project root must hold its own repository: a real ``.git`` directory without a
    ``commondir`` redirect, a ``.git`` file naming a repository's own git directory kept
    elsewhere (a submodule's checkout, ``--separate-git-dir``), or a ``.git`` file of a linked
    worktree (a project checked out with ``git worktree add``) verified as below.
    ``work_tree`` is the project root itself or a linked worktree whose ``.git`` is a regular
    file naming a directory directly under the project's common ``<git dir>/worktrees/``,
    whose ``commondir`` leads back to that common dir and whose ``gitdir`` points back at this
    ``.git`` file.

    Raises:
        AirException: ``workspace_error`` for anything else (a symlink, a ``.git`` file that
            names another repository, a rewritten ``commondir`` or back-pointer).
    """
    root = os.path.realpath(project_root)
    tree = os.path.realpath(work_tree)
    project_git = os.path.join(root, ".git")
    if _is_real_dir(project_git):
        if os.path.lexists(os.path.join(project_git, "commondir")):
            raise _tampered("the project's .git directory redirects to another repository")
        main = GitLocation(
            root,
            project_git,
            project_git,
            hashlib.sha256(b"main\0" + project_git.encode()).hexdigest(),
        )
    else:
        main = _own_git_dir_elsewhere(root) or _linked(root, None)
    if tree == root:
        return main
    return _linked(tree, main.common_dir)


def linked_location(tree: str, common_dir: str) -> GitLocation:
    """Verify ``tree`` as a linked worktree of the repository whose git directory is
    ``common_dir`` (a submodule's, say), as ``locate_git`` verifies a task's worktree.

    Raises:
        AirException: ``workspace_error`` for anything else.
    """
    return _linked(os.path.realpath(tree), common_dir)


def submodule_location(project_root: str, rel: str) -> GitLocation | None:
    """The project's own checkout of its submodule at ``rel`` and that submodule's git
    directory, verified without asking git: a ``.git`` file naming a real git directory under
    the project's ``<common dir>/modules/`` (or a real ``.git`` directory in the checkout),
    with no ``commondir`` redirect. None when the submodule is not checked out there or its
    layout is anything else (never followed).

    Raises:
        AirException: ``workspace_error`` as ``locate_git`` for the project itself.
    """
    main = locate_git(project_root, project_root=project_root)
    tree = os.path.join(os.path.realpath(project_root), rel)
    if os.path.realpath(tree) != tree or not _is_real_dir(tree):
        return None
    git_dir = os.path.join(tree, ".git")
    if not _is_real_dir(git_dir):
        named = _named_git_dir(tree)
        if named is None or not named.startswith(os.path.join(main.common_dir, "modules") + os.sep):
            return None
        git_dir = named
    if not _is_real_dir(git_dir) or os.path.lexists(os.path.join(git_dir, "commondir")):
        return None
    digest = hashlib.sha256(b"submodule\0" + git_dir.encode()).hexdigest()
    return GitLocation(tree, git_dir, git_dir, digest)


def verify_location(
    work_tree: str, *, project_root: str, git_dir: str | None, fingerprint: str | None
) -> GitLocation:
    """``locate_git``, then require the git directory and fingerprint recorded at creation
    (a record from before fingerprints were kept is checked structurally only).

    Raises:
        AirException: ``workspace_error`` when anything differs.
    """
    location = locate_git(work_tree, project_root=project_root)
    if git_dir is not None and location.git_dir != git_dir:
        raise _tampered(
            f"the workspace's git directory is now {location.git_dir}", detail=f"was {git_dir}"
        )
    if fingerprint is not None and location.fingerprint != fingerprint:
        raise _tampered(f"the git metadata of {location.work_tree} changed since its creation")
    return location


def git_environment(
    location: GitLocation | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment every air git command runs with.

    Only a few neutral variables of ``environ`` (default ``os.environ``) are kept, never a
    ``GIT_*`` one; system and global config and attributes are off, nothing prompts, and
    with a ``location`` git uses exactly that git directory and work tree.
    """
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in _KEEP_ENV if k in source}
    # git is found, and finds its helpers, only where installed: never in the work tree
    env["PATH"] = absolute_search_path(source.get("PATH"))
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PAGER": "cat",
            "GIT_EDITOR": "/bin/false",
            "GIT_SEQUENCE_EDITOR": "/bin/false",
            "GIT_ASKPASS": "/bin/false",
            "GIT_SSH_COMMAND": "/bin/false",
        }
    )
    if location is not None:
        env["GIT_DIR"] = location.git_dir
        env["GIT_WORK_TREE"] = location.work_tree
    return env


def hardened_argv(*args: str) -> list[str]:
    """``git --no-pager -c <neutral>... args``, and the user's own ignore file
    (``user_excludes``)."""
    argv = ["git", "--no-pager"]
    for item in NEUTRAL_CONFIG:
        argv += ["-c", item]
    excludes = user_excludes()
    if excludes is not None:
        argv += ["-c", f"core.excludesFile={excludes}"]
    return [*argv, *args]


def user_excludes() -> str | None:
    """``_user_excludes`` for this process's ``HOME`` and ``XDG_CONFIG_HOME`` (read once each)."""
    return _user_excludes(os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME"))


@functools.cache
def _user_excludes(home: str | None, xdg_config: str | None) -> str | None:
    """The ignore file the user's own git reads beside a project's ``.gitignore``: the
    ``core.excludesFile`` of their global config (``$XDG_CONFIG_HOME/git/config``, then
    ``~/.gitconfig``, the later winning as in git), else git's default
    ``$XDG_CONFIG_HOME/git/ignore``; an absolute path only, None without one. Air's git reads
    no global config, and without this a ``.env`` or ``*.log`` the user ignores everywhere was
    committed from a task's worktree into their history. Patterns only: nothing it names runs;
    the config file is read by ``git config --file`` (no include followed)."""
    if not home or not os.path.isabs(home):
        return None
    xdg = xdg_config or os.path.join(home, ".config")
    found = None
    for config in (os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")):
        try:
            with open(config, "rb") as handle:
                if b"excludesfile" not in handle.read(1 << 20).lower():
                    continue
        except OSError:
            continue
        env = {"HOME": home, "PATH": absolute_search_path(os.environ.get("PATH"))}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
        try:
            done = subprocess.run(
                ["git", "config", "--file", config, "--path", "--get", "core.excludesFile"],
                env=env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        value = done.stdout.decode("utf-8", "surrogateescape").strip()
        if done.returncode == 0 and os.path.isabs(value):
            found = value
    default = os.path.join(xdg, "git", "ignore")
    if found is None and os.path.isabs(default) and os.path.isfile(default):
        found = default
    return found


def driver_overrides(listing: bytes) -> dict[str, str]:
    """The ``GIT_CONFIG_COUNT`` variables that make every driver in ``listing`` inert.

    Args:
        listing: the output of ``git config --null --name-only --get-regexp`` over the
            ``filter``/``diff``/``merge`` sections.
    """
    keys: dict[tuple[str, str], None] = {}
    for name in listing.decode("utf-8", "surrogateescape").split("\0"):
        section, dot, rest = name.partition(".")
        subsection, dot2, _key = rest.rpartition(".")
        if not dot or not dot2 or section.lower() not in _DRIVER_KEYS:
            continue
        keys[(section.lower(), subsection)] = None
    env: dict[str, str] = {}
    count = 0
    for section, subsection in keys:
        for key, value in _DRIVER_KEYS[section].items():
            env[f"GIT_CONFIG_KEY_{count}"] = f"{section}.{subsection}.{key}"
            env[f"GIT_CONFIG_VALUE_{count}"] = value
            count += 1
    if count:
        env["GIT_CONFIG_COUNT"] = str(count)
    return env


async def run_git(
    location: GitLocation | None, *args: str, cwd: str | None = None, stdin: bytes | int = b""
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` hardened, in ``location`` (its work tree is the cwd), with ``stdin``
    as its input (bytes, or a descriptor git reads from where it stands; default: none).

    Without a location (``git init`` of a fresh directory, say) nothing is pinned: only use
    that where no repository exists yet. Never raises for git's exit status.

    Raises:
        AirException: ``workspace_error`` when the repository's config cannot be read.
    """
    env, workdir = await _prepared(location, args, cwd)
    return await run_own_group(
        hardened_argv(*args),
        cwd=workdir,
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        stdin=stdin if isinstance(stdin, int) or stdin else subprocess.DEVNULL,
        check=False,
    )


def list_git(
    location: GitLocation | None, *args: str, cwd: str, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run a listing (``ls-tree``, ``ls-files --others``, ``rev-parse``) hardened and blocking,
    in ``cwd``: for a caller off the loop (a thread, or once before it starts). A listing reads
    no file's content, so ``run_git``'s driver overrides are not needed. Without a location
    git finds the repository itself, read-only (a submodule's layout, a project below a
    repository's top). Never raises for git's exit status.

    Raises:
        OSError: git cannot be run; ``subprocess.TimeoutExpired`` past ``timeout``.
    """
    for _ in range(_STARTS):
        done = subprocess.run(
            hardened_argv(*args),
            cwd=cwd,
            env=git_environment(location),
            capture_output=True,
            timeout=timeout,
            check=False,
            process_group=OWN_GROUP,
        )
        if done.returncode not in _NEVER_RAN:
            break
    return done


def _subcommand(args: tuple[str, ...]) -> str | None:
    """The git subcommand in ``args`` (after any ``-c key=value`` pairs)."""
    i = 0
    while i < len(args):
        if args[i] == "-c":
            i += 2
            continue
        return None if args[i].startswith("-") else args[i]
    return None


async def run_git_bounded(
    location: GitLocation | None, *args: str, limit: int
) -> tuple[subprocess.CompletedProcess[bytes], bool]:
    """``run_git`` reading at most ``limit`` bytes of git's output: past that git is killed and
    its output cut there (True), for what a task's files make any size (``git.diff`` of a
    gigabyte it wrote, ``git.status`` of a million files it made). A cancelled call kills git.

    Raises:
        AirException: ``workspace_error`` when the repository's config cannot be read.
    """
    env, workdir = await _prepared(location, args, None)
    proc = await trio.lowlevel.open_process(
        hardened_argv(*args),
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=OWN_GROUP,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err, cut, read, code = bytearray(), bytearray(), False, False, -1
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_keep_some, proc.stderr, err)
            while chunk := await proc.stdout.receive_some(1 << 16):
                out += chunk
                if len(out) > limit:
                    cut = True
                    proc.kill()  # its stderr ends with it
                    break
        read = True
    finally:
        with trio.CancelScope(shield=True):
            if not read:  # cancelled, or failed: git goes with the call
                proc.kill()
            code = await proc.wait()
            await proc.stdout.aclose()
            await proc.stderr.aclose()
    done = subprocess.CompletedProcess(list(args), code, bytes(out[:limit]), bytes(err))
    return done, cut


async def _prepared(
    location: GitLocation | None, args: tuple[str, ...], cwd: str | None
) -> tuple[dict[str, str], str | None]:
    """The environment (drivers made inert unless the subcommand runs none) and directory."""
    env = git_environment(location)
    workdir = cwd or (location.work_tree if location is not None else None)
    if _subcommand(args) not in DRIVERLESS:
        env.update(await _driver_overrides(env, workdir))
    return env, workdir


async def _keep_some(stream: trio.abc.ReceiveStream, into: bytearray, keep: int = 1 << 16) -> None:
    """Read ``stream`` to its end, keeping its first ``keep`` bytes."""
    while chunk := await stream.receive_some(1 << 16):
        if len(into) < keep:
            into += chunk[: keep - len(into)]


async def _driver_overrides(env: dict[str, str], workdir: str | None) -> dict[str, str]:
    listing = await run_own_group(
        hardened_argv(
            "config", "--null", "--name-only", "--get-regexp", r"^(filter|diff|merge)\..*\."
        ),
        cwd=workdir,
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if listing.returncode not in (0, 1):  # 1: no such key
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=f"cannot read the git config of {workdir}",
            detail=listing.stderr.decode("utf-8", "replace").strip()[:2000],
            user_action="Fix the repository's config (`git config --list --show-origin`).",
        )
    return driver_overrides(listing.stdout)
