"""Honest boundaries: one exit-code table, one process identity, the permission prompt the
console implements (and the headless one that fails closed), all in contracts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import air.cli as cli
import air.ipc.runtime as worker_runtime
from air.cli.factory import RuntimeFactory
from air.cli.options import HeadlessOptions
from air.contracts.error import (
    AirException,
    CliExit,
    WorkerExit,
    exit_code_for,
    first_air_exception,
)
from air.contracts.permission import PermissionGrantScope
from air.contracts.permission_records import (
    PermissionDecision,
    PermissionPromptRequest,
    PermissionPromptResponse,
)
from air.contracts.platform import ProcessIdentity
from air.contracts.prompt import FailClosedPrompt, PermissionPrompt
from air.ipc import procs
from air.nursery.runtime import open_runtime
from air.supervision.monitor import pid_start_time, process_alive
from air.tools import HeadlessPromptBroker, PromptBroker


def test_the_cli_and_the_worker_codes_are_the_one_table() -> None:
    assert (cli.EXIT_OK, cli.EXIT_BAD_INPUT, cli.EXIT_CANCELLED) == (
        CliExit.OK,
        CliExit.BAD_INPUT,
        CliExit.CANCELLED,
    )
    assert worker_runtime.EXIT_OK == WorkerExit.OK
    assert worker_runtime.EXIT_CRASH == WorkerExit.CRASH
    assert worker_runtime.EXIT_PROTOCOL == WorkerExit.PROTOCOL
    assert worker_runtime.EXIT_PERMISSION == WorkerExit.PERMISSION
    assert worker_runtime.EXIT_CANCELLED == WorkerExit.PARENT_CANCELLED


def test_a_worker_refusing_a_bad_start_exits_with_the_tables_protocol_code() -> None:
    """``air/roles/__main__.py`` keeps a literal (nothing is imported before agent.start)."""
    proc = subprocess.run(
        [sys.executable, "-m", "air.roles"],
        input="not an envelope\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == WorkerExit.PROTOCOL


def test_bad_input_is_2_and_a_failure_1_also_inside_groups() -> None:
    bad = AirException.of(kind="config_error", message="m", user_action="a")
    failure = AirException.of(kind="provider_error", message="m", user_action="a")
    assert exit_code_for(bad) == CliExit.BAD_INPUT
    assert exit_code_for(failure) == CliExit.FAILED
    group = BaseExceptionGroup("g", [ValueError("x"), ExceptionGroup("h", [bad])])
    assert first_air_exception(group) is bad
    assert first_air_exception(ValueError("x")) is None


def test_one_process_identity_from_records_and_proc() -> None:
    me = procs.read_identity(os.getpid())
    assert isinstance(me, ProcessIdentity)
    assert procs.ProcessIdentity is ProcessIdentity
    assert ProcessIdentity.from_record(me.as_record()) == me
    assert procs.is_same_process(me)
    assert pid_start_time(os.getpid()) == me.start_ticks
    assert process_alive(os.getpid(), me.start_ticks)
    recycled = me.model_copy(update={"start_time": str((me.start_ticks or 0) + 1)})
    assert not procs.is_same_process(recycled)  # same pid, another process
    rebooted = me.model_copy(update={"boot_id": "another-boot"})
    assert not procs.is_same_process(rebooted)
    assert ProcessIdentity.from_record({"pid": None}) is None
    assert ProcessIdentity.from_record({"pid": True}) is None
    assert ProcessIdentity.from_record({"pid": "12", "pid_start_time": 7}) == ProcessIdentity(
        pid=12, start_time="7"
    )


@pytest.mark.parametrize(
    ("answer", "approved", "scope"),
    [
        ("allow_once", True, PermissionGrantScope.ONCE),
        ("allow_task", True, PermissionGrantScope.TASK),
        ("allow_session", True, PermissionGrantScope.SESSION),
        ("allow_project", True, PermissionGrantScope.PROJECT),
        ("deny", False, PermissionGrantScope.ONCE),
    ],
)
def test_the_prompt_answers_are_the_consoles_five(answer: str, approved: bool, scope: str) -> None:
    response = PermissionPromptResponse.of(answer)  # type: ignore[arg-type]
    assert (response.approved, response.scope) == (approved, scope)
    assert response.answer == answer


async def test_the_headless_prompt_fails_closed_and_is_what_the_runtime_asks(
    tmp_path: Path,
) -> None:
    request = PermissionPromptRequest(
        prompt_id="prm_1",
        tool_name="shell.run",
        decision=PermissionDecision(action="ask_user", reason="network", risk_level="high"),
        command="curl example.org",
        risk_level="high",
    )
    assert (await FailClosedPrompt().ask(request)).approved is False
    # the names air.tools always had are the contract's
    assert (PromptBroker, HeadlessPromptBroker) == (PermissionPrompt, FailClosedPrompt)
    cassette = tmp_path / "turns.jsonl"
    cassette.write_text(
        json.dumps(
            {
                "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        + "\n"
    )
    options = HeadlessOptions(project=str(tmp_path), cassette=str(cassette))
    config = RuntimeFactory(options).create(resume=False)
    assert isinstance(config.prompts, FailClosedPrompt)
    async with open_runtime(config) as rt:
        assert rt.registry.prompts is config.prompts


class _Person:
    """Answers every prompt with one answer; remembers the requests."""

    def __init__(self, answer: PermissionPromptResponse) -> None:
        self.answer = answer
        self.asked: list[PermissionPromptRequest] = []

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.append(request)
        return self.answer


async def test_the_prompt_shows_the_commands_segments_and_risk(tmp_path: Path) -> None:
    from tests.tools.conftest import Env

    person = _Person(PermissionPromptResponse.of("allow_once"))
    env = Env(tmp_path, prompts=person)
    try:
        command = "echo hi && curl -s https://example.com/x"
        result = await env.registry.call("shell.run", {"command": command}, env.ctx())
        assert result.status == "ok", result.error
        [asked] = person.asked
        assert [s.program for s in asked.segments] == ["echo", "curl"]
        assert asked.risk_level == asked.decision.risk_level
        assert asked.risk_level in ("medium", "high", "critical")
        assert asked.task_id == env.ctx().task_id
    finally:
        env.close()


async def test_the_fail_closed_prompt_denies_and_says_it_was_headless(tmp_path: Path) -> None:
    from tests.tools.conftest import Env

    env = Env(tmp_path, prompts=FailClosedPrompt())
    try:
        command = "curl -s https://example.com/x"
        result = await env.registry.call("shell.run", {"command": command}, env.ctx())
        assert result.status == "denied"
        [resolved] = env.payloads("permission.prompt.resolved")
        assert resolved["decision"] == "deny"
        assert resolved["resolved_by"] == "headless"
    finally:
        env.close()
