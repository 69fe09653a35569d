"""The parent holds a worker to its budget and bounds what it keeps of its logs and commands
(IMPL-BUDGET-1).

The real worker (``air.roles``) stops itself at its task's ``max_turns`` / ``max_cost_usd``, so
a test driving it cannot tell whether the parent checks anything. These tests run
``tests/workers/scripted_worker.py`` (a real subprocess that asks for whatever the test wrote)
against the real WorkerManager and ProviderManager over a scripted model whose cassette holds
more turns than the budget: only the parent's guard stops the calls.
"""

from __future__ import annotations

from typing import Any

import trio

from air.contracts.error import ErrorKind
from air.contracts.ipc import ToolCallPayload
from air.contracts.provider import ModelPrice
from air.supervision.worker_run import LOG_KEEP_BYTES, new_run
from air.supervision.worker_tools import serve_tool
from tests.workers.conftest import Env, read_text, text_turn
from tests.workers.test_parent_guards import FAST, VERIFY, WORKER, claim, scripted

ASK = {
    "call": "provider.complete",
    "input": {"messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]},
    "expect": "ok",
}
PRICE = ModelPrice(input=1000.0, output=2000.0)
"""USD per million tokens: each scripted turn (10 in, 5 out) costs 0.02."""


class _Counted:
    """The manager's provider, counting the model calls the parent makes."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.calls = 0

    def complete(self, request: Any) -> Any:
        self.calls += 1
        return self.provider.complete(request)


async def _supervise(env: Env, steps: list[dict[str, Any]], **config: Any) -> Any:
    request = scripted(env.request(**config.pop("constraints", {})), steps)
    manager = env.manager([text_turn("more")] * 12, command=WORKER, **{**FAST, **config})
    manager.provider = counted = _Counted(manager.provider)
    with trio.fail_after(60):
        return counted, await manager.supervise(request)


async def test_a_worker_past_max_turns_and_its_grace_is_ended_not_served(env: Env) -> None:
    # max_turns 2, one grace turn, one repair: 4 turns; the worker asks for 8
    steps = [ASK] * 8 + [claim(changed_files=[])]
    model, outcome = await _supervise(env, steps, grace_turns=1, constraints={"max_turns": 2})
    assert outcome.kind == "protocol_error", outcome
    assert outcome.result is None
    assert outcome.transient is False
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.BUDGET_EXCEEDED
    assert outcome.error.message == (
        "the worker asked for model turn 5; its task allows 4 "
        "(max_turns 2, then 1 grace turns and one repair)"
    )
    assert model.calls == 4
    assert env.events.types(outcome.agent_id)[-1] == "agent.failed"


async def test_a_worker_past_its_cost_budget_and_its_grace_is_ended(env: Env) -> None:
    # 0.02 a turn: max_cost_usd 0.03 is reached at turn 2; no grace turn, one repair: 3 turns
    steps = [ASK] * 8 + [claim(changed_files=[])]
    model, outcome = await _supervise(
        env, steps, grace_turns=0, price=PRICE, constraints={"max_cost_usd": 0.03}
    )
    assert outcome.kind == "protocol_error", outcome
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.BUDGET_EXCEEDED
    assert "max_cost_usd 0.03 reached at turn 2" in outcome.error.message
    assert model.calls == 3


async def test_a_worker_within_its_budget_is_served_every_turn(env: Env) -> None:
    # exactly what the real worker may take: max_turns, the grace turns and a repair
    steps = [ASK] * 4 + [claim(changed_files=[])]
    model, outcome = await _supervise(env, steps, grace_turns=1, constraints={"max_turns": 2})
    assert outcome.kind == "result", outcome
    assert model.calls == 4


async def test_a_worker_that_logs_without_end_costs_the_parent_a_bounded_tail(env: Env) -> None:
    # 3 MB of log messages, then the last words and a crash: the stderr artifact keeps the
    # newest 1 MiB of them and says how many went before
    steps: list[dict[str, Any]] = [
        {"log": "y" * 1000, "times": 3000},
        {"log": "the last words"},
        {"exit": 3},
    ]
    _, outcome = await _supervise(env, steps)
    assert outcome.kind == "crashed", outcome
    assert outcome.error is not None
    log_id = (outcome.error.metadata or {}).get("stderr_artifact_id")
    text = read_text(env.artifacts.refs[str(log_id)].path)
    lines = text.splitlines()
    assert lines[-1] == "the last words"
    assert lines[0].startswith("[")
    assert lines[0].endswith(" earlier log messages not kept]")
    dropped = int(lines[0][1:].split()[0])
    assert dropped + len(lines) - 1 == 3001
    assert len(text) <= LOG_KEEP_BYTES + 3000


async def test_the_parent_keeps_the_outcome_of_the_verification_commands_only(env: Env) -> None:
    # what the verification check reads; a worker's other commands (each up to 128 KiB, as many
    # as it sends) would otherwise all be kept for the attempt's life
    manager = env.manager([])
    run = new_run(env.request(commands=[VERIFY]))  # no process: nothing is sent back
    for n, command in enumerate(["true", "echo " + "x" * 1000, VERIFY, "false"]):
        call = ToolCallPayload(name="shell.run", input={"command": command})
        with trio.fail_after(60):
            await serve_tool(manager, run, f"msg_{n}", call)
    assert run.verified == {VERIFY: False}  # it ran and failed: VALUE is still 1
