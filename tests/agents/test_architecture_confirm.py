"""The console's confirmation of an architecture change (SDD §19.4, IMPL-COMPACT-3):
``PromptConfirm`` asks ``requires_user_confirmation`` as a permission prompt — recorded
``permission.prompt.requested`` (tool ``architecture.confirm``, the review's summary), answered
by the person through ``PendingPrompts`` (the console's path), then
``permission.prompt.resolved`` — and the held result merges only when allowed; with the
headless ``FailClosedPrompt`` the prompt is resolved ``headless`` and the task blocks. A real
Scheduler (fake workers), a real session DB, the designer's verdict from a cassette."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.agents import PendingPrompts
from air.agents.architecture import (
    CONFIRM_TOOL,
    ArchitectureDeclaration,
    PromptConfirm,
    SchedulerGate,
)
from air.agents.architecture_record import RecordingGate, recorded_digests
from air.contracts.prompt import FailClosedPrompt
from air.testing.fake_runner import FakeStep
from tests.agents.conftest import AgentEnv, PendingBroker, wait_until
from tests.agents.test_architecture import designer, impact, statuses_of, task


@pytest.fixture
def env(tmp_path: Path) -> Iterator[AgentEnv]:
    e = AgentEnv(tmp_path)
    yield e
    e.close()


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_the_person_confirms_or_refuses_through_the_prompt(
    env: AgentEnv, answer: str
) -> None:
    pending = PendingPrompts()
    env.runner.script["t_a"] = [FakeStep(duration=0.05, changed_files=("air/contracts/x.py",))]
    review = designer(env, env.cassette(impact("requires_user_confirmation", "bumps the API")))
    env.scheduler.architecture_gate = SchedulerGate(
        review, PromptConfirm(review, PendingBroker(pending))
    )
    await env.scheduler.create_tasks([task("t_a"), task("t_b", after=("t_a",))])
    async with env.session.bus.serving(), trio.open_nursery() as nursery:
        run: list[object] = []

        async def go() -> None:
            run.append(await env.scheduler.run_until_idle())

        nursery.start_soon(go)
        await wait_until(lambda: bool(pending.open()))
        [asked] = env.payloads("permission.prompt.requested")
        assert asked["tool_name"] == CONFIRM_TOOL
        assert "bumps the API" in asked["summary"]
        assert env.payloads("task.completed") == []  # held while the person decides
        assert pending.resolve(pending.open()[0], answer)  # type: ignore[arg-type]
    statuses = statuses_of(run[0])  # type: ignore[arg-type]
    [resolved] = env.payloads("permission.prompt.resolved")
    assert resolved == {"prompt_id": asked["prompt_id"], "decision": answer, "resolved_by": "user"}
    if answer == "allow_once":
        assert statuses == {"t_a": "completed", "t_b": "completed"}
    else:
        assert statuses["t_a"] == "blocked"
        assert statuses["t_b"] != "completed"
        [blocked] = env.payloads("task.blocked")[:1]
        assert "not confirmed: bumps the API" in blocked["reason"]


async def test_headless_the_prompt_is_resolved_headless_and_the_task_blocks(
    env: AgentEnv,
) -> None:
    env.runner.script["t_a"] = [FakeStep(duration=0.05, changed_files=("air/contracts/x.py",))]
    review = designer(env, env.cassette(impact("requires_user_confirmation", "bumps the API")))
    env.scheduler.architecture_gate = SchedulerGate(
        review, PromptConfirm(review, FailClosedPrompt()), headless=True
    )
    await env.scheduler.create_tasks([task("t_a")])
    async with env.session.bus.serving():
        result = await env.scheduler.run_until_idle()
    assert statuses_of(result) == {"t_a": "blocked"}
    [resolved] = env.payloads("permission.prompt.resolved")
    assert resolved["decision"] == "deny"
    assert resolved["resolved_by"] == "headless"
    [blocked] = env.payloads("task.blocked")
    assert "a headless run has nobody to ask" in blocked["reason"]


async def _confirmed_change_recorded(env: AgentEnv) -> None:
    """A task changing a contract, the change confirmed, through ``RecordingGate``: it
    completes."""
    env.runner.script["t_a"] = [FakeStep(duration=0.05, changed_files=("air/contracts/x.py",))]
    review = designer(env, env.cassette(impact("requires_user_confirmation", "bumps the API")))

    async def yes(_impact: object) -> bool:
        return True

    env.scheduler.architecture_gate = RecordingGate(SchedulerGate(review, yes))
    await env.scheduler.create_tasks([task("t_a")])
    async with env.session.bus.serving():
        result = await env.scheduler.run_until_idle()
    assert statuses_of(result) == {"t_a": "completed"}


async def test_a_document_swapped_for_a_link_is_never_read_into_the_record(
    env: AgentEnv,
) -> None:
    """A confirmed change is appended to ARCHITECTURE.md, its diff shown and recorded. A
    command had swapped the document for a link to a key: its text was the diff's "before",
    shown to the person and kept in ``assistant.message.created``. Now the document is read at
    the path checked, no link followed: the record is refused and said, the key never read,
    and the change the person confirmed goes on (the task completes)."""
    key = env.outside / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nplanted-b64c0ffee\n")
    (env.root / "ARCHITECTURE.md").unlink(missing_ok=True)
    (env.root / "ARCHITECTURE.md").symlink_to(key)
    await _confirmed_change_recorded(env)
    said = [m["content"][0]["text"] for m in env.payloads("assistant.message.created")]
    assert any(
        "the confirmed architecture change was not recorded in ARCHITECTURE.md" in text
        and "config_error" in text
        for text in said
    ), said
    assert env.payloads("architecture.plan.updated") == []
    assert "planted-b64c0ffee" not in repr(env.seen)
    assert key.read_text().endswith("planted-b64c0ffee\n")
    assert (env.root / "ARCHITECTURE.md").is_symlink()


async def test_a_long_document_gets_the_entry_appended_never_cut(env: AgentEnv) -> None:
    """The document was read for the context (cut at 200,000 characters, a marker put in) and
    written back whole: a long ARCHITECTURE.md lost its end to the first confirmed change; and
    the recorded change's marker, past the cut, was never found (the change asked again)."""
    text = "# Architecture\n" + "".join(f"- decision {n}: kept\n" for n in range(15_000))
    assert len(text) > 300_000
    (env.root / "ARCHITECTURE.md").write_text(text)
    await _confirmed_change_recorded(env)
    after = (env.root / "ARCHITECTURE.md").read_text()
    assert after.startswith(text)
    assert after[len(text) :].startswith("\n## Confirmed architecture changes\n\n- ")
    assert "bumps the API" in after[len(text) :]
    assert len(recorded_digests(ArchitectureDeclaration(), env.root)) == 1  # found past the cut
