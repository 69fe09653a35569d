"""A provider's own headers in models.yaml: ``headers`` (a beta's ``anthropic-beta``, a gateway's
routing header) and ``header_refs`` (a gateway's key, e.g. Cloudflare's
``cf-aig-authorization``, read from the environment). Sent on every wire and transport beside
air's own headers, which they cannot replace; a referenced value is registered for redaction as
``auth_ref``'s is, checked before a run makes anything, and named by ``air trust``. Real HTTP on
127.0.0.1 (``LocalServer``), the SDK transport included."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from air.contracts.error import AirException
from air.contracts.provider import ProviderConfig
from air.llm.manager import ProviderManager
from air.security.redact import SecretRedactor
from air.session.trust import trust_scan
from tests.forked_air import air_cli
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import FAST_RETRY, WIRES, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn, json_reply

GATEWAY_KEY = "gw-0b7e2c91d4f5a3"
"""Of no known shape, in a variable of no secret-looking name: only ``header_refs`` makes it a
secret to air."""


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"headers": {"Authorization": "Bearer x"}}, "air's own header"),
        ({"headers": {"X-Api-Key": "k"}}, "air's own header"),
        ({"header_refs": {"anthropic-version": "V"}}, "air's own header"),
        ({"headers": {"Content-Type": "text/plain"}}, "air's own header"),
        ({"headers": {"bad name": "v"}}, "not a header name"),
        ({"headers": {"X-A": "v\r\nX-Evil: 1"}}, "line break"),
        ({"headers": {"x-a": "v"}, "header_refs": {"X-A": "V"}}, "both headers and header_refs"),
        ({"header_refs": {"X-A": "not a name"}}, "must name an environment variable"),
    ],
    ids=[f"r{i}" for i in range(8)],
)
def test_a_header_air_sets_or_cannot_send_is_refused(
    headers: dict[str, dict[str, str]], says: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ProviderConfig.model_validate({"kind": "anthropic", **headers})
    assert says in str(caught.value)


def _configured(wire: str, url: str) -> object:
    config = models_config(wire, url, retry=FAST_RETRY.model_copy(update={"deadline_s": 300.0}))  # type: ignore[arg-type]
    provider = config.providers["p"].model_copy(
        update={
            "headers": {"anthropic-beta": "context-1m-2025-08-07"},
            "header_refs": {"cf-aig-authorization": "GATEWAY_CRED"},
        }
    )
    return config.model_copy(update={"providers": {"p": provider}})


async def test_every_wire_sends_them_and_what_the_server_echoes_is_redacted(
    server: LocalServer,
) -> None:
    env = {"AIR_TEST_KEY": FAKE_KEY, "GATEWAY_CRED": GATEWAY_KEY}
    for wire in WIRES:
        seen = len(server.requests)
        server.push(
            json_reply(429, {"error": {"type": "rate_limit_error", "message": GATEWAY_KEY}}),
            Reply(chunks=sse_for(wire, Turn(text=["the gateway says ", GATEWAY_KEY]))),
        )
        redactor = SecretRedactor()
        manager = ProviderManager(_configured(wire, server.url), env=env, redactor=redactor)  # type: ignore[arg-type]
        assert manager.register_keys() == ["AIR_TEST_KEY", "GATEWAY_CRED"]
        try:
            got = await collect(manager, request())
        finally:
            await manager.aclose()
        sent = [{k.lower(): v for k, v in r.headers.items()} for r in server.requests[seen:]]
        assert len(sent) == 2, wire  # the 429, then the retry
        for headers in sent:
            assert headers["anthropic-beta"] == "context-1m-2025-08-07", wire
            assert headers["cf-aig-authorization"] == GATEWAY_KEY, wire
            key = headers.get("x-api-key") or headers.get("authorization", "")
            assert key.endswith(FAKE_KEY), wire  # air's own key header kept
        errors = json.dumps([e.model_dump(mode="json") for c in manager.calls for e in c.errors])
        assert "rate_limit" in errors
        assert GATEWAY_KEY not in errors
        assert redactor.redact(f"echo {GATEWAY_KEY}") == "echo [REDACTED]"
        assert got.events[-1].type == "message_stop"


async def test_a_key_the_server_echoes_across_a_cut_is_redacted(server: LocalServer) -> None:
    """Found: an error keeps 300 characters of the server's message and 500 of its reply, cut
    before the key was redacted: a key the reply echoed across either cut kept its first
    characters in the error, which is recorded."""
    env = {"AIR_TEST_KEY": FAKE_KEY, "GATEWAY_CRED": GATEWAY_KEY}
    for wire in WIRES:
        for pad in (290, 440):  # across the message's cut, then across the reply's
            body = {"error": {"type": "rate_limit_error", "message": "x" * pad + GATEWAY_KEY}}
            server.push(json_reply(429, body), Reply(chunks=sse_for(wire, Turn(text=["ok"]))))
            manager = ProviderManager(_configured(wire, server.url), env=env)  # type: ignore[arg-type]
            manager.register_keys()
            try:
                got = await collect(manager, request())
            finally:
                await manager.aclose()
            assert got.events[-1].type == "message_stop"
            errors = [e for c in manager.calls for e in c.errors]
            assert errors, wire
            text = json.dumps([e.model_dump(mode="json") for e in errors])
            assert GATEWAY_KEY[:6] not in text, (wire, pad, text)
            assert "[redacted]" in text


@pytest.mark.parametrize("wire", WIRES)
async def test_an_unset_reference_fails_before_sending_naming_it(
    wire: str, server: LocalServer
) -> None:
    manager = ProviderManager(_configured(wire, server.url), env={"AIR_TEST_KEY": FAKE_KEY})  # type: ignore[arg-type]
    try:
        with pytest.raises(AirException) as caught:
            await collect(manager, request())
    finally:
        await manager.aclose()
    assert caught.value.kind == "auth_error"
    assert "GATEWAY_CRED (header_refs.cf-aig-authorization of 'p') is not set" in str(caught.value)
    assert server.requests == []  # nothing was sent without it


def test_a_run_is_refused_before_anything_exists_and_trust_names_the_variable(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    (root / ".air" / "shared" / "models.yaml").write_text(
        "default: gw/m\nproviders:\n  gw:\n    kind: openai_compatible\n"
        "    base_url: https://gateway.example/v1\n"
        "    header_refs: {cf-aig-authorization: GATEWAY_CRED}\n"
        "    headers: {x-route: fast}\n"
        "    models: {m: {context_window: 32768, max_output_tokens: 1024}}\n"
    )
    found = {f.field: f.detail for f in trust_scan(str(root)).findings}
    said = found["providers.gw.header_refs.cf-aig-authorization"]
    assert "$GATEWAY_CRED" in said
    assert "https://gateway.example/v1" in said
    assert "x-route" in found["providers.gw.headers"]
    from tests.trusted import trust_project

    trust_project(root, home)
    (root / "batch.yaml").write_text("version: 1\ntasks:\n  - {id: a, title: Look}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "GATEWAY"))}
    done = air_cli(
        ("run", "--headless", "batch.yaml"), cwd=root, env=env | {"HOME": str(home)}, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "GATEWAY_CRED (header_refs.cf-aig-authorization of 'gw') is not set" in done.stderr
    assert not (root / ".air" / "local" / "sessions").exists()
