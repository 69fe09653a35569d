"""What ``air mcp login`` keeps of an OAuth login: ``~/.air/mcp-auth/``, one file per server URL.

Owns ``Login`` (the client registration, the tokens, when the access token expires and the
metadata the flow discovered, so a refresh goes to the authorization server's own token
endpoint), ``load_login``, ``save_login``, ``remove_login`` and ``auth_file``. A file is named
by the SHA-256 of the server's exact URL and names that URL inside: a project declaring another
URL never reads this URL's tokens, and a file whose URL differs is no login. The directory is
made 0700 and each file written 0600, whole, through no link (``air.whole_file``; IMPL-HOME-1);
a file is read through no link and at most ``MAX_BYTES``. Standard library only: the SDK's
models stay JSON here and are validated by ``air.mcp.oauth``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from typing import Any, NamedTuple

from air.air_home import air_home, make_air_home
from air.small_file import read_small
from air.whole_file import whole_file

__all__ = ["Login", "auth_file", "load_login", "remove_login", "save_login"]

MAX_BYTES = 256 * 1024
"""A login file's bound (a registration, tokens and two metadata documents: a few KiB)."""


class Login(NamedTuple):
    """One server URL's login, as JSON objects of the SDK's models."""

    url: str
    client: dict[str, Any]
    """``OAuthClientInformationFull``: the dynamic registration."""
    tokens: dict[str, Any]
    """``OAuthToken``."""
    expires_at: float | None = None
    """When the access token expires (seconds since the epoch; None: it did not say)."""
    oauth_metadata: dict[str, Any] | None = None
    """``OAuthMetadata`` of the authorization server (its token endpoint)."""
    resource_metadata: dict[str, Any] | None = None
    """``ProtectedResourceMetadata`` of the server (the resource the tokens are for)."""

    def secrets(self) -> list[str]:
        """Every value of it that is a credential (for the run's redactor)."""
        values = [self.tokens.get(k) for k in ("access_token", "refresh_token")]
        values.append(self.client.get("client_secret"))
        return [v for v in values if isinstance(v, str) and v]


def _folder() -> str:
    return os.path.join(air_home(), "mcp-auth")


def auth_file(url: str) -> str:
    """Where the login of the server at ``url`` (exactly) is kept."""
    name = hashlib.sha256(url.encode("utf-8")).hexdigest()[:40]
    return os.path.join(_folder(), f"{name}.json")


def load_login(url: str) -> Login | None:
    """The login kept for ``url``, or None (none kept, or not one for this URL).

    Raises:
        OSError: the file is there but cannot be read (a link, not a regular file, too large).
    """
    try:
        data = json.loads(read_small(auth_file(url), MAX_BYTES, follow=False))
    except FileNotFoundError:
        return None
    except ValueError:  # not JSON: no login (the next `air mcp login` replaces it)
        return None
    if not isinstance(data, dict) or data.get("url") != url:
        return None
    try:
        return Login(**data)
    except TypeError:
        return None


def save_login(login: Login) -> str:
    """Write ``login`` (replacing the one of its URL) and return the file's path.

    Raises:
        OSError: the folder cannot be made or written.
    """
    make_air_home()
    folder = _folder()
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    if not stat.S_ISDIR(os.lstat(folder).st_mode):  # a link put there is not followed
        raise NotADirectoryError(errno.ENOTDIR, "not a directory of its own", folder)
    os.chmod(folder, 0o700)  # made under another umask, or widened since
    path = auth_file(login.url)
    with whole_file(path, 0o600) as handle:
        handle.write(json.dumps(login._asdict(), indent=1).encode("utf-8"))
    return path


def remove_login(url: str) -> bool:
    """Remove the login kept for ``url``; False when there was none.

    Raises:
        OSError: it cannot be removed.
    """
    try:
        os.unlink(auth_file(url))
    except FileNotFoundError:
        return False
    return True
