"""The wait for the person is off the asking task's clock (IMPL-DEADLINE-1): a task whose
permission prompt stays open longer than its hard timeout — the person read it, stepped away —
runs on once answered, its deadlines moved by the wait. Before, it failed ``timeout`` under the
open prompt and its work was set aside. A real interactive runtime: a real sandboxed worker in
a worktree, its model on a local server over HTTP, and a person who answers after a while."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from air.cli.factory import RuntimeFactory
from air.cli.options import HeadlessOptions
from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
from air.contracts.task import TaskSpec
from air.nursery.runtime import open_runtime
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.nursery.test_architecture_headless import _final, _project

pytestmark = pytest.mark.slow  # the person takes 8 s to answer

HARD_S = 5.0
WAIT_S = 8.0


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AIR_TEST_PROVIDER_KEY", "k-test")
    return tmp_path


class Model:
    """The worker removes ``build/`` (the engine asks the person first), then finishes."""

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        if not any(m.get("role") == "assistant" for m in body["messages"]):
            tool = next(str(t["name"]) for t in body["tools"] if "shell" in str(t["name"]))
            command = json.dumps({"command": "rm -rf build && echo removed"})
            return Reply(
                chunks=anthropic_sse(Turn(tool=("tu_1", tool, [command]), stop="tool_use"))
            )
        return Reply(chunks=anthropic_sse(Turn(text=[_final()])))


class SlowPerson:
    """Answers "allow once" after ``WAIT_S``, each time (on the run's own clock)."""

    def __init__(self) -> None:
        self.asked: list[PermissionPromptRequest] = []

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        self.asked.append(request)
        await trio.sleep(WAIT_S)
        return PermissionPromptResponse.of("allow_once")


async def test_a_prompt_open_longer_than_the_hard_timeout_does_not_end_the_task(env: Path) -> None:
    with LocalServer(model=Model()) as server:
        root = _project(env, server.url, declare=False)
        (root / "build").mkdir()
        (root / "build" / "old.o").write_text("stale\n")
        person = SlowPerson()
        options = HeadlessOptions(project=str(root), stderr=io.StringIO(), max_workers=1)
        config = RuntimeFactory(options).create(resume=False, prompts=person, mode="interactive")
        spec = TaskSpec(
            id="t_clean",
            type="execute",
            title="Clean the build",
            description="Remove build/.",
            constraints={
                "soft_timeout_ms": int(HARD_S * 500),
                "hard_timeout_ms": int(HARD_S * 1000),
            },
        )
        with trio.fail_after(90):
            async with open_runtime(config) as rt:
                await rt.submit([spec])
                result = await rt.run_until_idle()
                events = rt.ledger.history()
    assert len(person.asked) == 1
    assert person.asked[0].task_id == "t_clean"
    ends = [e for e in events if e.type in ("task.completed", "task.failed")]
    assert [e.type for e in ends] == ["task.completed"], [e.payload for e in ends]
    assert str(result.status) == "completed"
    [done] = [e.payload for e in events if e.type == "command.completed"]
    assert done["exit_code"] == 0
