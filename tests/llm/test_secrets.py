"""A planted fake API key never appears in any file air writes: cassettes, configs, errors."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from air.contracts.provider import ModelsConfig
from air.llm.manager import ProviderManager
from tests.llm.conftest import FAKE_KEY, scan_for_key
from tests.llm.helpers import FAST_RETRY, WIRES, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn, json_reply


async def test_key_never_written_even_when_the_model_and_server_echo_it(
    server: LocalServer, tmp_path: Path
) -> None:
    for wire in WIRES:
        cassette = tmp_path / f"{wire}.jsonl"
        # a deadline no loaded machine reaches: the first attempt (an SDK import included) must
        # not use up the retry window (FAST_RETRY's 10 s) before the 429 is retried
        retry = FAST_RETRY.model_copy(update={"deadline_s": 300.0})
        config = models_config(wire, server.url, record_to=str(cassette), retry=retry)
        (tmp_path / f"{wire}-models.json").write_text(config.model_dump_json())
        server.push(
            json_reply(429, {"error": {"type": "rate_limit_error", "message": f"key {FAKE_KEY}"}}),
            Reply(chunks=sse_for(wire, Turn(text=["your key is ", FAKE_KEY]))),
        )
        manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
        try:
            got = await collect(manager, request())
        finally:
            await manager.aclose()
        errors = [e.model_dump_json() for record in manager.calls for e in record.errors]
        (tmp_path / f"{wire}-errors.jsonl").write_text("\n".join(errors))
        assert got.events[-1].type == "message_stop"
        assert "[redacted]" in cassette.read_text()
        assert (
            ModelsConfig.model_validate_json((tmp_path / f"{wire}-models.json").read_text())
            .providers["p"]
            .auth_ref
            == "AIR_TEST_KEY"
        )
    # the key did reach the server (so it was really in play) but no file under tmp holds it
    assert any(FAKE_KEY in json.dumps(r.headers) for r in server.requests)
    expected = [
        f"{w}{suffix}" for w in WIRES for suffix in ("-errors.jsonl", "-models.json", ".jsonl")
    ]
    assert sorted(p.name for p in await trio.Path(tmp_path).iterdir()) == sorted(expected)
    assert await trio.to_thread.run_sync(scan_for_key, tmp_path) == []


def test_every_auth_ref_key_is_registered_by_value_at_construction() -> None:
    from air.security.redact import SecretRedactor

    shapeless = "zq81" + "x7" * 20
    config = models_config("openai", "http://127.0.0.1:9")
    redactor = SecretRedactor()
    assert redactor.redact(shapeless) == shapeless
    manager = ProviderManager(config, env={"AIR_TEST_KEY": shapeless}, redactor=redactor)
    assert manager.register_keys() == ["AIR_TEST_KEY"]
    assert redactor.redact(f"echo {shapeless}") == "echo [REDACTED]"
