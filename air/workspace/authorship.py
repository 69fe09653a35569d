"""What air's commits in a project say and whom they name (issue 26: git like a colleague).

Owns: ``Authorship`` -- the identity air commits with in the user's project (the user's own
``user.name``/``user.email``, from the project's config (its includes not followed) or the
user's global one, with an ``air`` co-author trailer; or, when the user sets ``air.author``,
that author with the user as committer; ``air <air@localhost>`` only when the user has no
identity), whether those commits are signed (the user's global ``commit.gpgSign``, with the
signing program, format and key read from the user's *global* config only: a repository
never chooses a program air runs), and ``commit_message``
(a task's title and summary as the subject and body, control characters removed, with
``Air-Task``/``Air-Workspace`` trailers). Reading the user's config executes nothing
(``git config --get``).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from typing import NamedTuple

from air.workspace.gitsafe import GitLocation, git_environment, run_own_group

__all__ = ["AIR_AUTHOR", "Authorship", "commit_message", "read_authorship"]

AIR_AUTHOR = "air <air@localhost>"
_SUBJECT_MAX = 72
_BODY_MAX = 4000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
_PERSON = re.compile(r"^([^<>\n]+?)\s*<([^<>\s]+)>$")


class Authorship(NamedTuple):
    """Who air's commits in the project name, and how they are signed."""

    name: str
    email: str
    author: str | None = None
    """``Name <email>`` for ``--author`` (the user's ``air.author``); None: the committer."""
    signing: tuple[str, ...] = ()
    """``key=value`` config that turns signing on (empty: unsigned)."""

    @property
    def is_user(self) -> bool:
        return f"{self.name} <{self.email}>" != AIR_AUTHOR

    def config(self) -> list[str]:
        """The ``-c`` options of every git command air runs in the project."""
        items = [f"user.name={self.name}", f"user.email={self.email}"]
        items += list(self.signing) or ["commit.gpgSign=false"]
        return [arg for item in items for arg in ("-c", item)]

    def merge_args(self) -> list[str]:
        """What ``git merge`` adds: the signing switch (a merge names the user)."""
        return ["-S"] if self.signing else ["--no-gpg-sign"]

    def commit_args(self) -> list[str]:
        """What ``git commit`` adds: the author, if not the user, and the signing switch."""
        return [*([f"--author={self.author}"] if self.author else []), *self.merge_args()]

    def trailers(self) -> list[str]:
        """``Co-authored-by: air`` when the commit names the user as its author."""
        return [f"Co-authored-by: {AIR_AUTHOR}"] if self.is_user and not self.author else []


def _clean(text: str) -> str:
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", "    "))


def commit_message(
    subject: str, body: str | None, trailers: Mapping[str, str], authorship: Authorship
) -> str:
    """``subject`` (one line, at most 72 characters), ``body`` (capped), then the trailers
    and the authorship's own. Control and bidirectional-override characters are removed: a
    model wrote the text, and ``git log`` shows it in the user's terminal."""
    line = " ".join(_clean(subject).split()) or "air task"
    if len(line) > _SUBJECT_MAX:
        line = line[: _SUBJECT_MAX - 1].rstrip() + "…"
    parts = [line]
    text = _clean(body or "").strip()
    if text:
        parts.append(text if len(text) <= _BODY_MAX else text[:_BODY_MAX].rstrip() + "\n…")
    lines = [f"{key}: {_clean(value)}" for key, value in trailers.items()]
    parts.append("\n".join([*lines, *authorship.trailers()]))
    return "\n\n".join(parts) + "\n"


async def _get(location: GitLocation, key: str, *, scope: str) -> str | None:
    """``key`` from one scope of the user's config: ``global`` (``~/.gitconfig`` and what it
    includes) or ``local`` (the project's own config, its includes not followed: a poisoned
    repository may point them at a FIFO)."""
    env = git_environment(location)
    del env["GIT_CONFIG_GLOBAL"]  # the user's own ~/.gitconfig: read, never executed
    includes = "--includes" if scope == "global" else "--no-includes"
    done = await run_own_group(
        ["git", "config", f"--{scope}", includes, "--get", key],
        cwd=location.work_tree,
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    value = done.stdout.decode("utf-8", "replace").strip()
    return value if done.returncode == 0 and value else None


async def _identity(location: GitLocation, key: str) -> str | None:
    """The project's own value of ``key``, else the user's global one."""
    return await _get(location, key, scope="local") or await _get(location, key, scope="global")


def _true(value: str | None) -> bool:
    return (value or "").lower() in ("true", "yes", "on", "1")


async def read_authorship(location: GitLocation) -> Authorship:
    """The user's identity and signing setup, as git would use them in this project."""
    name = await _identity(location, "user.name")
    email = await _identity(location, "user.email")
    if not name or not email or "\n" in name + email:
        return Authorship(name="air", email="air@localhost")
    configured = await _identity(location, "air.author")
    author = None
    if configured and _PERSON.match(configured):
        author = configured
    signing: tuple[str, ...] = ()
    if _true(await _get(location, "commit.gpgSign", scope="global")):
        # signing, its program, format and key only from the user's global config: a
        # repository's own config never makes air run a program (IMPL-GIT-1)
        fmt = await _get(location, "gpg.format", scope="global") or "openpgp"
        program_key = "gpg.ssh.program" if fmt == "ssh" else "gpg.program"
        program = await _get(location, program_key, scope="global")
        default = "ssh-keygen" if fmt == "ssh" else "gpg"
        key = await _get(location, "user.signingKey", scope="global")
        signing = (
            "commit.gpgSign=true",
            f"gpg.format={fmt}",
            f"{program_key}={program or default}",
            *((f"user.signingKey={key}",) if key else ()),
        )
    return Authorship(name=name, email=email, author=author, signing=signing)
