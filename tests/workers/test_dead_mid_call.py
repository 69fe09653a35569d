"""A worker SIGKILLed while the parent serves its call is noticed at once (issue #27 item 6,
IMPL-DEADCALL-1): a real worker subprocess asks for a slow ``shell.run`` (it waits for a file
the test never writes) or a model turn from a strict local server that holds its reply; the
test kills it mid-call. The attempt must end as a transient crash, its ``agent.failed``
recorded while the held call still holds (the release never came), the call cancelled and
recorded once, nothing of the worker left. Without the exit watch the parent would wait for
the call (forever here; a read timeout in real life), so ``fail_after`` fails these tests."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import trio

from air.contracts.error import ErrorKind
from air.llm.manager import ProviderManager
from air.supervision.runs import RunRecordStore
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse
from air.testing.workers.harness import RecordingEvents
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import models_config
from tests.workers.conftest import Env, alive, result_text, survivors, text_turn, tool_turn

HOLD = "touch started; while [ ! -e release ]; do sleep 0.05; done; touch sentinel"
WORKER = [sys.executable, str(Path(__file__).with_name("scripted_worker.py"))]
FAST: dict[str, Any] = {"kill_grace_s": 0.5, "exit_grace_s": 1.0}


async def _kill_when(events: RecordingEvents, agent_id: str, ready: Any) -> int:
    """SIGKILL the worker once ``ready()`` says its call is being served; its pid."""
    while True:
        if events.of_type("agent.started", agent_id) and ready():
            break
        await trio.sleep(0.02)  # a file or a server thread's flag, nothing to await on
    pid = int(events.of_type("agent.started", agent_id)[0]["pid"])
    os.kill(pid, signal.SIGKILL)
    return pid


def _assert_crashed_mid_call(
    env: Env, events: RecordingEvents, outcome: Any, tool: str, code: int = -signal.SIGKILL
) -> None:
    assert outcome.kind == "crashed", outcome
    assert outcome.transient
    assert outcome.exit_code == code
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.WORKER_CRASHED
    assert f"while the parent served its {tool} call" in outcome.error.message
    types = events.types(outcome.agent_id)
    assert types[0] == "agent.started"
    assert types[-1] == "agent.failed", types
    assert types.count("agent.failed") == 1
    record = RunRecordStore(env.state_dir).read(outcome.agent_id)
    assert record is not None
    assert record["terminal_state"] == "failed"
    assert survivors(int(record["pid"]), str(record["marker"])) == []


async def test_worker_killed_mid_tool_call_ends_the_attempt_before_the_call_returns(
    env: Env,
) -> None:
    turns = [
        tool_turn("shell.run", {"command": HOLD}),
        text_turn(result_text("completed", "never reached", {"changes_made": False})),
    ]
    manager = env.manager(turns, **FAST)
    request = env.request()
    started = env.root / "started"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_kill_when, env.events, request.agent_id, started.exists)
        with trio.fail_after(15):
            outcome = await manager.supervise(request)

    # the end is recorded while the command still waits for a release that never came
    assert not (env.root / "release").exists()
    assert not (env.root / "sentinel").exists()
    _assert_crashed_mid_call(env, env.events, outcome, "shell.run")
    types = env.events.types()  # tool.* and command.* name their run, not the agent
    assert types.count("tool.started") == 1
    assert types.count("tool.cancelled") == 1, types
    assert "tool.completed" not in types
    assert "tool.failed" not in types
    assert types.count("command.started") == types.count("command.failed") == 1, types
    assert types.index("tool.cancelled") < types.index("agent.failed")
    # the cancelled command's process is gone too: the sentinel never comes
    (env.root / "release").touch()
    await trio.sleep(0.3)
    assert not (env.root / "sentinel").exists()


async def test_worker_killed_mid_model_call_ends_the_attempt_while_the_server_holds(
    env: Env,
) -> None:
    received = threading.Event()
    release = threading.Event()
    answered: list[bool] = []

    def held(wire: str, body: dict[str, Any]) -> Reply:
        received.set()
        release.wait(60)
        answered.append(True)
        return Reply(chunks=anthropic_sse(Turn(text=["late"])))

    with StrictServer(model=held) as server:
        provider = ProviderManager(
            models_config("anthropic_http", server.url, read_timeout_s=120),
            env={"AIR_TEST_KEY": FAKE_KEY},
        )
        manager = WorkerManager(
            tools=env.registry.call,
            tool_streams=env.registry.call_streaming,
            provider=provider,
            events=env.events,
            artifacts=env.artifacts,
            model="p/m1",
            config=SupervisionConfig(**FAST),
            state_dir=env.state_dir,
        )
        request = env.request()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_kill_when, env.events, request.agent_id, received.is_set)
                with trio.fail_after(15):
                    outcome = await manager.supervise(request)
            # the end is recorded while the server still holds the model's reply
            assert answered == []
            assert not release.is_set()
            assert len(server.requests) == 1
        finally:
            release.set()
            await provider.aclose()
    _assert_crashed_mid_call(env, env.events, outcome, "provider.complete")
    pid = int(env.events.of_type("agent.started", request.agent_id)[0]["pid"])
    assert not alive(pid)


async def test_a_call_sent_just_before_the_worker_exits_ends_the_attempt(env: Env) -> None:
    # The worker floods its pipe, sends a call and exits: the parent may see the exit before
    # it reads the call (then it serves nothing) or while it serves it (then it cancels it);
    # either way the held command never holds the attempt.
    steps = [
        {"log": "x" * 100, "times": 3000},
        {"send_call": "shell.run", "input": {"command": HOLD}},
        {"exit": 1},
    ]
    request = env.request()
    spec = request.task_spec.model_copy(update={"description": json.dumps(steps)})
    request = request.model_copy(update={"task_spec": spec})
    manager = env.manager([], command=WORKER, **FAST)
    with trio.fail_after(15):
        outcome = await manager.supervise(request)
    _assert_crashed_mid_call(env, env.events, outcome, "shell.run", code=1)
    assert not (env.root / "sentinel").exists()
