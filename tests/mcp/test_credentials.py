"""What an MCP server takes from air's environment (IMPL-MCP-5): ``env_refs`` for a stdio
server, ``auth_ref`` / ``header_refs`` for an HTTP one. Read from the environment when the server
starts (a file holds only the names), refused where a value would cross the network unencrypted,
named to the user before a project's file is trusted, and registered with the run's redactor so
a server that echoes it (server-everything's ``get-env``, a tool that returns its token) never
puts it in an event. Real servers: server-everything from npm (stdio) and the SDK's own bearer
middleware (``air.testing.mcp_bearer``) over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException
from air.contracts.provider import ToolUseBlock
from air.mcp.config import McpServer, parse_servers
from air.mcp.credentials import resolve
from air.mcp.service import start_servers
from air.session.trust import trust_scan
from tests.forked_air import air_cli
from tests.headless import session_events
from tests.mcp.conftest import McpEnv, one_call_project
from tests.mcp.servers import bearer_http, everything_stdio, hostile_server

TOKEN = "tok-7d1c0a9e52f3b8"
"""A token of no known shape, in a variable of no secret-looking name (``MCP_TEST_CRED``): only
the explicit registration keeps it out of what air stores."""


def _refused(text: str) -> str:
    with pytest.raises(AirException) as caught:
        parse_servers(text, "mcp.yaml")
    assert caught.value.kind == "config_error"
    return str((caught.value.error.metadata or {})["field"])


@pytest.mark.parametrize(
    ("server", "field"),
    [
        ("{url: 'http://10.0.0.5/mcp', auth_ref: T}", "servers.a.auth_ref"),
        ("{url: 'http://127.evil.example/mcp', auth_ref: T}", "servers.a.auth_ref"),
        ("{url: 'http://localhost.evil.example/', header_refs: {K: T}}", "servers.a.header_refs"),
        ("{command: x, auth_ref: T}", "servers.a.auth_ref"),
        ("{command: x, header_refs: {K: T}}", "servers.a.header_refs"),
        ("{url: 'https://x.example/', env_refs: {A: T}}", "servers.a.env_refs"),
        ("{command: x, env: {A: b}, env_refs: {A: T}}", "servers.a.env_refs.A"),
        ("{url: 'https://x/', headers: {k: v}, header_refs: {K: T}}", "servers.a.header_refs.K"),
        ("{url: 'https://x/', headers: {Authorization: v}, auth_ref: T}", "servers.a.auth_ref"),
        ("{url: 'https://x/', header_refs: {'Bad Name': T}}", "servers.a.header_refs"),
        ("{url: 'https://x/', header_refs: {K: 'not a name'}}", "servers.a.header_refs.K"),
        ("{command: x, env_refs: {A: '$T'}}", "servers.a.env_refs.A"),
        ("{url: 'https://x/', auth_ref: [T]}", "servers.a.auth_ref"),
    ],
    ids=[f"r{i}" for i in range(13)],
)
def test_a_reference_air_would_misuse_is_refused_naming_its_field(server: str, field: str) -> None:
    assert _refused(f"servers:\n  a: {server}\n") == field


def test_references_are_names_read_on_this_machine_or_over_https() -> None:
    text = (
        "servers:\n"
        "  gh: {command: gh-mcp, env_refs: {GITHUB_TOKEN: GH_PAT}}\n"
        "  docs: {url: 'https://docs.example/mcp', auth_ref: DOCS, header_refs: {X-Api-Key: K}}\n"
        "  here: {url: 'http://127.0.0.1:9/mcp', auth_ref: T}\n"
        "  six: {url: 'http://[::1]:9/mcp', auth_ref: T}\n"
    )
    gh, docs, here, six = parse_servers(text, "mcp.yaml")
    assert gh.credentials() == [("env GITHUB_TOKEN", "GH_PAT")]
    assert docs.credentials() == [("header X-Api-Key", "K"), ("bearer token", "DOCS")]
    assert here.auth_ref == six.auth_ref == "T"


def test_trust_names_each_variable_and_where_it_would_go(tmp_path: Path) -> None:
    shared = tmp_path / ".air" / "shared"
    shared.mkdir(parents=True)
    (shared / "mcp.yaml").write_text(
        "servers:\n"
        "  gh: {command: gh-mcp, env_refs: {GITHUB_TOKEN: GH_PAT}}\n"
        "  docs: {url: 'https://docs.example/mcp', auth_ref: ANTHROPIC_API_KEY,"
        " header_refs: {X-Api-Key: DOCS_KEY}}\n"
    )
    said = {f.field: f.detail for f in trust_scan(str(tmp_path)).findings}
    assert "$GH_PAT" in said["servers.gh.env_refs.GITHUB_TOKEN"]
    assert "as its variable GITHUB_TOKEN" in said["servers.gh.env_refs.GITHUB_TOKEN"]
    bearer = said["servers.docs.auth_ref"]
    assert "$ANTHROPIC_API_KEY" in bearer
    assert "https://docs.example/mcp" in bearer
    assert "$DOCS_KEY" in said["servers.docs.header_refs.X-Api-Key"]


def _one(text: str) -> McpServer:
    return parse_servers(text, "mcp.yaml")[0]


def test_a_missing_or_unsendable_value_is_refused_naming_the_variable_never_the_value() -> None:
    server = _one("servers:\n  a: {url: 'https://x/', auth_ref: T, header_refs: {X-K: K}}\n")
    seen: list[str] = []
    keep = lambda *values: seen.extend(values)  # noqa: E731
    with pytest.raises(AirException) as missing:
        resolve(server, {"K": "key-1"}, keep)
    assert missing.value.kind == "config_error"
    assert "T is not set" in missing.value.error.message
    assert "key-1" not in str(missing.value.error.model_dump())
    assert seen == []  # nothing registered, nothing started
    with pytest.raises(AirException) as broken:
        resolve(server, {"K": "key-1\r\nX-Evil: 1", "T": "t"}, keep)
    assert "no header value" in broken.value.error.message
    assert "X-Evil" not in str(broken.value.error.model_dump())
    with pytest.raises(AirException):
        resolve(server, {"K": "key-1", "T": ""}, keep)  # empty is unset
    got = resolve(server, {"K": "key-1", "T": "tok"}, keep)
    assert got.headers == {"X-K": "key-1", "Authorization": "Bearer tok"}
    assert seen == ["key-1", "tok"]
    stdio = _one("servers:\n  a: {command: x, env: {A: lit}, env_refs: {B: V}}\n")
    assert resolve(stdio, {"V": "v-1"}, keep).env == {"B": "v-1"}


@pytest.mark.slow
async def test_a_server_echoing_what_it_took_leaves_no_value_in_the_session(
    mcp_env: McpEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_CRED", TOKEN)
    argv = everything_stdio()
    stdio = McpServer(
        name="every",
        transport="stdio",
        source="mcp.yaml",
        command=argv[0],
        args=tuple(argv[1:]),
        env_refs=(("GITHUB_TOKEN", "MCP_TEST_CRED"),),
        timeout_s=30.0,
    )
    with bearer_http(TOKEN) as url:
        http = McpServer(
            name="docs", transport="http", source="mcp.yaml", url=url, auth_ref="MCP_TEST_CRED"
        )
        async with trio.open_nursery() as nursery:
            await start_servers(
                nursery,
                mcp_env.registry,
                [stdio, http],
                project_root=str(mcp_env.root),
                session_id=mcp_env.session.session_id,
                register=mcp_env.registry.redactor.register,
            )
            env = await mcp_env.registry.call("mcp__every__get-env", {}, mcp_env.ctx())
            leak = await mcp_env.registry.call("mcp__docs__leak", {}, mcp_env.ctx())
            nursery.cancel_scope.cancel(reason="the test is done")
    assert env.status == "ok", env.error
    assert leak.status == "ok", leak.error
    # the server had it under the name it was given, and the model reads it redacted
    assert json.loads(str(env.output))["GITHUB_TOKEN"] != TOKEN
    assert "GITHUB_TOKEN" in str(env.output)
    assert "called with" in str(leak.output)
    stored = [json.dumps(e.model_dump(mode="json")) for e in mcp_env.session.events.query()]
    assert len(mcp_env.payloads("tool.completed")) == 2
    assert not [e for e in stored if TOKEN in e]
    assert TOKEN not in str(env.output) + str(leak.output)


def _air(args: tuple[str, ...], cwd: Path, home: Path, **env: str) -> tuple[int, str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "MCP_"))}
    done = air_cli(args, cwd=cwd, env=base | {"HOME": str(home)} | env, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
def test_air_mcp_tools_reaches_a_bearer_server_only_with_its_variable(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    root.mkdir()
    with bearer_http(TOKEN, key="k-0f3e9a") as url:
        (home / ".air" / "mcp.yaml").write_text(
            f"servers:\n  docs: {{url: '{url}', auth_ref: MCP_TEST_CRED,"
            " header_refs: {X-Api-Key: MCP_TEST_KEY}}\n"
        )
        code, out, err = _air(("mcp", "list"), root, home)
        assert code == 0, err
        assert "its bearer token: $MCP_TEST_CRED" in out
        assert "its header X-Api-Key: $MCP_TEST_KEY" in out
        code, out, err = _air(("mcp", "tools", "docs"), root, home, MCP_TEST_KEY="k-0f3e9a")
        assert code == 2
        assert "servers.docs.auth_ref: MCP_TEST_CRED is not set" in err
        code, out, err = _air(
            ("mcp", "tools", "docs"), root, home, MCP_TEST_CRED="wrong", MCP_TEST_KEY="k-0f3e9a"
        )
        assert code == 2
        assert "could not be started" in err
        code, out, err = _air(
            ("mcp", "tools", "docs"), root, home, MCP_TEST_CRED=TOKEN, MCP_TEST_KEY="nope"
        )
        assert code == 2
        assert "could not be started" in err
        code, out, err = _air(
            ("mcp", "tools", "docs"), root, home, MCP_TEST_CRED=TOKEN, MCP_TEST_KEY="k-0f3e9a"
        )
        assert code == 0, err
        assert "mcp__docs__echo" in out
        assert "mcp__docs__leak" in out
        assert TOKEN not in out + err


@pytest.mark.slow
def test_a_headless_run_stores_nothing_of_what_a_server_took(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    call = ToolUseBlock(id="toolu_e1", name="mcp__every__get-env", input={})
    one_call_project(root, "show-env", call)
    argv = everything_stdio()
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  every: {{command: {json.dumps(argv[0])}, args: {json.dumps(argv[1:])},"
        " env_refs: {GITHUB_TOKEN: MCP_TEST_CRED}}\n"
    )
    (home / ".air" / "permissions.yaml").write_text(
        "rules:\n  - {action: allow, tool: 'mcp__every__*'}\n"
    )
    run = ("run", "--headless", "batch.yaml", "--cassette", "cassettes", "--json")
    code, out, err = _air(run, root, home, MCP_TEST_CRED=TOKEN)
    assert code == 0, err
    completed = [e for e in session_events(root) if e["type"] == "tool.completed"]
    assert len(completed) == 1
    assert "GITHUB_TOKEN" in json.dumps(completed[0])
    assert TOKEN not in out + err
    held = [
        str(path)
        for path in (root / ".air").rglob("*")
        if path.is_file() and TOKEN.encode() in path.read_bytes()
    ]
    assert held == []  # the session's SQLite, its artifacts, the logs


@pytest.mark.slow
def test_a_server_naming_what_it_took_as_it_fails_to_start_is_redacted(tmp_path: Path) -> None:
    """A server that fails to start may say anything, the value it took included: the run's
    refusal and ``air mcp tools`` show its words redacted, and no file of the session holds
    it (a session's start failure was printed as the server said it)."""
    root, home = tmp_path / "proj", tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    call = ToolUseBlock(id="toolu_e1", name="mcp__bad__echo", input={})
    one_call_project(root, "refused", call)
    argv = [*hostile_server(), "--refuse"]
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  bad: {{command: {json.dumps(argv[0])}, args: {json.dumps(argv[1:])},"
        " env_refs: {GITHUB_TOKEN: MCP_TEST_CRED}}\n"
    )
    run = ("run", "--headless", "batch.yaml", "--cassette", "cassettes")
    for args in (run, ("mcp", "tools", "bad")):
        code, out, err = _air(args, root, home, MCP_TEST_CRED=TOKEN)
        assert code == 2, err
        assert "refused: this server holds" in err
        assert TOKEN not in out + err
    held = [
        str(path)
        for path in (root / ".air").rglob("*")
        if path.is_file() and TOKEN.encode() in path.read_bytes()
    ]
    assert held == []
