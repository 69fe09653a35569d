"""OAuth 2.1 for an MCP server declared ``oauth: true``, over the official SDK's client
(``mcp.client.auth.OAuthClientProvider``: protected resource and authorization server
metadata, dynamic client registration, PKCE, refresh).

Owns ``session_auth`` and ``login``. A session's server (``session_auth``) uses the login
``air mcp login`` kept for its exact URL (``air.mcp.oauth_store``): its values are registered
with the run's redactor first; the SDK refreshes an expired access token at the token endpoint
the login discovered, and the new tokens are registered and stored back. With none kept, or
when the server or its authorization server refuses them (a refresh refused, a token revoked),
the start is a ``config_error`` that says to run ``air mcp login SERVER``: a session never
opens a flow and never waits for a person. ``login`` runs the whole flow: the authorization
URL is handed to ``show`` (a terminal user opens it; no browser is needed on this machine), the
redirect is awaited on ``127.0.0.1:<free port>`` for at most ``LOGIN_WAIT_S``, its ``state``
checked against the one sent, and only a completed login is stored (a failed one leaves the
previous login as it was).
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

import trio

from air.contracts.display import shown
from air.contracts.error import AirException
from air.mcp.config import McpServer, private_way
from air.mcp.connection import START_TIMEOUT_S, open_connection
from air.mcp.oauth_store import Login, load_login, save_login

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

__all__ = ["LOGIN_WAIT_S", "Revoked", "login", "revoke", "session_auth"]

LOGIN_WAIT_S = 300.0
"""How long ``air mcp login`` waits for the browser's redirect."""
CALLBACK_PATH = "/callback"
_REQUEST_BYTES = 16 * 1024
"""The redirect's request head read at most (a code and a state: well under 1 KiB)."""


def _refused(server: McpServer, problem: str, action: str | None = None) -> AirException:
    return server.refusal(
        problem, action or f"Run `air mcp login {server.name}`, then retry.", "oauth"
    )


class _Storage:
    """The SDK's ``TokenStorage`` over one URL's login: what it sets is registered with the
    redactor first, and written back at once when ``persist`` (a session's refresh)."""

    def __init__(
        self,
        url: str,
        login: Login | None,
        register: Callable[..., None] | None,
        *,
        persist: bool,
    ) -> None:
        self.login = login or Login(url=url, client={}, tokens={})
        self.register = register
        self.persist = persist

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        tokens = self.login.tokens
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        fresh = [v for v in (tokens.access_token, tokens.refresh_token) if v]
        if self.register is not None:
            self.register(*fresh)
        expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        dumped = tokens.model_dump(mode="json", exclude_none=True)
        self.login = self.login._replace(tokens=dumped, expires_at=expires_at)
        if self.persist:
            save_login(self.login)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        client = self.login.client
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.register is not None and client_info.client_secret:
            self.register(client_info.client_secret)
        dumped = client_info.model_dump(mode="json", exclude_none=True)
        self.login = self.login._replace(client=dumped)


def _provider(
    server: McpServer,
    storage: _Storage,
    redirect_uri: str,
    show: Callable[[str], Any],
    wait: Callable[[], Any],
) -> OAuthClientProvider:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    sdk_log = logging.getLogger("mcp.client.auth")
    if not sdk_log.handlers:  # its "OAuth flow error" traceback went to the terminal (logging's
        sdk_log.addHandler(logging.NullHandler())  # last resort): air's error says it instead
    metadata = OAuthClientMetadata(
        client_name="air",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    assert server.url is not None
    return OAuthClientProvider(server.url, metadata, storage, show, wait)


def session_auth(server: McpServer, register: Callable[..., None] | None) -> Any:
    """The ``httpx2.Auth`` of a session's ``oauth`` server: its kept login, refreshed when
    expired (and stored back), never a new login.

    Raises:
        AirException(config_error): no login is kept for its URL, or the kept one is damaged;
            later, from the SDK's flow, when the server refuses it.
    """
    assert server.url is not None
    try:
        login = load_login(server.url)
    except OSError as exc:
        raise _refused(server, f"its login cannot be read: {shown(str(exc))}") from None
    if login is None or not login.tokens or not login.client:
        raise _refused(server, f"not logged in to {shown(server.url)}")
    if register is not None:
        register(*login.secrets())

    async def needed(*_: Any) -> Any:
        raise _refused(server, "its login was refused (expired or revoked)")

    storage = _Storage(server.url, login, register, persist=True)
    try:
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        redirect = str((login.client.get("redirect_uris") or ["http://127.0.0.1/"])[0])
        provider = _provider(server, storage, redirect, needed, needed)
        context = provider.context
        context.token_expiry_time = login.expires_at
        if login.oauth_metadata:
            context.oauth_metadata = OAuthMetadata.model_validate(login.oauth_metadata)
        if login.resource_metadata:
            prm = ProtectedResourceMetadata.model_validate(login.resource_metadata)
            context.protected_resource_metadata = prm
            context.auth_server_url = str(prm.authorization_servers[0])
    except ValueError:  # pydantic's ValidationError: a file edited by hand
        raise _refused(server, "its kept login is damaged") from None
    return provider


async def _request_target(stream: trio.SocketStream) -> str | None:
    """The target of one HTTP request's first line (None: not a GET)."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < _REQUEST_BYTES:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        head += chunk
    words = head.split(b"\r\n", 1)[0].split(b" ")
    if len(words) != 3 or words[0] != b"GET":
        return None
    return words[1].decode("ascii", "replace")


async def _answer(stream: trio.SocketStream, status: str, text: str) -> None:
    body = f"<!doctype html><title>air</title><p>{text}</p>\n".encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    try:
        await stream.send_all(head.encode() + body)
    except trio.BrokenResourceError:
        pass


async def _redirect(
    listener: trio.SocketListener, server: McpServer, state: str
) -> AuthorizationCodeResult:
    """Wait for the browser's redirect to ``CALLBACK_PATH``; its ``state`` must be ``state``.

    Raises:
        AirException(config_error): another state, or the authorization server's refusal.
    """
    from mcp.shared.auth import AuthorizationCodeResult

    while True:
        stream = await listener.accept()
        async with stream:
            target = None
            with trio.move_on_after(10):
                target = await _request_target(stream)
            path, _, query = (target or "").partition("?")
            if path != CALLBACK_PATH:  # a favicon, a probe: not the redirect
                await _answer(stream, "404 Not Found", "Not air's login.")
                continue
            got = {key: values[0] for key, values in parse_qs(query).items()}
            if not secrets.compare_digest(got.get("state", "").encode(), state.encode()):
                await _answer(
                    stream, "400 Bad Request", "air: this is not the login air asked for."
                )
                raise _refused(
                    server,
                    "the login's redirect carried another state than air sent (a stale or "
                    "forged redirect): nothing was stored",
                    f"Run `air mcp login {server.name}` again and open the URL it prints.",
                )
            if "error" in got or not got.get("code"):
                why = shown(got.get("error", "no code"))
                if got.get("error_description"):
                    why += f": {shown(got['error_description'][:200])}"
                await _answer(stream, "400 Bad Request", "air: the login was refused.")
                raise _refused(
                    server,
                    f"the authorization server refused the login ({why}): nothing was stored",
                    f"Run `air mcp login {server.name}` again and allow air's access.",
                )
            await _answer(stream, "200 OK", "air is logged in. You can close this page.")
            return AuthorizationCodeResult(code=got["code"], state=got["state"], iss=got.get("iss"))


async def login(server: McpServer, show: Callable[[str], None]) -> tuple[str, str | None]:
    """Log in to ``server`` (its whole OAuth flow) and keep the login. Returns the file it is
    kept in and the MCP revision the session spoke.

    Raises:
        AirException(config_error): the flow failed (refused, another state, no redirect
            within ``LOGIN_WAIT_S``), or the server asked for no login.
    """
    assert server.url is not None
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener = listeners[0]
    port = listener.socket.getsockname()[1]
    redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
    storage = _Storage(server.url, None, None, persist=False)
    sent: list[str] = []

    async def open_url(url: str) -> None:
        if not private_way(url):
            raise _refused(
                server,
                f"its authorization server's login page {shown(url.split('?', 1)[0])} is not "
                "served over https: a person's password would cross the network unencrypted; "
                "nothing was shown or stored",
                "Ask the server's operator for https endpoints in its OAuth metadata, or remove "
                f"the server from {server.source}.",
            )
        sent.append(parse_qs(urlsplit(url).query).get("state", [""])[0])
        show(url)

    async def wait() -> AuthorizationCodeResult:
        with trio.move_on_after(LOGIN_WAIT_S):
            return await _redirect(listener, server, sent[-1])
        raise _refused(
            server,
            f"no login came back within {LOGIN_WAIT_S / 60:g} min: nothing was stored",
            f"Run `air mcp login {server.name}` again and open the URL it prints.",
        )

    provider = _provider(server, storage, redirect_uri, open_url, wait)
    async with listener:
        async with open_connection(
            server,
            cwd=os.getcwd(),
            marker="",
            errlog=sys.stderr,
            auth=provider,
            start_s=LOGIN_WAIT_S + START_TIMEOUT_S,
        ) as connection:
            protocol = connection.protocol
    if not sent or not storage.login.tokens:
        raise _refused(
            server,
            f"{shown(server.url)} asked for no login",
            f"Remove `oauth: true` from {server.source}.",
        )
    context = provider.context
    kept = storage.login._replace(
        oauth_metadata=_dumped(context.oauth_metadata),
        resource_metadata=_dumped(context.protected_resource_metadata),
    )
    return save_login(kept), protocol


def _dumped(model: Any) -> dict[str, Any] | None:
    return None if model is None else dict(model.model_dump(mode="json", exclude_none=True))


Revoked = Literal["revoked", "refused", "unreachable", "no endpoint", "not over https"]
"""What ``revoke`` did."""


async def revoke(login: Login) -> Revoked:
    """Ask the authorization server to revoke ``login``'s tokens (RFC 7009), the refresh token
    first (revoking it ends the grant): ``revoked`` when it accepted every one, ``refused`` when
    it answered another status, ``unreachable`` when a request failed (10 s each), ``no
    endpoint`` when its metadata names none, ``not over https`` when it names one that is
    neither https nor on this machine (nothing sent). The request authenticates the client as
    it registered (``client_secret_basic``, ``_post`` or none) and follows no redirect."""
    endpoint = (login.oauth_metadata or {}).get("revocation_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        return "no endpoint"
    if not private_way(endpoint):
        return "not over https"
    import httpx2

    client_id = str(login.client.get("client_id") or "")
    secret = login.client.get("client_secret")
    basic = isinstance(secret, str) and login.client.get("token_endpoint_auth_method") == (
        "client_secret_basic"
    )
    form = {"client_id": client_id}
    if not basic:  # a public client's is "" (RFC 6749 2.3.1 lets it be sent so): the SDK's
        form["client_secret"] = secret if isinstance(secret, str) else ""  # endpoint needs it
    outcome: Revoked = "revoked"
    auth = httpx2.BasicAuth(client_id, str(secret)) if basic else None
    async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False, auth=auth) as client:
        for hint in ("refresh_token", "access_token"):
            token = login.tokens.get(hint)
            if not isinstance(token, str) or not token:
                continue
            try:
                reply = await client.post(
                    endpoint, data={**form, "token": token, "token_type_hint": hint}
                )
            except httpx2.HTTPError:
                return "unreachable"
            if reply.status_code != 200:
                outcome = "refused"
    return outcome
