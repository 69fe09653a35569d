"""The doctor's MCP checks (``air.cli.doctor_mcp``): one per declared server, failing as the
server's start would (an unset variable it takes, an ``oauth`` server never logged in), never
starting it and never putting a value in the report; an untrusted project's servers unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.cli.doctor_mcp import mcp_checks
from air.mcp.oauth_store import Login, save_login

VALUE = "pat-9f2c61d0b7"


async def _outcomes(project: str | None) -> dict[str, str]:
    said = {}
    for check in mcp_checks(project):
        problems = await check.run()
        said[check.name] = problems[0].issue.message if problems else "ok: " + check.found()
    return said


async def test_each_server_is_checked_as_its_start_would_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("AIR_T_PAT", raising=False)
    (tmp_path / ".air").mkdir(mode=0o700)
    (tmp_path / ".air" / "mcp.yaml").write_text(
        "servers:\n"
        "  gh: {url: 'https://gh.example/mcp', auth_ref: AIR_T_PAT}\n"
        "  lin: {url: 'https://lin.example/mcp', oauth: true}\n"
        "  run: {command: never-started-xyz, env_refs: {TOKEN: AIR_T_PAT}}\n"
        "  plain: {command: never-started-xyz}\n"
    )
    said = await _outcomes(None)
    assert "servers.gh.auth_ref: AIR_T_PAT is not set" in said["mcp.gh"]
    assert "not logged in to https://lin.example/mcp" in said["mcp.lin"]
    assert "servers.run.env_refs.TOKEN: AIR_T_PAT is not set" in said["mcp.run"]
    assert said["mcp.plain"] == "ok: runs never-started-xyz: takes nothing of yours"
    monkeypatch.setenv("AIR_T_PAT", VALUE)
    save_login(
        Login(
            url="https://lin.example/mcp",
            client={"client_id": "c"},
            tokens={"access_token": "a-1", "token_type": "Bearer"},
        )
    )
    said = await _outcomes(None)
    assert said["mcp.gh"] == (
        "ok: connects to https://gh.example/mcp: $AIR_T_PAT as its bearer token"
    )
    assert said["mcp.lin"] == "ok: connects to https://lin.example/mcp: an OAuth login"
    assert said["mcp.run"].startswith("ok: runs never-started-xyz: $AIR_T_PAT as its env TOKEN")
    assert VALUE not in str(said)


async def test_an_untrusted_project_s_servers_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True, mode=0o700)
    (root / ".air" / "shared").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (root / ".air" / "shared" / "mcp.yaml").write_text(
        "servers:\n  x: {command: evil, env_refs: {K: AIR_T_NOPE}}\n"
    )
    assert await _outcomes(str(root)) == {}
    from tests.trusted import trust_project

    trust_project(root, home)
    assert list(await _outcomes(str(root))) == ["mcp.x"]
