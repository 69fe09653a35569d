"""How the parent serves a worker's model turns (``provider.complete``), in the parent's own
process (virtual time, FakeLauncher workers, a recording provider): the parent names the model,
its limits and who pays whatever the worker asks; the stream reaches the worker before the
reply; a provider's error, a stream cut short and a turn past the task's budget each answer or
end the attempt as they should (IMPL-BUDGET-1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.error import AirException, ErrorKind, Retryability, make_air_error
from air.contracts.provider import (
    MessageStopEvent,
    ProviderCompletionInput,
    ProviderErrorEvent,
    StopReason,
    TextBlock,
    TextDeltaEvent,
    Usage,
)
from air.testing.launcher import scripted
from tests.supervision.conftest import REVIEWED, Rig, bounded_nursery, tool_result

ASK = {"messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]}


class Provider:
    """Answers each request with ``replies`` (one list of events a turn, the last repeated) and
    keeps the requests."""

    def __init__(self, *replies: list[Any]) -> None:
        self.replies = list(replies) or [[_stop()]]
        self.requests: list[ProviderCompletionInput] = []

    async def complete(self, request: ProviderCompletionInput) -> AsyncIterator[Any]:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        for event in reply:
            if isinstance(event, AirException):
                raise event
            yield event


def _stop(cost: float | None = None) -> MessageStopEvent:
    return MessageStopEvent(
        stop_reason=StopReason.END_TURN,
        usage=Usage(input_tokens=3, output_tokens=2, cost_usd=cost),
        content=[TextBlock(text="done")],
    )


async def _turns(
    rig: Rig,
    provider: Provider,
    inputs: list[dict[str, Any]],
    *,
    model: str = "prov/default-model",
    constraints: dict[str, Any] | None = None,
    **cfg: Any,
) -> tuple[list[list[dict[str, Any]]], Any, Any]:
    answers: list[list[dict[str, Any]]] = [[] for _ in inputs]
    steps: list[dict[str, Any]] = [
        {"call": "provider.complete", "input": input, "into": into}
        for input, into in zip(inputs, answers, strict=True)
    ]
    request = rig.request(**(constraints or {}))
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, scripted([*steps, REVIEWED]), **cfg)
        manager.provider, manager.model = provider, model
        outcome = await manager.supervise(request)
    return answers, outcome, request


@pytest.mark.parametrize(
    ("model", "task_model", "named"),
    [
        ("prov/default-model", None, ("prov", "default-model")),
        ("prov/default-model", "other/m-2", ("other", "m-2")),
        ("prov/default-model", "bare-model", ("prov", "bare-model")),
        ("prov/default-model", "gw/vendor/m-3", ("gw", "vendor/m-3")),
        ("gw/vendor/m-3", "bare-model", ("gw", "bare-model")),
    ],
    ids=[
        "session-model",
        "task-model",
        "task-model-without-provider",
        "model-with-a-slash",
        "session-model-with-a-slash",
    ],
)
async def test_the_parent_names_the_model_its_limit_and_who_pays(
    rig: Rig,
    autojump_clock: trio.testing.MockClock,
    model: str,
    task_model: str | None,
    named: tuple[str, str],
) -> None:
    provider = Provider()
    # what the worker asks for beyond its messages is not its to choose
    asked = {**ASK, "model_id": "evil/x", "provider_id": "evil", "max_tokens": 999_999}
    constraints = {"model_id": task_model} if task_model else {}
    answers, outcome, request = await _turns(
        rig, provider, [asked], model=model, constraints=constraints, max_tokens=1000
    )
    assert outcome.kind == "result", outcome
    [sent] = provider.requests
    assert (sent.provider_id, sent.model_id) == named
    assert sent.max_tokens == 1000
    assert (sent.session_id, sent.task_id, sent.agent_id) == (
        request.session_id,
        request.task_spec.id,
        request.agent_id,
    )
    reply = tool_result(answers[0])
    assert (reply["status"], reply["tool_name"]) == ("ok", "provider.complete")
    assert reply["output"] == {
        "content": [{"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "usage": Usage(input_tokens=3, output_tokens=2).model_dump(mode="json"),
    }


async def test_without_a_cap_a_turn_asks_for_the_models_own_limit(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    provider = Provider()
    await _turns(rig, provider, [ASK])
    assert provider.requests[0].max_tokens == ProviderCompletionInput.model_fields[
        "max_tokens"
    ].get_default(call_default_factory=True)


async def test_the_stream_reaches_the_worker_before_the_reply(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    delta = TextDeltaEvent(index=0, text="do")
    answers, _, _ = await _turns(rig, Provider([delta, _stop()]), [ASK])
    assert [m["kind"] for m in answers[0]] == ["tool.stream", "tool.result"]
    assert answers[0][0]["payload"] == {"event": delta.model_dump(mode="json")}


async def test_a_providers_error_and_a_stream_cut_short_answer_an_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    failure = make_air_error(kind=ErrorKind.PROVIDER_ERROR, message="overloaded")
    provider = Provider([ProviderErrorEvent(error=failure)], [TextDeltaEvent(index=0, text="x")])
    answers, outcome, _ = await _turns(rig, provider, [ASK, ASK])
    assert outcome.kind == "result", outcome  # the worker decides what to do with an error
    first, second = tool_result(answers[0]), tool_result(answers[1])
    for reply in (first, second):
        assert (reply["status"], reply["tool_name"]) == ("error", "provider.complete")
        assert reply["tool_run_id"].startswith("tr_")
    assert first["error"]["message"] == "overloaded"
    assert first["error"]["error_id"] == str(failure.error_id)
    assert second["error"]["kind"] == ErrorKind.PROVIDER_ERROR.value
    assert second["error"]["message"] == "the provider stream ended without message_stop"
    assert second["error"]["retryability"] == Retryability.TRANSIENT.value


async def test_a_provider_that_raises_answers_its_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    refused = make_air_error(kind=ErrorKind.AUTH_ERROR, message="the key was refused")
    provider = Provider([TextDeltaEvent(index=0, text="x"), AirException(refused)])
    answers, outcome, _ = await _turns(rig, provider, [ASK])
    assert outcome.kind == "result", outcome
    reply = tool_result(answers[0])
    assert (reply["status"], reply["tool_name"]) == ("error", "provider.complete")
    assert reply["tool_run_id"].startswith("tr_")
    assert reply["error"]["error_id"] == str(refused.error_id)
    assert reply["error"]["message"] == "the key was refused"


async def test_an_invalid_turn_is_refused_before_any_request(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    provider = Provider()
    bad_message = {"messages": [{"role": "nobody", "content": []}]}
    answers, _, _ = await _turns(rig, provider, [bad_message, {**ASK, "prefix": 5}])
    assert provider.requests == []
    for answer in answers:
        reply = tool_result(answer)
        assert reply["status"] == "error"
        assert reply["error"]["kind"] == ErrorKind.VALIDATION_ERROR.value
        assert reply["error"]["message"].startswith("invalid provider.complete input: ")
    assert (
        "prefix 5 is not a count of the 0 messages" in tool_result(answers[1])["error"]["message"]
    )


async def test_a_turn_past_max_turns_and_its_grace_ends_the_attempt(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """max_turns 1, then 2 grace turns and one repair: the fifth turn is refused."""
    provider = Provider()
    answers, outcome, _ = await _turns(
        rig, provider, [ASK] * 5, constraints={"max_turns": 1}, grace_turns=2
    )
    assert len(provider.requests) == 4
    assert outcome.kind == "protocol_error", outcome
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.BUDGET_EXCEEDED
    assert outcome.error.retryability == Retryability.NEVER
    assert outcome.error.message == (
        "the worker asked for model turn 5; its task allows 4 (max_turns 1, then 2 grace "
        "turns and one repair)"
    )
    assert outcome.error.user_action == (
        "The worker did not stop at its budget: see its stderr log artifact."
    )
    assert [tool_result(a)["status"] for a in answers[:4]] == ["ok"] * 4
    assert answers[4] == []  # the refused turn is answered by the attempt's end


async def test_a_turn_past_the_cost_budget_and_its_grace_ends_the_attempt(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Each turn costs $1; max_cost_usd 1.5 is reached at turn 2, then one grace turn and one
    repair: the fifth turn is refused though max_turns allows ten."""
    provider = Provider([_stop(cost=1.0)])
    _, outcome, _ = await _turns(
        rig,
        provider,
        [ASK] * 5,
        constraints={"max_turns": 10, "max_cost_usd": 1.5},
        grace_turns=1,
    )
    assert len(provider.requests) == 4
    assert outcome.kind == "protocol_error", outcome
    assert outcome.error is not None
    assert outcome.error.message == (
        "the worker asked for model turn 5; its task allows 4 (max_cost_usd 1.5 reached at "
        "turn 2, then 1 grace turns and one repair)"
    )


async def test_a_cost_reached_on_the_first_turn_counts_from_it(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    provider = Provider([_stop(cost=2.0)])
    _, outcome, _ = await _turns(
        rig, provider, [ASK] * 4, constraints={"max_cost_usd": 2.0}, grace_turns=1
    )
    assert len(provider.requests) == 3
    assert outcome.error is not None
    assert "max_cost_usd 2.0 reached at turn 1" in outcome.error.message


@pytest.mark.parametrize(
    ("budget", "served", "why"),
    [
        # $1 a turn: $2.5 is reached at turn 3, past max_turns 2, whose limit holds
        ({"max_turns": 2, "max_cost_usd": 2.5}, 4, "max_turns 2"),
        # $2.0 is reached at turn 2, max_turns itself: the turn limit is named
        ({"max_turns": 2, "max_cost_usd": 2.0}, 4, "max_turns 2"),
        ({"max_turns": 3, "max_cost_usd": 2.0}, 4, "max_cost_usd 2.0 reached at turn 2"),
        ({"max_turns": 3, "max_cost_usd": 1.0}, 3, "max_cost_usd 1.0 reached at turn 1"),
    ],
    ids=["cost-after-max-turns", "cost-at-max-turns", "cost-one-before", "cost-first"],
)
async def test_the_budget_that_holds_first_is_the_one_named(
    rig: Rig,
    autojump_clock: trio.testing.MockClock,
    budget: dict[str, Any],
    served: int,
    why: str,
) -> None:
    provider = Provider([_stop(cost=1.0)])
    _, outcome, _ = await _turns(rig, provider, [ASK] * 6, constraints=budget, grace_turns=1)
    assert len(provider.requests) == served
    assert outcome.error is not None
    assert outcome.error.message == (
        f"the worker asked for model turn {served + 1}; its task allows {served} ({why}, then 1 "
        "grace turns and one repair)"
    )


async def test_turns_of_unknown_cost_never_reach_a_cost_budget(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    provider = Provider([_stop(cost=None)])
    answers, outcome, _ = await _turns(
        rig, provider, [ASK] * 6, constraints={"max_turns": 10, "max_cost_usd": 0.5}
    )
    assert outcome.kind == "result", outcome
    assert [tool_result(a)["status"] for a in answers] == ["ok"] * 6
