"""The handler of git: its subcommands, its global options and its configuration.

Owns ``HANDLERS`` for ``git``: the global options that run code (``-c`` of a non-safe key,
``--exec-path``, ``-C`` moves), and each subcommand as read-only, VCS (a write of the
repository), network or opaque (aliases, hooks, external helpers). Pure: no I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory
from air.security.command_words import (
    DYNAMIC,
    Analyzer,
    HandlerFn,
    Segment,
    new_segment,
    option_values,
    positional_args,
)

__all__ = [
    "HANDLERS",
]

C = CommandCategory


_SAFE_GIT_CONFIG_KEYS = ("color.", "user.name", "user.email", "core.quotepath", "advice.")

_GIT_READ = frozenset(
    """status diff log show blame rev-parse ls-files describe shortlog grep reflog cat-file
    ls-tree rev-list show-ref help version count-objects fsck name-rev whatchanged diff-tree
    diff-index diff-files merge-base for-each-ref check-ignore check-attr var show-branch
    cherry range-diff annotate verify-commit verify-tag""".split()
)
_GIT_VCS = frozenset(
    """add commit switch merge rebase cherry-pick revert mv rm init am apply notes
    format-patch bisect sparse-checkout""".split()
)
_GIT_NETWORK = frozenset(
    "clone fetch pull ls-remote send-email daemon instaweb request-pull svn p4 archive".split()
)


def _git_config_key_safe(key: str) -> bool:
    return key.startswith(_SAFE_GIT_CONFIG_KEYS)


def _h_git(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    moved: list[str] = []
    segs = _git_segments(text, prog, args, moved)
    # `git -C dir` works (and writes its index, objects, hooks' effects) in `dir`.
    for target in moved:
        if target not in segs[0].write_targets:
            segs[0].write_targets.append(target)
    return segs


def _git_segments(text: str, prog: str, args: list[str | None], moved: list[str]) -> list[Segment]:
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [new_segment(text, prog, C.OPAQUE, "git with a dynamic argument")]
        if opt == "-c" or opt.startswith("--config-env"):
            rest.pop(0)
            key = rest.pop(0) if rest else None
            if (
                opt.startswith("--config-env")
                or key is None
                or not _git_config_key_safe(key.split("=", 1)[0].lower())
            ):
                return [
                    new_segment(text, prog, C.OPAQUE, f"git -c {key} can run arbitrary programs")
                ]
            continue
        if opt == "--exec-path":
            return [
                new_segment(
                    text, prog, C.READ_ONLY, "git --exec-path prints where git's programs are"
                )
            ]
        if opt in (
            "--work-tree",
            "--git-dir",
            "--exec-path",
            "--namespace",
            "--super-prefix",
        ) or opt.startswith(("--work-tree=", "--git-dir=", "--exec-path=", "--namespace=")):
            return [new_segment(text, prog, C.OPAQUE, f"git {opt} points git elsewhere")]
        if opt == "-C":
            moved.append(rest[1] if len(rest) > 1 and rest[1] is not None else DYNAMIC)
            rest = rest[2:]
            continue
        if opt.startswith("-"):
            rest.pop(0)
            if opt in ("--version", "--help", "-v", "-h"):
                return [new_segment(text, prog, C.READ_ONLY, "git --version")]
            continue
        break
    if not rest:
        return [new_segment(text, prog, C.READ_ONLY, "git help")]
    sub = rest[0]
    sargs = rest[1:]
    flags = {x for x in sargs if x is not None and x.startswith("-")}

    def g(cat: CommandCategory, why: str) -> list[Segment]:
        seg = new_segment(text, prog, cat, why)
        seg.write_targets.extend(outputs)
        return [seg]

    # Files and directories git writes besides the repository: `--output`, `format-patch -o`,
    # `init DIR`, `worktree add DIR`, `clone URL DIR`, `apply --directory`.
    outputs = option_values(sargs, ("--output", "--output-directory", "--directory"))
    if sub == "format-patch":
        outputs.extend(option_values(sargs, ("-o",)))
    operands = positional_args(sargs)
    where = None
    if sub == "init" and operands:
        where = (operands[-1],)
    elif sub == "clone" and len(operands) >= 2:
        where = (operands[1],)
    elif sub == "worktree" and operands[:1] == ["add"] and len(operands) >= 2:
        where = (operands[1],)
    if where is not None:
        outputs.append(where[0] if where[0] is not None else DYNAMIC)
    if sub in ("mergetool", "difftool", "citool", "gui", "gitk"):
        return g(C.OPAQUE, f"git {sub} runs an external tool")
    if sub == "apply" and "--unsafe-paths" in flags:
        return g(C.OPAQUE, "git apply --unsafe-paths writes outside the work tree")
    runs_remote: tuple[str, ...] = ("--upload-pack", "--receive-pack", "--exec")
    if sub in ("clone", "ls-remote"):
        runs_remote = (*runs_remote, "-u")
    if sub in ("fetch", "pull", "clone", "push", "ls-remote", "archive", "remote") and any(
        x is not None and x.startswith(runs_remote) for x in sargs
    ):
        return g(C.OPAQUE, f"git {sub} runs a given program for the remote side")

    if sub in ("reset",):
        if "--hard" in flags or "--merge" in flags or "--keep" in flags:
            return g(C.DESTRUCTIVE, "git reset --hard discards work")
        return g(C.VCS_MUTATION, "git reset")
    if sub == "clean":
        if flags & {"-n", "--dry-run"}:
            return g(C.READ_ONLY, "git clean --dry-run")
        return g(C.DESTRUCTIVE, "git clean deletes untracked files")
    if sub == "push":
        if (
            any(
                f in ("-f", "--force", "--mirror", "--delete", "-d", "--prune")
                or f.startswith("--force")
                for f in flags
            )
            or any(x is not None and x.startswith("+") for x in sargs)
            or any(x is not None and x.startswith(":") for x in sargs)
        ):
            return g(C.DESTRUCTIVE, "git push that rewrites or deletes remote history")
        return g(C.NETWORK, "git push")
    if sub in ("checkout", "restore"):
        if sub == "restore" and (flags & {"--staged", "-S"}) and not (flags & {"--worktree", "-W"}):
            return g(C.VCS_MUTATION, "git restore --staged")
        if sub == "restore" or "--" in sargs or "-f" in flags or "--force" in flags or "." in sargs:
            return g(C.DESTRUCTIVE, f"git {sub} discards working-tree changes")
        return g(C.VCS_MUTATION, f"git {sub}")
    if sub == "branch":
        if flags & {"-D"} or ("--delete" in flags and "--force" in flags):
            return g(C.DESTRUCTIVE, "git branch -D")
        if flags & {
            "-d",
            "--delete",
            "-m",
            "-M",
            "-c",
            "-C",
            "--set-upstream-to",
            "-u",
            "--unset-upstream",
            "-f",
            "--force",
        }:
            return g(C.VCS_MUTATION, "git branch changes branches")
        positional = [x for x in sargs if x is not None and not x.startswith("-")]
        if positional and not (
            flags & {"--list", "-l", "--contains", "--merged", "--no-merged", "--points-at"}
        ):
            return g(C.VCS_MUTATION, "git branch creates a branch")
        return g(C.READ_ONLY, "git branch lists branches")
    if sub == "tag":
        if flags & {"-d", "--delete"}:
            return g(C.DESTRUCTIVE, "git tag -d")
        positional = [x for x in sargs if x is not None and not x.startswith("-")]
        if positional and not (flags & {"-l", "--list", "--contains", "--points-at"}):
            return g(C.VCS_MUTATION, "git tag creates a tag")
        return g(C.READ_ONLY, "git tag lists tags")
    if sub == "stash":
        action = sargs[0] if sargs else "push"
        if action in ("list", "show"):
            return g(C.READ_ONLY, f"git stash {action}")
        if action in ("drop", "clear"):
            return g(C.DESTRUCTIVE, f"git stash {action}")
        return g(C.VCS_MUTATION, f"git stash {action}")
    if sub == "remote":
        action = sargs[0] if sargs else ""
        if action in ("", "-v", "show", "get-url", "--verbose"):
            return g(C.READ_ONLY if action != "show" else C.NETWORK, f"git remote {action}")
        if action in ("update", "prune"):
            return g(C.NETWORK, f"git remote {action}")
        if action in ("remove", "rm"):
            return g(C.DESTRUCTIVE, "git remote remove")
        return g(C.VCS_MUTATION, f"git remote {action}")
    if sub == "config":
        values = [x for x in sargs if x is not None and not x.startswith("-")]
        if flags & {"--global", "--system", "--file", "-f", "--blob", "--worktree"} and not (
            flags & {"--get", "--list", "-l", "--get-all", "--get-regexp"}
        ):
            return g(C.OPAQUE, "git config outside the repository")
        if (
            flags & {"--get", "--list", "-l", "--get-all", "--get-regexp", "--show-origin"}
            or len(values) <= 1
        ):
            if flags & {
                "--unset",
                "--unset-all",
                "--remove-section",
                "--rename-section",
                "--add",
                "--replace-all",
                "--edit",
                "-e",
            }:
                return g(C.OPAQUE, "git config edits configuration")
            return g(C.READ_ONLY, "git config reads configuration")
        key = values[0].lower() if values else ""
        if not _git_config_key_safe(key):
            return g(C.OPAQUE, f"git config {key} can change what git runs")
        return g(C.VCS_MUTATION, f"git config {key}")
    if sub in ("reflog",) and sargs and sargs[0] in ("expire", "delete"):
        return g(C.DESTRUCTIVE, "git reflog expire")
    if sub in ("gc", "prune", "filter-branch", "filter-repo", "replace", "update-ref"):
        if sub == "gc" and not any(x is not None and x.startswith("--prune") for x in sargs):
            return g(C.VCS_MUTATION, "git gc")
        return g(C.DESTRUCTIVE, f"git {sub} can lose history")
    if sub == "worktree":
        action = sargs[0] if sargs else "list"
        if action == "list":
            return g(C.READ_ONLY, "git worktree list")
        if action in ("remove", "prune"):
            return g(C.DESTRUCTIVE, f"git worktree {action}")
        return g(C.VCS_MUTATION, f"git worktree {action}")
    if sub == "submodule":
        action = sargs[0] if sargs else "status"
        if action in ("status", "summary"):
            return g(C.READ_ONLY, "git submodule status")
        if action == "foreach":
            return g(C.OPAQUE, "git submodule foreach runs commands")
        return g(C.NETWORK, f"git submodule {action}")
    if sub in (
        "hook",
        "credential",
        "credential-store",
        "credential-cache",
        "upload-pack",
        "receive-pack",
        "fast-import",
        "shell",
        "web--browse",
    ):
        return g(C.OPAQUE, f"git {sub}")
    if "--ext-diff" in flags:
        return g(C.OPAQUE, f"git {sub} --ext-diff runs an external diff program")
    if sub == "rebase" and (
        flags & {"-x", "--exec"} or any(x is not None and x.startswith("--exec") for x in sargs)
    ):
        return g(C.OPAQUE, "git rebase --exec runs commands")
    if sub == "bisect" and sargs and sargs[0] == "run":
        return g(C.OPAQUE, "git bisect run runs commands")
    if sub == "commit" and any(f in ("--no-verify", "-n") for f in flags):
        return g(C.VCS_MUTATION, "git commit --no-verify")
    if sub in _GIT_READ:
        if sub == "grep" and any(
            x is not None and x.startswith(("-O", "--open-files-in-pager")) for x in sargs
        ):
            return g(C.OPAQUE, "git grep -O runs a pager program")
        return g(C.READ_ONLY, f"git {sub}")
    if sub in _GIT_VCS:
        return g(C.VCS_MUTATION, f"git {sub}")
    if sub in _GIT_NETWORK:
        return g(C.NETWORK, f"git {sub}")
    return g(C.OPAQUE, f"git {sub}: unknown subcommand or alias")


HANDLERS: dict[str, HandlerFn] = {"git": _h_git}
