"""git.status, git.diff, git.log, git.commit, project.info and artifact.read.

Owns the tool definitions. Every git command they run goes through
``air.workspace.gitsafe`` (hooks, fsmonitor, drivers, external diff/textconv, pagers,
editors, credential helpers, ssh and protocols neutralised, no ``GIT_*`` of the caller, no
system or global config), after the workspace's git directory was located and verified from
the structure on disk (IMPL-GIT-1, IMPL-GIT-2).
"""

from __future__ import annotations

import os
from typing import Any

import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.contracts.permission import PathPolicy
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec
from air.security.paths import in_write_area_entry, is_within, names_credentials
from air.tools.credential_files import forget_scan, hidden_credentials
from air.tools.registry import ToolRegistry
from air.tools.run import ToolRun
from air.workspace.gitsafe import GitLocation, git_environment, locate_git, run_git_bounded

__all__ = ["OUTPUT_MAX", "git_environment", "register_git_tools"]

OUTPUT_MAX = 1 << 20
"""The most of git.status, git.diff and git.log's output air reads (the rest is cut), and of
an artifact artifact.read reads."""


async def run_git(run: ToolRun, *args: str) -> str:
    """git's output, redacted (at most ``OUTPUT_MAX`` bytes of it)."""
    return (await _bounded(run, *args))[0]


async def _located(run: ToolRun) -> GitLocation:
    """The workspace's git directory, verified (``locate_git``, in a thread)."""
    return await trio.to_thread.run_sync(
        lambda: locate_git(run.workspace_realpath, project_root=run.context.project_root)
    )


async def _bounded(
    run: ToolRun, *args: str, location: GitLocation | None = None
) -> tuple[str, bool]:
    """git's output, redacted (a diff as a diff: ``SecretRedactor.redact_diff``), and whether
    it was cut: at most ``OUTPUT_MAX`` bytes, never all of what a task's files make any size in
    the parent (IMPL-FS-2).

    Raises:
        AirException: ``tool_error`` when git fails.
    """
    location = location or await _located(run)
    proc, cut = await run_git_bounded(location, *args, limit=OUTPUT_MAX)
    if proc.returncode != 0 and not cut:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message=f"git {_subcommand(args)} failed: "
            f"{run.redactor.redact_cut(proc.stderr.decode('utf-8', 'replace').strip(), 500)}",
            user_action="Check the repository state and the arguments.",
        )
    text = proc.stdout.decode("utf-8", "replace")
    redact = run.redactor.redact_diff if _subcommand(args) == "diff" else run.redactor.redact
    if len(text) > 1 << 16:  # a long one off the Trio thread
        return await trio.to_thread.run_sync(redact, text), cut
    return redact(text), cut


def _subcommand(args: tuple[str, ...]) -> str:
    """The git command of ``args``, past the ``-c key=value`` options before it."""
    at = 0
    while at < len(args) - 1 and args[at] == "-c":
        at += 2
    return args[at]


async def _status(input: JsonObject, run: ToolRun) -> Any:
    text, cut = await _bounded(
        run, "status", "--porcelain=v1", "--branch", "--ignore-submodules=all"
    )
    return {"status": text, "truncated": cut}


async def _diff(input: JsonObject, run: ToolRun) -> Any:
    args = ["diff", "--no-ext-diff", "--no-textconv"]
    if input.get("staged"):
        args.append("--cached")
    rev = str(input["rev"]) if input.get("rev") else None
    if rev is not None and rev.startswith("-"):  # an option (--output=FILE writes outside)
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"git.diff rev must be a revision, not an option: {rev!r}",
            user_action="Pass a commit, branch or range such as HEAD~1..HEAD.",
        )
    location = await _located(run)
    if rev is not None:
        await _commits_only(location, rev)
        args.append(rev)
    paths = [str(p) for p in input.get("paths", [])]
    withheld = await _withheld(run, location, args, paths)
    kept_out = [f":(top,exclude,literal){path}" for path in withheld]
    text, cut = await _bounded(run, *args, "--", *paths, *kept_out, location=location)
    found: JsonObject = {"diff": text, "truncated": cut}
    return found | ({"withheld": withheld} if withheld else {})


async def _commits_only(location: GitLocation, rev: str) -> None:
    """Refuse a ``rev`` that names anything but commits (or the empty tree, to diff from
    nothing): another tree or a blob (``HEAD:secrets``, ``HEAD:secrets..HEAD:data``, an index
    entry, an object id) is diffed under names relative to itself (``plan.txt`` for
    ``secrets/plan.txt``), which no withholding can recognise."""
    named, _ = await run_git_bounded(location, "rev-parse", "--revs-only", rev, limit=1 << 16)
    if named.returncode != 0:
        return  # no revision at all: the diff says so itself
    for name in named.stdout.decode("ascii", "replace").split():
        name = name.removeprefix("^")
        commit, _ = await run_git_bounded(
            location, "rev-parse", "-q", "--verify", f"{name}^{{commit}}", limit=1 << 16
        )
        if commit.returncode == 0:
            continue
        tree, _ = await run_git_bounded(location, "ls-tree", name, limit=1 << 16)
        if tree.returncode != 0 or tree.stdout:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"git.diff rev must name commits, not a tree or a file's blob: {rev!r}",
                user_action="Pass a commit or a range such as HEAD~1..HEAD; name files in paths.",
            )


async def _withheld(
    run: ToolRun, location: GitLocation, args: list[str], paths: list[str]
) -> list[str]:
    """What of the diff ``args`` the model may not read through it: the credential files
    (fs.read asks for one; IMPL-SBX-3) and the task's denied paths. A diff showed their lines,
    and from the empty tree (``rev`` 4b825dc) every tracked file's whole content."""
    listing = [*args, "--name-only", "-z", "--no-renames", "--", *paths]
    proc, cut = await run_git_bounded(location, *listing, limit=OUTPUT_MAX)
    if cut:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message="git.diff: the diff names too many files to check which may be shown",
            user_action="Name the paths to diff (paths), or a narrower rev.",
        )
    workspace, denied = run.workspace_realpath, run.denied
    return sorted(
        name
        for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        if name
        and (
            any(names_credentials(part) for part in name.split("/"))
            or any(in_write_area_entry(os.path.join(workspace, name), d) for d in denied)
        )
    )


async def _log(input: JsonObject, run: ToolRun) -> Any:
    n = int(input.get("max_count", 20))
    text, cut = await _bounded(
        run,
        "log",
        "--no-ext-diff",
        "--no-textconv",
        f"--max-count={n}",
        "--format=%H%x09%an%x09%ad%x09%s",
        "--date=iso-strict",
    )
    return {"log": text, "truncated": cut}


async def _commit(input: JsonObject, run: ToolRun) -> Any:
    paths = input.get("paths") or []
    # the user's untracked credential files (listed before the add makes them tracked) stay out
    # of what this call adds (`all`, or a directory holding them) unless its permission
    # decision named them (IMPL-SBX-3), as do its denied paths and files named as credentials:
    # unstaged after the add (an exclude pathspec would do it in the add, but git 2.39 then
    # adds no file of an untracked directory that a positive pathspec names)
    secrets = await _untracked_secrets(run)
    if paths:  # the names the permission check judged: never pathspec magic (":(glob)x/*")
        await run_git(run, "add", "--", *_literal(paths))
    elif input.get("all", False):
        await run_git(run, "add", "--all")
    withheld = await _staged_withheld(run, secrets)
    if withheld:
        await run_git(run, "reset", "-q", "--", *_literal(withheld))
    # who the project's commits name, as air's own (IMPL-GIT-4): air's git reads no global
    # config, so the user's ~/.gitconfig identity was unknown and every commit failed
    from air.workspace.authorship import commit_message, read_authorship

    who = await read_authorship(await _located(run))
    subject, _, body = str(input["message"]).partition("\n")
    message = commit_message(subject, body, {}, who)
    await run_git(run, *who.config(), "commit", "--no-verify", *who.commit_args(), "-m", message)
    head = (await run_git(run, "rev-parse", "HEAD")).strip()
    return {"commit": head} | ({"withheld": withheld} if withheld else {})


def _literal(paths: list[str]) -> list[str]:
    return [f":(literal){path}" for path in paths]


async def _staged_withheld(run: ToolRun, secrets: list[str]) -> list[str]:
    """The staged paths (relative) no commit of the task takes, unstaged before it: those in
    its denied paths, the user's untracked credential files found before the add
    (``secrets``), and files named as credentials its permission decision did not name
    (``revealed``). An add of ``.``, of ``all`` or of a directory staged them (under
    ``--isolation main``, into the person's history: a denied file, a tracked ``.env`` with a
    new value); the person's index may hold one."""
    location = await _located(run)
    listing = ("diff", "--cached", "--name-only", "-z", "--no-renames")
    proc, cut = await run_git_bounded(location, *listing, limit=OUTPUT_MAX)
    if cut or proc.returncode != 0:
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message="git.commit: cannot tell which staged files it may commit",
            user_action="Commit named paths (paths), fewer at a time.",
        )
    workspace, denied = run.workspace_realpath, run.denied
    shown = [r.removesuffix("/**") for r in run.revealed]
    found = [os.path.join(workspace, secret) for secret in secrets]

    def withheld(name: str) -> bool:
        path = os.path.join(workspace, name)
        if any(in_write_area_entry(path, d) for d in denied):
            return True
        if any(is_within(path, secret) for secret in found):
            return True
        credential = any(names_credentials(part) for part in name.split("/"))
        return credential and not any(is_within(path, r) for r in shown)

    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name and withheld(name)]


async def _untracked_secrets(run: ToolRun) -> list[str]:
    """The untracked credential files of the workspace as they are now (no scan kept from an
    earlier call: one may have been committed since), but those the call may touch; relative."""
    workspace = run.workspace_realpath
    forget_scan(workspace)
    found = await hidden_credentials(workspace, run.context.project_root, run.revealed)
    return [path[len(workspace) + 1 :] for path in found]  # each lies below the workspace


def _commit_paths(input: JsonObject) -> tuple[list[str], list[str], str | None]:
    import shlex  # at the first commit's permission check (IMPL-BOOT-8)

    paths = [p for p in input.get("paths", []) if isinstance(p, str)]
    command = shlex.join(["git", "commit", "-m", str(input.get("message", ""))])
    return [], paths, command


def project_facts(workspace_root: str, project_root: str) -> JsonObject:
    """Name, git-ness and build files of the workspace (sync core of project.info): the name is
    the project's, and a task's worktree (whose ``.git`` is a file) is in git too."""
    root = os.path.realpath(workspace_root)
    markers = [m for m in _BUILD_MARKERS if os.path.exists(os.path.join(root, m))]
    return {
        "workspace_root": root,
        "name": os.path.basename(os.path.realpath(project_root)),
        "is_git": os.path.lexists(os.path.join(root, ".git")),
        "build_files": markers,
    }


_BUILD_MARKERS = (
    "pyproject.toml",
    "setup.cfg",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "CMakeLists.txt",
    "Makefile",
    "pom.xml",
    "build.gradle",
)


async def _project_info(input: JsonObject, run: ToolRun) -> Any:
    context = run.context
    facts = await trio.to_thread.run_sync(
        project_facts, context.workspace_root, context.project_root
    )
    return {"project_root": run.context.project_root, **facts}


async def _artifact_read(input: JsonObject, run: ToolRun) -> Any:
    limit = int(input.get("max_bytes", 200_000))  # at most OUTPUT_MAX (the schema)
    # only what is asked is read: a command's log can be gigabytes (IMPL-FS-2)
    result = run.registry.artifacts.read(input["artifact_id"], max_bytes=limit)
    return {
        "artifact_id": input["artifact_id"],
        "uri": result.ref.uri,
        "content": run.redactor.redact(result.content.decode("utf-8", "replace")),
        "truncated": result.truncated,
    }


def register_git_tools(registry: ToolRegistry) -> None:
    """Register git.status, git.diff, git.log, git.commit, project.info and artifact.read."""
    obj: JsonObject = {"type": "object", "additionalProperties": False, "properties": {}}

    def define(
        name: str,
        desc: str,
        schema: JsonObject,
        category: ToolCategory,
        perms: ToolPermissionSpec | None = None,
    ) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            description=desc,
            input_schema=schema,
            category=category,
            permissions=perms or ToolPermissionSpec(),
        )

    registry.register(
        define("git.status", "Show the working-tree status.", obj, ToolCategory.PROJECT), _status
    )
    registry.register(
        define(
            "git.diff",
            "Show changes.",
            {
                **obj,
                "properties": {
                    "staged": {"type": "boolean"},
                    "rev": {"type": "string"},
                    "paths": {"type": "array", "items": {"type": "string"}},
                },
            },
            ToolCategory.PROJECT,
        ),
        _diff,
    )
    registry.register(
        define(
            "git.log",
            "Show recent commits.",
            {
                **obj,
                "properties": {"max_count": {"type": "integer", "minimum": 1, "maximum": 1000}},
            },
            ToolCategory.PROJECT,
        ),
        _log,
    )
    registry.register(
        define(
            "git.commit",
            "Commit staged or named changes (hooks disabled; credential files and denied paths "
            "stay out, listed in withheld).",
            {
                **obj,
                "required": ["message"],
                "properties": {
                    "message": {"type": "string", "minLength": 1},
                    "all": {"type": "boolean"},
                    "paths": {"type": "array", "items": {"type": "string"}},
                },
            },
            ToolCategory.PROJECT,
            ToolPermissionSpec(write_paths=PathPolicy(from_input=["paths"]), execute=True),
        ),
        _commit,
        paths=_commit_paths,
    )
    registry.register(
        define("project.info", "Describe the project.", obj, ToolCategory.PROJECT), _project_info
    )
    registry.register(
        define(
            "artifact.read",
            "Read an artifact of this session.",
            {
                **obj,
                "required": ["artifact_id"],
                "properties": {
                    "artifact_id": {"type": "string", "minLength": 1},
                    "max_bytes": {"type": "integer", "minimum": 1, "maximum": OUTPUT_MAX},
                },
            },
            ToolCategory.INTERNAL,
        ),
        _artifact_read,
    )
