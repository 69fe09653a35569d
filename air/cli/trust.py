"""``air trust [PATH] [--yes]`` and ``air trust --revoke [PATH]``: the user's trust decision.

Owns the command, ``ask_trust``, the question the console asks in an untrusted project
(IMPL-TRUST-1), and ``ask_adopt``, the one it asks about another's ``.air/local``. Both show
what trusting would allow, file by file (the provider URLs with the variable sent there, the
allow rules, the capabilities, the first lines of every file that reaches a prompt), then ask
y/N on a terminal; yes records the exact set of files in ``~/.air/trust.json``
(``air.session.trust``), so a later change asks again. ``--yes`` records without asking
(scripts); without a terminal and without ``--yes`` nothing is recorded. A ``.air/local`` air
did not make here (``air.session.local_owner``: a copied or unpacked project) is shown and, on
yes, adopted: marked as the user's own state.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

from air.cli.options import bad
from air.contracts.display import shown

__all__ = ["ask_adopt", "ask_trust", "run_trust", "trust_root"]


def trust_root(path: str | None) -> str:
    """The project ``air trust`` decides on: PATH, else the air project around the current
    directory, else the current directory.

    Raises:
        AirException(not_found): PATH is not a directory.
    """
    if path is not None:
        if not os.path.isdir(path):
            what = "is not a directory" if os.path.exists(path) else "does not exist"
            raise bad(
                "not_found",
                f"air trust {path}: {what}",
                "Pass the project's directory (or run `air trust` inside the project).",
                file=path,
                field="PATH",
            )
        return os.path.realpath(path)
    from air.session.project import ProjectStore

    project = ProjectStore().locate(os.getcwd())
    return os.path.realpath(project.project_root if project is not None else os.getcwd())


def _show(config: Any, out: IO[str]) -> None:
    print(f"air: the project {config.root} has configuration that widens what air does:", file=out)
    for line in config.summary():
        print(f"  {line}", file=out)
    out.flush()  # before a refusal on stderr: one pipe gets them in order


def ask_trust(config: Any, *, stdin: IO[str], out: IO[str]) -> bool:
    """Show what trusting ``config`` allows and ask y/N; True (and recorded) on yes."""
    from air.session.trust import record_trust

    _show(config, out)
    print(
        "Trust this configuration? air then uses it until one of these files changes. [y/N] ",
        end="",
        file=out,
        flush=True,
    )
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        return False
    record_trust(config)
    print(f"air: trusted {config.root} (recorded in ~/.air/trust.json)", file=out, flush=True)
    return True


def _show_foreign(root: str, why: str, out: IO[str]) -> None:
    print(f"air: {root}/.air/local was not made by air here: {shown(why)}", file=out)
    print("  trusting adopts its sessions, knowledge and backups as yours", file=out, flush=True)


def _adopt(root: str, out: IO[str]) -> None:
    from air.session.local_owner import adopt_local_state

    adopt_local_state(root)
    print(f"air: {root}/.air/local is yours now (marked in .air/local/owner)", file=out)


def ask_adopt(root: str, *, stdin: IO[str], out: IO[str]) -> None:
    """When ``root``'s ``.air/local`` is not air's own here (``air.session.local_owner``), show
    why and ask y/N; yes adopts it, no leaves it (the runtime then refuses it)."""
    from air.session.local_owner import foreign_local_state

    why = foreign_local_state(root)
    if why is None:
        return
    _show_foreign(root, why, out)
    print("Adopt it as yours? [y/N] ", end="", file=out, flush=True)
    if stdin.readline().strip().lower() in ("y", "yes"):
        _adopt(root, out)


def run_trust(args: dict[str, Any]) -> int:
    """``air trust``. Exit 0 trusted (or nothing to trust, or revoked), 2 not trusted."""
    from air.contracts.error import CliExit
    from air.session.local_owner import foreign_local_state
    from air.session.trust import record_trust, revoke_trust, trust_scan, trusted

    root = trust_root(args.get("PATH"))
    if args.get("--revoke"):
        had = revoke_trust(root)
        said = "revoked the trust of" if had else "there was no trust to revoke for"
        print(f"air: {said} {root}")
        return CliExit.OK
    config = trust_scan(root)
    foreign = foreign_local_state(root)
    pending = config.widens and not trusted(config)
    if not config.widens and foreign is None:
        print(f"air: nothing to trust in {root}: its configuration widens nothing air does")
        return CliExit.OK
    if config.widens:
        _show(config, sys.stdout)
    if foreign is not None:
        _show_foreign(root, foreign, sys.stdout)
    if not pending and foreign is None:
        print(f"air: {root} is trusted as it is now")
        return CliExit.OK
    if not args.get("--yes"):
        if not sys.stdin.isatty():
            raise bad(
                "untrusted_config",
                f"air trust {root}: no terminal to ask on, and no --yes",
                f"Read the lines above, then run `air trust {root} --yes`.",
                field="--yes",
            )
        question = "Trust this configuration? air then uses it until one of these files changes."
        print(question if pending else "Adopt it as yours?", "[y/N] ", end="", flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print(f"air: {root} stays untrusted", file=sys.stderr)
            return CliExit.BAD_INPUT
    if pending:
        record_trust(config)
        print(f"air: trusted {root} (recorded in ~/.air/trust.json)")
    if foreign is not None:
        _adopt(root, sys.stdout)
    return CliExit.OK
