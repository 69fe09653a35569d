"""An MCP server behind OAuth 2.1 as MCP's authorization spec has it, for the tests of
``air mcp login`` and ``air.mcp.oauth``: the official SDK's ``MCPServer`` as both the
authorization server (its routes: protected resource metadata, authorization server metadata,
dynamic client registration, ``/authorize`` with PKCE, ``/token``) and the resource server
(its bearer middleware). Only the provider's memory is this module's: clients, codes and
tokens live in this process, and ``/authorize`` approves at once, redirecting to the client's
``redirect_uri`` with a code (a test plays the browser by GETting the URL air prints).

``python -m air.testing.mcp_oauth PORT`` serves ``http://127.0.0.1:PORT/mcp``. Its behaviour is
read from ``$MCP_OAUTH_CONTROL`` (a file, read at each request; missing: none of these): a line
``deny`` makes ``/authorize`` redirect with ``error=access_denied``, ``refuse-refresh`` makes a
refresh ``invalid_grant``, ``expires-in N`` issues access tokens valid N seconds (default
3600), ``metadata FIELD URL`` names ``URL`` as ``FIELD`` of its authorization server metadata
(``token_endpoint``, ``authorization_endpoint``: a server whose metadata points elsewhere; the
SDK's own settings refuse a plain-HTTP issuer). Every grant is appended to ``$MCP_OAUTH_LOG``
as one line (``code`` or ``refresh``), every revoked token as ``revoke`` (its revocation
endpoint is on).
Tools: ``echo``, and ``leak``, which answers with the access token it was called with (a
server that echoes what it got: what air stores must not hold it).
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from typing import Any


def _control() -> list[str]:
    path = os.environ.get("MCP_OAUTH_CONTROL", "")
    try:
        with open(path, encoding="utf-8") as handle:
            return [line.strip() for line in handle]
    except OSError:
        return []


def _expires_in() -> int:
    for line in _control():
        if line.startswith("expires-in "):
            return int(line.split()[1])
    return 3600


def _logged(what: str) -> None:
    path = os.environ.get("MCP_OAUTH_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(what + "\n")


def _metadata_overrides() -> dict[str, str]:
    found = {}
    for line in _control():
        words = line.split()
        if len(words) == 3 and words[0] == "metadata":
            found[words[1]] = words[2]
    return found


def _with_metadata(app: Any) -> Any:
    """``app`` whose authorization server metadata carries ``_metadata_overrides()``."""
    import json

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        overrides = _metadata_overrides()
        if (
            scope["type"] != "http"
            or not overrides
            or not scope["path"].startswith("/.well-known/oauth-authorization-server")
        ):
            await app(scope, receive, send)
            return
        started: dict[str, Any] = {}
        body = b""

        async def hold(message: Any) -> None:
            nonlocal body
            if message["type"] == "http.response.start":
                started.update(message)
                return
            body += message.get("body", b"")
            if message.get("more_body"):
                return
            document = json.loads(body) | overrides
            out = json.dumps(document).encode()
            headers = [(k, v) for k, v in started["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(out)).encode()))
            await send({**started, "headers": headers})
            await send({"type": "http.response.body", "body": out})

        await app(scope, receive, hold)

    return wrapped


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: mcp_oauth PORT")
    port = int(sys.argv[1])
    import uvicorn
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.provider import (
        AccessToken,
        AuthorizationCode,
        AuthorizationParams,
        RefreshToken,
        TokenError,
        construct_redirect_uri,
    )
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    url = f"http://127.0.0.1:{port}"

    class Provider:
        """Everything in memory; every authorization approved."""

        def __init__(self) -> None:
            self.clients: dict[str, OAuthClientInformationFull] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.refresh: dict[str, RefreshToken] = {}
            self.access: dict[str, AccessToken] = {}

        async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
            return self.clients.get(client_id)

        async def register_client(self, client_info: OAuthClientInformationFull) -> None:
            assert client_info.client_id is not None
            self.clients[client_info.client_id] = client_info

        async def authorize(
            self, client: OAuthClientInformationFull, params: AuthorizationParams
        ) -> str:
            if "deny" in _control():
                return construct_redirect_uri(
                    str(params.redirect_uri),
                    error="access_denied",
                    error_description="the user said no",
                    state=params.state,
                )
            code = secrets.token_urlsafe(24)
            assert client.client_id is not None
            self.codes[code] = AuthorizationCode(
                code=code,
                scopes=params.scopes or [],
                expires_at=time.time() + 300,
                client_id=client.client_id,
                code_challenge=params.code_challenge,
                redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                resource=params.resource,
            )
            return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

        async def load_authorization_code(
            self, client: OAuthClientInformationFull, authorization_code: str
        ) -> AuthorizationCode | None:
            return self.codes.get(authorization_code)

        def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
            access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
            expires_in = _expires_in()
            self.access[access] = AccessToken(
                token=access,
                client_id=client_id,
                scopes=scopes,
                expires_at=int(time.time()) + expires_in,
                resource=resource,
            )
            self.refresh[refresh] = RefreshToken(
                token=refresh, client_id=client_id, scopes=scopes, resource=resource
            )
            return OAuthToken(
                access_token=access,
                expires_in=expires_in,
                refresh_token=refresh,
                scope=" ".join(scopes) or None,
            )

        async def exchange_authorization_code(
            self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
        ) -> OAuthToken:
            self.codes.pop(authorization_code.code, None)
            _logged("code")
            return self._issue(
                authorization_code.client_id, authorization_code.scopes, authorization_code.resource
            )

        async def load_refresh_token(
            self, client: OAuthClientInformationFull, refresh_token: str
        ) -> RefreshToken | None:
            return self.refresh.get(refresh_token)

        async def exchange_refresh_token(
            self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
        ) -> OAuthToken:
            if "refuse-refresh" in _control():
                raise TokenError("invalid_grant", "the refresh token was revoked")
            self.refresh.pop(refresh_token.token, None)
            _logged("refresh")
            return self._issue(
                refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
            )

        async def load_access_token(self, token: str) -> AccessToken | None:
            found = self.access.get(token)
            if found is None or (found.expires_at is not None and found.expires_at < time.time()):
                return None
            return found

        async def revoke_token(self, token: Any) -> None:
            _logged("revoke")
            self.access.pop(token.token, None)
            self.refresh.pop(token.token, None)

        async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
            raise TokenError("unsupported_grant_type", "no identity assertions here")

    server = MCPServer(
        "oauth",
        auth_server_provider=Provider(),
        auth=AuthSettings(
            issuer_url=url,
            resource_server_url=f"{url}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    def leak() -> str:
        """Say which access token the call came with."""
        token = get_access_token()
        return f"called with {token.token if token else None}"

    app = _with_metadata(server.streamable_http_app())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


if __name__ == "__main__":
    main()
