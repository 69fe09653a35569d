"""The handlers of package managers and service managers.

Owns ``HANDLERS`` for ``pip``, the JavaScript package managers (``npm``, ``pnpm``, ``yarn``,
``npx``...), ``cargo``, ``go``, the Python project tools (``uv``, ``poetry``, ``pdm``...), the
other package managers (``brew``, ``gem``, ``conda``, ``pipx``), the system package managers
(``apt``, ``dpkg``, ``dnf``...: only queries are read-only), ``systemctl``/``service`` and
``bundle``: which subcommands read, build, install (network) or run configured code. Pure: no
I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory
from air.security.command_words import (
    DYNAMIC,
    Analyzer,
    HandlerFn,
    Segment,
    first_subcommand,
    new_segment,
    skip_options,
)

__all__ = [
    "HANDLERS",
    "h_pip",
]

C = CommandCategory


def h_pip(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """``pip``: its queries read, ``config`` writes a pip.conf, ``uninstall`` destroys,
    ``download`` reaches the network, ``install``/``wheel`` install; anything else is opaque."""
    sub, rest = first_subcommand(args)
    if sub == "config":
        # `pip config set` writes the user's (or with --global the system's) pip.conf.
        where = "/etc/pip.conf" if "--global" in args else DYNAMIC if "--site" in args else None
        return _config_command(text, prog, rest, where or "~/.config/pip/pip.conf")
    if sub in (
        "list",
        "show",
        "freeze",
        "check",
        "help",
        "",
        "debug",
        "inspect",
    ):
        return [new_segment(text, prog, C.READ_ONLY, f"pip {sub}")]
    if sub == "uninstall":
        return [new_segment(text, prog, C.DESTRUCTIVE, "pip uninstall")]
    if sub == "download":
        return [new_segment(text, prog, C.NETWORK, "pip download")]
    if sub in ("install", "wheel"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"pip {sub}")]
    return [new_segment(text, prog, C.OPAQUE, f"pip {sub}")]


def _config_command(text: str, prog: str, rest: list[str | None], where: str) -> list[Segment]:
    """``pip config``/``npm config``: reading it is read_only; setting it writes ``where``."""
    action = next((x for x in rest if x is None or not x.startswith("-")), "")
    if action is None:
        return [new_segment(text, prog, C.OPAQUE, f"{prog} config with a dynamic action")]
    if action in ("", "list", "ls", "get", "debug"):
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} config {action}".rstrip())]
    if action == "edit":
        return [new_segment(text, prog, C.OPAQUE, f"{prog} config edit runs an editor")]
    what = "its configuration" if where == DYNAMIC else where
    seg = new_segment(text, prog, C.FILE_MUTATION, f"{prog} config {action} writes {what}")
    seg.write_targets.append(where)
    return [seg]


def _h_js_pm(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    sub, rest = first_subcommand(
        args, ("--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "--workspace", "-w")
    )
    if prog in ("npx", "pnpx", "bunx"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"{prog} fetches and runs a package")]
    if sub in ("config", "c"):
        # npm writes ~/.npmrc (the global or project one with -g/--location); the others
        # keep theirs in places that depend on the version: an unknown target.
        glob = any(x in ("-g", "--global") or str(x).startswith("--location") for x in args)
        where = "~/.npmrc" if prog == "npm" and not glob else DYNAMIC
        return _config_command(text, prog, rest, where)
    if (
        sub in ("test", "t", "run", "run-script", "build", "lint", "start", "exec")
        and prog != "yarn"
    ):
        if sub == "exec":
            return [new_segment(text, prog, C.PACKAGE_INSTALL, f"{prog} exec may fetch a package")]
        return [new_segment(text, prog, C.BUILD_TEST, f"{prog} {sub}")]
    if sub in (
        "ls",
        "list",
        "view",
        "info",
        "outdated",
        "why",
        "help",
        "audit",
        "",
    ):
        if sub == "" and prog == "yarn":
            return [new_segment(text, prog, C.PACKAGE_INSTALL, "yarn installs dependencies")]
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in (
        "install",
        "i",
        "ci",
        "add",
        "update",
        "upgrade",
        "up",
        "link",
        "dlx",
        "create",
        "init",
    ):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]
    if sub in ("publish", "login", "adduser", "unpublish", "deprecate"):
        return [new_segment(text, prog, C.NETWORK, f"{prog} {sub}")]
    if sub in ("uninstall", "remove", "rm", "prune"):
        return [new_segment(text, prog, C.DESTRUCTIVE, f"{prog} {sub}")]
    if prog == "yarn" and sub in ("test", "build", "lint", "run", "start", "tsc", "jest"):
        return [new_segment(text, prog, C.BUILD_TEST, f"yarn {sub}")]
    return [
        new_segment(text, prog, C.OPAQUE, f"{prog} {sub}: unknown subcommand (may be a script)")
    ]


def _h_cargo(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    sub, _ = first_subcommand(args)
    if sub in (
        "build",
        "b",
        "test",
        "t",
        "check",
        "c",
        "clippy",
        "fmt",
        "run",
        "r",
        "bench",
        "doc",
        "tree",
        "metadata",
        "version",
    ):
        return [new_segment(text, prog, C.BUILD_TEST, f"cargo {sub}")]
    if sub in ("install", "add", "update", "fetch", "new", "init"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"cargo {sub}")]
    if sub in ("publish", "login", "yank", "owner"):
        return [new_segment(text, prog, C.NETWORK, f"cargo {sub}")]
    if sub in ("clean", "uninstall", "remove"):
        return [new_segment(text, prog, C.DESTRUCTIVE, f"cargo {sub}")]
    return [new_segment(text, prog, C.OPAQUE, f"cargo {sub}")]


def _h_go(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    sub, _ = first_subcommand(args)
    if sub in ("build", "test", "vet", "fmt", "run", "list", "version", "env", "doc", "generate"):
        return [new_segment(text, prog, C.BUILD_TEST, f"go {sub}")]
    if sub in ("get", "install", "mod"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"go {sub}")]
    if sub == "clean":
        return [new_segment(text, prog, C.DESTRUCTIVE, "go clean")]
    return [new_segment(text, prog, C.OPAQUE, f"go {sub}")]


def _h_uv(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    sub, rest = first_subcommand(args)
    if prog in ("uv", "poetry", "pdm", "hatch", "pipenv", "rye") and sub == "run":
        inner = skip_options(rest, ("--with", "--python", "-p"))
        return a.wrapped_command(text, inner, depth, C.BUILD_TEST, prog, f"{prog} run")
    if sub == "pip":
        return h_pip(a, text, "pip", rest, depth)
    if sub in ("add", "install", "sync", "lock", "update", "tool", "remove"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]
    if sub in ("show", "tree", "version", "check", "env", ""):
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("build", "test"):
        return [new_segment(text, prog, C.BUILD_TEST, f"{prog} {sub}")]
    return [new_segment(text, prog, C.OPAQUE, f"{prog} {sub}")]


def _h_other_pm(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    sub, _ = first_subcommand(args)
    if sub in (
        "list",
        "info",
        "search",
        "show",
        "outdated",
        "doctor",
        "deps",
        "",
    ):
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("uninstall", "remove", "cleanup"):
        return [new_segment(text, prog, C.DESTRUCTIVE, f"{prog} {sub}")]
    return [new_segment(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]


def _h_systemctl(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    sub, _ = first_subcommand(args)
    if sub in ("status", "list-units", "is-active", "show", "list-unit-files", "cat"):
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    return [new_segment(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system services")]


_DPKG_QUERIES = frozenset(
    "-l --list -L --listfiles -s --status -S --search -p --print-avail --version --help".split()
)


def _h_apt(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    sub, _ = first_subcommand(args)
    if prog == "dpkg":
        # dpkg's action is an option (`dpkg -l`, `dpkg -r pkg`); a query asks nothing else.
        actions = [x for x in args if x is None or x.startswith("-")]
        sub = actions[0] if actions else ""
        if actions and all(x in _DPKG_QUERIES for x in actions):
            return [new_segment(text, prog, C.READ_ONLY, f"dpkg {sub}")]
    if sub in ("list", "show", "search", "policy", "depends", "rdepends", "showpkg"):
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("remove", "purge", "autoremove", "-r", "--remove", "-P", "--purge", "erase"):
        return [new_segment(text, prog, C.PRIVILEGED, f"{prog} {sub} removes system packages")]
    return [new_segment(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system packages")]


def _h_bundle(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    sub, rest = first_subcommand(args, ("--gemfile",))
    if sub == "exec":
        return a.wrapped_command(
            text, rest, depth, C.BUILD_TEST, prog, "bundle exec runs a command"
        )
    if sub in ("install", "update", "add", "lock", "i"):
        return [new_segment(text, prog, C.PACKAGE_INSTALL, f"bundle {sub}")]
    if sub in ("list", "show", "info", "check", "outdated", "version", ""):
        return [new_segment(text, prog, C.READ_ONLY, f"bundle {sub}")]
    return [new_segment(text, prog, C.OPAQUE, f"bundle {sub}")]


HANDLERS: dict[str, HandlerFn] = {
    "pip": h_pip,
    "pip3": h_pip,
    **dict.fromkeys(("npm", "pnpm", "yarn", "npx", "pnpx", "bunx"), _h_js_pm),
    "cargo": _h_cargo,
    "go": _h_go,
    **dict.fromkeys(("uv", "poetry", "pdm", "hatch", "pipenv", "rye"), _h_uv),
    **dict.fromkeys(("brew", "gem", "conda", "mamba", "pipx"), _h_other_pm),
    "systemctl": _h_systemctl,
    "service": _h_systemctl,
    **dict.fromkeys(
        ("apt", "apt-get", "dpkg", "yum", "dnf", "pacman", "zypper", "apk", "rpm"), _h_apt
    ),
    "bundle": _h_bundle,
}
