"""OAuth 2.1 for remote MCP servers (``oauth: true``): ``air mcp login`` runs the SDK's flow
(discovery, dynamic registration, PKCE, a redirect to 127.0.0.1) and keeps the login for the
server's exact URL in ``~/.air/mcp-auth`` (0700, files 0600); a session and ``air mcp tools``
use it, refreshed when it expired and stored back, and never log in themselves. The server is
the SDK's own authorization and resource server (``air.testing.mcp_oauth``, which approves at
once: the test plays the browser by GETting the URL air prints), over real HTTP on 127.0.0.1;
``air mcp login`` is a real process whose stdout is read line by line."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from air.contracts.error import AirException
from air.contracts.provider import ToolUseBlock
from air.mcp.config import parse_servers
from air.mcp.oauth import revoke
from air.mcp.oauth_store import Login, auth_file
from air.session.trust import trust_scan
from tests.forked_air import air_cli
from tests.headless import session_events
from tests.mcp.conftest import one_call_project
from tests.mcp.servers import oauth_http


@pytest.mark.parametrize(
    "server",
    [
        "{command: x, oauth: true}",
        "{url: 'https://x.example/', oauth: true, auth_ref: T}",
        "{url: 'https://x.example/', oauth: true, headers: {authorization: v}}",
        "{url: 'https://x.example/', oauth: true, header_refs: {Authorization: T}}",
        "{url: 'http://10.0.0.5/mcp', oauth: true}",
        "{url: 'http://127.evil.example/mcp', oauth: true}",
        "{url: 'https://x.example/', oauth: 'yes'}",
        "{url: 'https://x.example/', oauth: true, header_refs: {X-Api-Key: T}}",
    ],
    ids=[f"o{i}" for i in range(8)],
)
def test_oauth_is_refused_where_a_token_would_be_misused(server: str) -> None:
    with pytest.raises(AirException) as caught:
        parse_servers(f"servers:\n  a: {server}\n", "mcp.yaml")
    assert caught.value.kind == "config_error"
    assert (caught.value.error.metadata or {})["field"] == "servers.a.oauth"


def test_an_oauth_server_is_https_or_on_this_machine_and_trust_names_it(tmp_path: Path) -> None:
    text = (
        "servers:\n"
        "  linear: {url: 'https://mcp.linear.app/mcp', oauth: true}\n"
        "  here: {url: 'http://127.0.0.1:9/mcp', oauth: true, headers: {X-Team: a}}\n"
    )
    linear, here = parse_servers(text, "mcp.yaml")
    assert linear.oauth
    assert here.oauth
    shared = tmp_path / ".air" / "shared"
    shared.mkdir(parents=True)
    (shared / "mcp.yaml").write_text(text)
    said = {f.field: f.detail for f in trust_scan(str(tmp_path)).findings}
    assert "log in with OAuth to https://mcp.linear.app/mcp" in said["servers.linear.oauth"]
    assert "send your token there" in said["servers.linear.oauth"]


def _env(home: Path, **more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "MCP_"))}
    return base | {"HOME": str(home)} | more


def _expire(kept: Path) -> None:
    """The kept login's access token as if its lifetime had passed."""
    login = json.loads(kept.read_text())
    login["expires_at"] = time.time() - 60
    kept.write_text(json.dumps(login))


def _air(args: tuple[str, ...], cwd: Path, home: Path) -> tuple[int, str, str]:
    done = air_cli(args, cwd=cwd, env=_env(home), timeout=120)
    return done.returncode, done.stdout, done.stderr


def _login(cwd: Path, home: Path, browse: str = "follow") -> tuple[int, str, str]:
    """``air mcp login docs`` as a real process; the test is the browser: it GETs the printed
    URL and then the redirect (``browse``: ``follow``, ``forge`` its state, ``interrupt`` air
    with SIGINT instead; ``none``: no URL is expected)."""
    argv = [sys.executable, "-m", "air.cli", "mcp", "login", "docs"]
    proc = subprocess.Popen(
        argv, cwd=cwd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen = ""
    for line in proc.stdout:
        seen += line
        if line.startswith("  http"):
            assert browse != "none", f"air showed a URL to open: {line}"
            if browse == "interrupt":
                proc.send_signal(signal.SIGINT)
                break
            redirect = httpx.get(line.strip(), timeout=30).headers["location"]
            assert redirect.startswith("http://127.0.0.1:")
            if browse == "forge":
                redirect = redirect.replace("state=", "state=forged")
            httpx.get(redirect, timeout=30)
            break
    out, err = proc.communicate(timeout=120)
    return proc.returncode, seen + out, err


def _setup(tmp_path: Path, url: str) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    root.mkdir()
    (home / ".air" / "mcp.yaml").write_text(f"servers:\n  docs: {{url: '{url}', oauth: true}}\n")
    return home, root


def _kept(home: Path) -> Path:
    files = list((home / ".air" / "mcp-auth").iterdir())
    assert len(files) == 1, files
    return files[0]


@pytest.mark.slow
def test_login_then_tools_then_a_refresh_stored_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    control, grants = tmp_path / "control", tmp_path / "grants"
    with oauth_http(control, grants) as url:
        home, root = _setup(tmp_path, url)
        (home / ".air" / "mcp-auth").mkdir(mode=0o755)  # widened: made the user's alone again
        code, out, err = _air(("mcp", "tools", "docs"), root, home)
        assert code == 2
        assert "not logged in" in err
        assert "air mcp login docs" in err
        code, out, err = _login(root, home)
        assert code == 0, err
        assert "docs: logged in" in out
        kept = _kept(home)
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        login = json.loads(kept.read_text())
        assert login["url"] == url
        token = login["tokens"]["access_token"]
        code, out, err = _air(("mcp", "list"), root, home)
        assert "OAuth: logged in" in out
        code, out, err = _air(("mcp", "tools", "docs"), root, home)
        assert code == 0, err
        assert "mcp__docs__leak" in out
        assert token not in out + err
        # a token past its lifetime (as the server gave it: air keeps when it ends; the test
        # moves that into the past, as waiting out a lifetime of 1 s did, which a loaded
        # machine could spend in the login itself): the next start refreshes it, keeps the new
        control.write_text("expires-in 600\n")
        assert _login(root, home)[0] == 0
        assert 590 < json.loads(kept.read_text())["expires_at"] - time.time() <= 601
        _expire(kept)
        before = json.loads(kept.read_text())["tokens"]
        code, out, err = _air(("mcp", "tools", "docs"), root, home)
        assert code == 0, err
        assert grants.read_text().split() == ["code", "code", "refresh"]
        after = json.loads(kept.read_text())["tokens"]
        assert after["access_token"] != before["access_token"]
        assert after["refresh_token"] != before["refresh_token"]
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        # a refresh refused: the start says to log in again, and waits for no one
        control.write_text("refuse-refresh\n")
        _expire(kept)
        code, out, err = _air(("mcp", "tools", "docs"), root, home)
        assert code == 2
        assert "its login was refused" in err
        assert "air mcp login docs" in err
        assert "Traceback" not in err
        assert "OAuth flow error" not in err
        # the same server under another URL never gets this URL's login
        other = url.replace("127.0.0.1", "localhost")
        (home / ".air" / "mcp.yaml").write_text(
            f"servers:\n  docs: {{url: '{other}', oauth: true}}\n"
        )
        monkeypatch.setenv("HOME", str(home))
        planted = Path(auth_file(other))
        planted.write_bytes(kept.read_bytes())  # another URL's login under this URL's name
        code, out, err = _air(("mcp", "tools", "docs"), root, home)
        assert code == 2
        assert f"not logged in to {other}" in err
        planted.unlink()
        (home / ".air" / "mcp.yaml").write_text(
            f"servers:\n  docs: {{url: '{url}', oauth: true}}\n"
        )
        refresh = json.loads(kept.read_text())["tokens"]["refresh_token"]
        code, out, err = _air(("mcp", "logout", "docs"), root, home)
        assert code == 0, err
        assert "logged out (the server revoked its tokens" in out, err
        assert grants.read_text().split()[-1] == "revoke"  # the refresh token: the grant ended
        assert refresh not in out + err
        assert not kept.exists()
        assert _air(("mcp", "tools", "docs"), root, home)[0] == 2


@pytest.mark.slow
def test_a_login_refused_forged_or_interrupted_stores_nothing(tmp_path: Path) -> None:
    control, grants = tmp_path / "control", tmp_path / "grants"
    with oauth_http(control, grants) as url:
        home, root = _setup(tmp_path, url)
        code, _out, err = _login(root, home, browse="forge")
        assert code == 2, err
        assert "another state than air sent" in err
        assert "Traceback" not in err
        control.write_text("deny\n")
        code, _out, err = _login(root, home)
        assert code == 2, err
        assert "refused the login (access_denied: the user said no)" in err
        assert "Traceback" not in err
        control.write_text("")
        code, _out, err = _login(root, home, browse="interrupt")
        assert code == 130, err
        assert "interrupted; nothing was stored" in err
        assert not (home / ".air" / "mcp-auth").exists() or not list(
            (home / ".air" / "mcp-auth").iterdir()
        )
        assert not grants.exists()  # no code was ever exchanged


@contextmanager
def _another_machine() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server at this machine's host name (to air: another machine, as no address
    tells it otherwise) and the requests it got (each answered 400)."""
    name = socket.gethostname()
    got: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            got.append(f"{self.command} {self.path}")
            self.send_response(400)
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST = _any

        def log_message(self, *args: object) -> None:
            pass

    try:
        address = socket.gethostbyname(name)
    except OSError:  # a name this machine cannot resolve: air must refuse it all the same
        address = "127.0.0.1"
    server = http.server.ThreadingHTTPServer((address, 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{name}:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_login_sends_nothing_to_an_endpoint_its_metadata_names_in_plain_http(
    tmp_path: Path,
) -> None:
    """OAuth 2.1 wants every authorization server endpoint over https: the SDK's flow follows
    whatever the server's metadata names, so air's transport refuses a plain-HTTP request off
    this machine before it is sent (the code and the PKCE verifier never reach the token
    endpoint), and a login page in plain HTTP is never shown."""
    control, grants = tmp_path / "control", tmp_path / "grants"
    with oauth_http(control, grants) as url, _another_machine() as (elsewhere, got):
        home, root = _setup(tmp_path, url)
        control.write_text(f"metadata token_endpoint {elsewhere}/token\n")
        code, out, err = _login(root, home)
        assert code == 2, out + err
        assert f"plain HTTP to {elsewhere}/token" in err
        assert "nothing was sent" in err
        assert "Traceback" not in err
        assert got == []  # the code never went there
        assert not grants.exists()
        assert not (home / ".air" / "mcp-auth").exists() or not list(
            (home / ".air" / "mcp-auth").iterdir()
        )
        control.write_text(f"metadata authorization_endpoint {elsewhere}/authorize\n")
        code, out, err = _login(root, home, browse="none")
        assert code == 2, out + err
        assert f"login page {elsewhere}/authorize is not served over https" in err
        assert "  http" not in out  # no URL to open was printed
        assert "Traceback" not in err
        # the same server with its own endpoints: the login completes
        control.write_text("")
        assert _login(root, home)[0] == 0
        assert grants.read_text().split() == ["code"]
        assert got == []


def _project(root: Path) -> None:
    one_call_project(root, "leak", ToolUseBlock(id="toolu_o1", name="mcp__docs__leak", input={}))


@pytest.mark.slow
def test_a_headless_run_uses_the_login_and_stores_no_token(tmp_path: Path) -> None:
    control, grants = tmp_path / "control", tmp_path / "grants"
    with oauth_http(control, grants) as url:
        home, root = _setup(tmp_path, url)
        _project(root)
        (home / ".air" / "permissions.yaml").write_text(
            "rules:\n  - {action: allow, tool: 'mcp__docs__*'}\n"
        )
        run = ("run", "--headless", "batch.yaml", "--cassette", "cassettes", "--json")
        code, out, err = _air(run, root, home)
        assert code == 2, err  # no login: refused at once, nobody is waited for
        assert "air mcp login docs" in err
        assert _login(root, home)[0] == 0
        login = json.loads(_kept(home).read_text())
        secrets = [login["tokens"]["access_token"], login["tokens"]["refresh_token"]]
        code, out, err = _air(run, root, home)
        assert code == 0, err
        completed = [e for e in session_events(root) if e["type"] == "tool.completed"]
        assert len(completed) == 1
        assert "called with" in json.dumps(completed[0])
        assert not [s for s in secrets if s in out + err]
        held = [
            str(path)
            for path in (root / ".air").rglob("*")
            if path.is_file() and any(s.encode() in path.read_bytes() for s in secrets)
        ]
        assert held == []  # the session's SQLite, its artifacts, the logs


@pytest.mark.parametrize(
    ("endpoint", "outcome"),
    [(None, "no endpoint"), ("http://10.0.0.5/revoke", "not over https")],
    ids=["none", "plain"],
)
async def test_a_logout_sends_no_token_where_it_cannot_be_revoked_safely(
    endpoint: str | None, outcome: str
) -> None:
    metadata = {"revocation_endpoint": endpoint} if endpoint else {}
    login = Login(
        url="https://x.example/mcp",
        client={"client_id": "c", "token_endpoint_auth_method": "none"},
        tokens={"access_token": "a-1", "refresh_token": "r-1", "token_type": "Bearer"},
        oauth_metadata=metadata,
    )
    assert await revoke(login) == outcome
