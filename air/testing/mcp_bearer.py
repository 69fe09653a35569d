"""An MCP server over streamable HTTP that requires a bearer token, for the tests of
``air.mcp.credentials``: the official SDK's ``MCPServer`` as a resource server with its own
bearer-token middleware (``AuthSettings`` and a ``TokenVerifier``), as a remote server behind
OAuth is; nothing of the refusal is this module's but which token the verifier accepts.

``python -m air.testing.mcp_bearer PORT`` serves ``http://127.0.0.1:PORT/mcp``. The accepted
token is ``$MCP_EXPECTED_TOKEN``; with ``$MCP_EXPECTED_KEY`` set, a request must also carry it
as ``X-Api-Key`` (answered 401 otherwise, as a key-checking gateway does). Tools: ``echo``, and
``leak``, which answers with the token it was called with (a server that echoes what it got:
what air stores must not hold it).
"""

from __future__ import annotations

import os
import sys
from typing import Any


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: mcp_bearer PORT")
    port = int(sys.argv[1])
    import uvicorn
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    expected, key = os.environ["MCP_EXPECTED_TOKEN"], os.environ.get("MCP_EXPECTED_KEY")
    url = f"http://127.0.0.1:{port}"

    class Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            if token != expected:
                return None
            return AccessToken(token=token, client_id="air-test", scopes=[])

    server = MCPServer(
        "bearer",
        token_verifier=Verifier(),
        auth=AuthSettings(issuer_url=url, resource_server_url=f"{url}/mcp"),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    def leak() -> str:
        """Say which token the call came with."""
        return f"called with {expected}"

    app = server.streamable_http_app()

    async def gated(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if key is None or scope["type"] != "http" or headers.get(b"x-api-key") == key.encode():
            await app(scope, receive, send)
            return
        start = {"type": "http.response.start", "status": 401}
        start["headers"] = [(b"content-type", b"text/plain")]
        await send(start)
        await send({"type": "http.response.body", "body": b"a valid X-Api-Key is required"})

    uvicorn.run(gated, host="127.0.0.1", port=port, log_level="error")


if __name__ == "__main__":
    main()
