"""``~/.air``: what all of a user's projects share, and who may change it.

It holds the configuration air acts on for every project (providers and the keys they get,
permission rules, hosts, MCP servers it starts and their logins, agent files, capabilities,
sandbox limits), the trust decisions, worker slots and logs. Another local user who could
write it would choose where the user's keys go (``models.yaml``) or what runs as the user
(``mcp.yaml``).

Owns ``make_air_home`` (the directory made 0700 whatever the umask: made as the parent of
``~/.air/logs`` it was 0777 under ``umask 000``, group-writable under 002) and
``open_to_others`` (the first of ``~/.air`` and the configuration in it that someone else
could change: writable by every user, by a group another user is in, or owned by another user
than the user or root, as ssh refuses a ``~/.ssh/config`` with "Bad owner or permissions"; a
user's own group, named as the user and holding no one else, is theirs). Standard library only.
"""

from __future__ import annotations

import os
import stat

__all__ = [
    "CONFIG_ENTRIES",
    "air_home",
    "home_is_relative",
    "make_air_home",
    "mend_open",
    "open_to_others",
]

CONFIG_ENTRIES = (
    "models.yaml",
    "permissions.yaml",
    "hosts.yaml",
    "mcp.yaml",
    "config.yaml",
    "sandbox.yaml",
    "trust.json",
    "capabilities.json",
    "developer-log.pub",
    "agents",
    "capabilities",
    "mcp-auth",
)
"""What air reads from ``~/.air`` and acts on (a folder: it and each entry in it)."""


def air_home() -> str:
    """``~/.air``."""
    return os.path.join(os.path.expanduser("~"), ".air")


def home_is_relative() -> bool:
    """Whether HOME is set but no absolute path: ``""`` is ``/`` to Python (``/.air``), a
    relative one names the directory air was started in (the project)."""
    return not os.path.isabs(os.environ.get("HOME", "/"))


def mend_open(path: str) -> str:
    """What the user does about ``path``, which ``open_to_others`` named."""
    return (
        f"Make it yours alone: `chmod go-w {path}` (owned by another user: `chown $USER "
        f"{path}`, or remove it)"
    )


def make_air_home() -> str:
    """``~/.air``, made 0700 when it is missing (HOME too, as ``os.makedirs`` would).

    Raises:
        OSError: it cannot be made.
    """
    path = air_home()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    return path


def open_to_others(top: str | None = None) -> tuple[str, str] | None:
    """The first of ``top`` (default ``~/.air``) and its ``CONFIG_ENTRIES`` that another user
    could change, and how (None: none). What does not exist is nobody's to change."""
    top = top or air_home()
    paths = [top]
    for name in CONFIG_ENTRIES:
        path = os.path.join(top, name)
        paths.append(path)
        if name in ("agents", "capabilities", "mcp-auth") and os.path.isdir(path):
            try:
                paths += [os.path.join(path, entry) for entry in sorted(os.listdir(path))]
            except OSError:
                continue
    for path in paths:
        why = _changeable(path)
        if why is not None:
            return path, why
    return None


def _changeable(path: str) -> str | None:
    try:
        info = os.stat(path)  # a link's target: a dotfiles manager links these
    except OSError:
        return None
    if info.st_uid not in (os.getuid(), 0):
        return f"it is owned by uid {info.st_uid}"
    if info.st_mode & stat.S_IWOTH:
        return "every user can write it"
    if info.st_mode & stat.S_IWGRP and not _own_group(info.st_gid):
        return f"its group (gid {info.st_gid}) can write it"
    return None


def _own_group(gid: int) -> bool:
    """Whether ``gid`` is the user's private group: named as the user, holding nobody else (a
    user-private-group system's umask 002 makes files group-writable)."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(os.getuid())
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return (
        user.pw_gid == gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
    )
