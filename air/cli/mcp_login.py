"""``air mcp login SERVER`` and ``air mcp logout SERVER``: an ``oauth: true`` server's login.

Owns the two command bodies. ``login`` runs the server's OAuth flow (``air.mcp.oauth.login``):
the authorization URL is printed for the user to open in any browser, the redirect awaited on
127.0.0.1, the tokens kept in ``~/.air/mcp-auth`` for the server's exact URL. Ctrl-C (or
SIGTERM, SIGHUP) ends the wait: nothing is stored, exit 130 (143 for SIGTERM), as every air
command's interruption. ``logout`` asks the authorization server to revoke the tokens (RFC
7009, where it names a revocation endpoint; ``air.mcp.oauth.revoke``), then removes what is
kept, and says whether the server confirmed.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from air.contracts.display import shown
from air.contracts.error import AirException, CliExit, ErrorKind, first_air_exception

__all__ = ["run_login", "run_logout"]


def _oauth_only(server: Any, what: str) -> None:
    if not server.oauth:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"MCP server {server.name} ({server.source}) is not declared `oauth: true`: "
            f"there is no login to {what}",
            user_action=f"Add `oauth: true` to servers.{server.name} in {server.source} if it "
            "authorises with OAuth.",
            metadata={"file": server.source, "field": f"servers.{server.name}.oauth"},
        )


def _show(url: str) -> None:
    print("Open this URL in a browser to let air use the server (waiting up to 5 min; Ctrl-C")
    print("stops):")
    print(f"  {shown(url)}", flush=True)


def run_login(server: Any) -> int:
    """``air mcp login SERVER``.

    Raises:
        AirException(config_error): not an ``oauth`` server, or the login failed.
    """
    _oauth_only(server, "make")
    import trio

    from air.mcp.oauth import login

    stopped: list[int] = []

    async def main() -> tuple[str, str | None] | None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    async for signum in signals:
                        stopped.append(signum)
                        nursery.cancel_scope.cancel(reason="interrupted")
                        return

                nursery.start_soon(watch)
                done = await login(server, _show)
                nursery.cancel_scope.cancel(reason="logged in")
                return done
        return None

    try:
        done = trio.run(main)
    except BaseExceptionGroup as group:  # the login's error, inside the signal watch's nursery
        found = first_air_exception(group)
        if found is None:
            raise
        raise found from None
    if done is None:
        print(f"air mcp login: interrupted; nothing was stored for {server.name}", file=sys.stderr)
        return CliExit.TERMINATED if stopped == [signal.SIGTERM] else CliExit.CANCELLED
    path, protocol = done
    print(f"{server.name}: logged in (MCP {shown(protocol or '?')}); the tokens are in {path}")
    return CliExit.OK


def run_logout(server: Any) -> int:
    """``air mcp logout SERVER``.

    Raises:
        AirException(config_error): not an ``oauth`` server.
    """
    _oauth_only(server, "forget")
    import trio

    from air.mcp.oauth import revoke
    from air.mcp.oauth_store import load_login, remove_login

    login = load_login(server.url)
    if login is None:
        remove_login(server.url)  # a file of another URL's, or none
        print(f"{server.name}: was not logged in")
        return CliExit.OK
    revoked = trio.run(revoke, login)  # before the tokens are gone: they are what it names
    remove_login(server.url)
    said = {
        "revoked": "the server revoked its tokens",
        "refused": "the server refused to revoke them",
        "unreachable": "the server could not be reached to revoke them",
        "no endpoint": "the server offers no revocation",
        "not over https": "its revocation endpoint is not https: nothing was sent to it",
    }[revoked]
    if revoked != "revoked":
        said += "; they stay valid until they expire"
    print(f"{server.name}: logged out ({said}; removed from this machine)")
    return CliExit.OK
