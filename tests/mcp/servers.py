"""The published MCP servers the tests talk to (installed by scripts/setup.sh in .mcp-servers/).

``time_server()``: ``mcp-server-time`` from PyPI (stdio). ``everything_http()``: the reference
``@modelcontextprotocol/server-everything`` from npm, serving streamable HTTP on a free port of
127.0.0.1 for the test's duration (mcp-server-time speaks both MCP eras, server-everything only
the handshake's; ``modern_stdio`` / ``modern_http``: the SDK's servers speaking only 2026-07-28).
A missing server fails the test loudly, never skips it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / ".mcp-servers"


def time_server() -> str:
    path = SERVERS / "venv" / "bin" / "mcp-server-time"
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run scripts/setup.sh (it installs mcp-server-time)")
    return str(path)


def hostile_server() -> list[str]:
    return [sys.executable, "-m", "air.testing.mcp_hostile"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def everything_http() -> Iterator[str]:
    """The URL of a running server-everything (streamable HTTP), stopped afterwards."""
    program = SERVERS / "node" / "node_modules" / ".bin" / "mcp-server-everything"
    if not os.access(program, os.X_OK):
        pytest.fail(f"{program} is missing: run scripts/setup.sh (it installs server-everything)")
    with _http_server(lambda port: [str(program), "streamableHttp"], "server-everything") as url:
        yield url


def everything_stdio() -> list[str]:
    """The argv of server-everything over stdio (its ``get-env`` tool answers with its whole
    environment)."""
    program = SERVERS / "node" / "node_modules" / ".bin" / "mcp-server-everything"
    if not os.access(program, os.X_OK):
        pytest.fail(f"{program} is missing: run scripts/setup.sh (it installs server-everything)")
    return [str(program), "stdio"]


@contextmanager
def bearer_http(token: str, key: str | None = None) -> Iterator[str]:
    """The URL of a running ``air.testing.mcp_bearer`` (the SDK's server requiring the bearer
    ``token``, and ``key`` as ``X-Api-Key`` when given), stopped afterwards."""
    argv = [sys.executable, "-m", "air.testing.mcp_bearer"]
    env = {"MCP_EXPECTED_TOKEN": token} | ({"MCP_EXPECTED_KEY": key} if key else {})
    with _http_server(lambda port: [*argv, str(port)], "the bearer server", env) as url:
        yield url


@contextmanager
def oauth_http(control: Path, log: Path) -> Iterator[str]:
    """The URL of a running ``air.testing.mcp_oauth`` (the SDK's authorization and resource
    server, behaviour read from ``control``, grants appended to ``log``), stopped afterwards."""
    argv = [sys.executable, "-m", "air.testing.mcp_oauth"]
    env = {"MCP_OAUTH_CONTROL": str(control), "MCP_OAUTH_LOG": str(log)}
    with _http_server(lambda port: [*argv, str(port)], "the OAuth server", env) as url:
        yield url


@contextmanager
def hostile_http() -> Iterator[str]:
    """The URL of a running ``air.testing.mcp_hostile_http``, stopped afterwards."""
    argv = [sys.executable, "-m", "air.testing.mcp_hostile_http"]
    with _http_server(lambda port: [*argv, str(port)], "the hostile HTTP server") as url:
        yield url


def modern_stdio(argv: list[str]) -> list[str]:
    """``argv`` (a dual-era stdio server) behind ``air.testing.mcp_modern``: 2026-07-28 only."""
    return [sys.executable, "-m", "air.testing.mcp_modern", "stdio", "--", *argv]


@contextmanager
def modern_http() -> Iterator[str]:
    """The URL of a running ``air.testing.mcp_modern http`` (2026-07-28 only), stopped
    afterwards."""
    argv = [sys.executable, "-m", "air.testing.mcp_modern", "http"]
    with _http_server(lambda port: [*argv, str(port)], "the modern-only HTTP server") as url:
        yield url


@contextmanager
def _http_server(
    argv: Callable[[int], list[str]], what: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Start ``argv(port)`` (``PORT`` and ``env`` in its environment too) and yield its ``/mcp``
    URL once it listens; its session is killed afterwards."""
    port = _free_port()
    proc = subprocess.Popen(
        argv(port),
        env={**os.environ, "PORT": str(port), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{what} did not listen on {port}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
