"""ProviderManager.warm_up: the adapter built in a background thread is the one the first
``complete`` uses (one adapter, one client), creation is serialised across threads, and a
warm-up failure is reported by the first real use — against a real local server."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.provider import MessageStopEvent, ModelConfig, ProviderConfig, ProviderKind
from air.llm.adapter import ProviderAdapter
from air.llm.manager import ProviderManager
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, models_config, request
from tests.llm.servers import LocalServer, Reply, Turn, openai_sse
from tests.trusted import trust_project

ENV = {"AIR_TEST_KEY": FAKE_KEY}


async def test_warmed_adapter_serves_the_first_completion() -> None:
    with LocalServer() as server:
        server.push(Reply(chunks=openai_sse(Turn(text=["hello"]))))
        manager = ProviderManager(models_config("openai", server.url), env=ENV)
        try:
            manager.warm_up("p")
            got = await collect(manager, request())
            assert isinstance(got.events[-1], MessageStopEvent)
            assert len(server.requests) == 1
            warmed = manager.adapter_for("p")
            assert manager.adapter_for("p") is warmed
        finally:
            await manager.aclose()
        # closed with the manager: a later use builds a fresh adapter
        assert manager.adapter_for("p") is not warmed
        await manager.aclose()


async def test_concurrent_creation_yields_one_adapter() -> None:
    with LocalServer() as server:
        manager = ProviderManager(models_config("openai", server.url), env=ENV)
        seen: list[ProviderAdapter] = []
        barrier = threading.Barrier(8)

        def create() -> None:
            barrier.wait()
            seen.append(manager.adapter_for("p"))

        threads = [threading.Thread(target=create) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        try:
            assert len(seen) == 8
            assert all(adapter is seen[0] for adapter in seen)
        finally:
            await manager.aclose()


async def test_a_failed_warm_up_is_reported_by_the_first_use() -> None:
    config = models_config("openai", "http://127.0.0.1:9").model_copy(
        update={
            "providers": {
                "p": ProviderConfig(
                    kind=ProviderKind.OPENAI_COMPATIBLE, models={"m1": ModelConfig()}
                )
            }
        }
    )
    manager = ProviderManager(config, env=ENV)
    manager.warm_up("p")  # no base_url: the thread fails quietly
    manager.warm_up("nope")  # not configured at all
    with pytest.raises(AirException) as caught:
        await collect(manager, request())
    assert caught.value.kind.value == "config_error"
    assert "base_url" in caught.value.error.message
    with pytest.raises(AirException) as unknown:
        await collect(manager, request(provider_id="nope"))
    assert unknown.value.kind.value == "config_error"
    await manager.aclose()


def test_a_headless_run_starts_the_warm_up_as_soon_as_its_model_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``air run`` warms the provider client right after reading models.yaml, before the
    session is opened (IMPL-FAST-3): the thread then also runs while the main thread waits on
    the disk and on its subprocesses."""
    from air.cli.options import HeadlessOptions
    from air.cli.prepare import prepare as _prepare

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AIR_TEST_KEY", FAKE_KEY)
    shared = tmp_path / "project" / ".air" / "shared"
    shared.mkdir(parents=True)
    (shared / "models.yaml").write_text(
        "default: local/m1\nproviders:\n  local:\n    kind: anthropic\n"
        "    base_url: http://127.0.0.1:9\n    auth_ref: AIR_TEST_KEY\n"
        "    models:\n      m1: {context_window: 32768, max_output_tokens: 4096}\n"
    )
    root = str(tmp_path / "project")
    trust_project(root)  # HOME is the test's
    prepared = _prepare(HeadlessOptions(project=root), root)
    manager = prepared.provider
    assert isinstance(manager, ProviderManager)
    assert prepared.model == "local/m1"
    assert prepared.warm_up is None  # nothing left to start later
    assert [t.name for t in manager._warming] == ["air-warm-local"]
    manager._warming[0].join(timeout=60)
    assert manager.adapter_for("local") is manager.adapter_for("local")
