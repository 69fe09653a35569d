"""Event builders for console sessions: a chat turn, tasks with tools, commands, diffs,
evidence, permission prompts and blockers, as the runtime would record and stream them.

Owns ``ConsoleEvents``: each method returns the ``RuntimeEvent``s of one step with payloads
that pass the real ``EventSchemaRegistry`` (durable ones can be appended to a real
EventStore). Used by the projection and console tests, the tmux driver
(``air.testing.console_driver``) and ``bench/console.py``. Timestamps advance by ``step_ms``
from ``start`` (deterministic) unless ``real_time`` is set.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from air.contracts.error import make_air_error
from air.contracts.event import EventSource, RuntimeEvent
from air.contracts.ids import new_uuid, utc_now_iso
from air.contracts.ui import UiCommand
from air.events.payloads import EPHEMERAL_TYPES

__all__ = ["ConsoleEvents", "RecordingChannel", "demo_events"]

_BASE = datetime(2026, 1, 1, tzinfo=UTC)


class ConsoleEvents:
    """Builds coherent event sequences for one session."""

    def __init__(
        self,
        session_id: str = "ses_console",
        project_id: str = "prj_console",
        *,
        real_time: bool = False,
        step_ms: int = 250,
    ) -> None:
        self.session_id = session_id
        self.project_id = project_id
        self.real_time = real_time
        self.step_ms = step_ms
        self.tick = 0
        self.n = 0
        self.agent_of: dict[str, str] = {}
        self.attempt_of: dict[str, int] = {}
        self._sources: dict[str, EventSource] = {}

    def next_id(self, kind: str) -> str:
        self.n += 1
        return f"{kind}_{self.n:04d}"

    def event(self, type_: str, payload: dict[str, Any], kind: str = "scheduler") -> RuntimeEvent:
        if type_ in EPHEMERAL_TYPES:
            return self._ephemeral(type_, payload, kind)
        self.tick += 1
        if self.real_time:
            ts = utc_now_iso()
        else:
            ts = (_BASE + timedelta(milliseconds=self.tick * self.step_ms)).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ"
            )
        return RuntimeEvent(
            id=new_uuid(),
            type=type_,
            timestamp=ts,
            session_id=self.session_id,
            project_id=self.project_id,
            source=EventSource.model_validate({"kind": kind}),
            route=[kind],
            payload=payload,
        )

    def _ephemeral(self, type_: str, payload: dict[str, Any], kind: str) -> RuntimeEvent:
        """An ephemeral event built without re-validation (the shape is fixed here), the way a
        storm of thousands per second reaches the bus from already-validated producers."""
        self.tick += 1
        source = self._sources.get(kind)
        if source is None:
            source = self._sources[kind] = EventSource.model_validate({"kind": kind})
        ts = utc_now_iso() if self.real_time else self._ts()
        return RuntimeEvent.model_construct(
            id=new_uuid(), type=type_, version=1, timestamp=ts, session_id=self.session_id,
            project_id=self.project_id, source=source, route=[kind], payload=payload,
        )  # fmt: skip

    def _ts(self) -> str:
        return (_BASE + timedelta(milliseconds=self.tick * self.step_ms)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )

    # --- session and conversation -------------------------------------------------------

    def session(self, *, model_id: str = "scripted-model") -> list[RuntimeEvent]:
        return [
            self.event(
                "session.created",
                {
                    "session_id": self.session_id,
                    "project_id": self.project_id,
                    "title": "console session",
                    "model_provider_id": "scripted",
                    "model_id": model_id,
                },
                "system",
            )
        ]

    def user_message(self, text: str) -> list[RuntimeEvent]:
        payload = {"message_id": self.next_id("msg"), "content": [{"type": "text", "text": text}]}
        return [self.event("user.message.created", payload, "main")]

    def assistant_start(self) -> tuple[str, list[RuntimeEvent]]:
        mid = self.next_id("msg")
        return mid, [self.event("assistant.message.started", {"message_id": mid}, "main")]

    def assistant_delta(self, message_id: str, text: str) -> RuntimeEvent:
        return self.event(
            "assistant.message.delta", {"message_id": message_id, "text": text}, "main"
        )

    def assistant_done(self, message_id: str, text: str) -> list[RuntimeEvent]:
        payload = {
            "message_id": message_id,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        }
        return [self.event("assistant.message.created", payload, "main")]

    def assistant_failed(self, message_id: str, message: str) -> list[RuntimeEvent]:
        error = make_air_error(kind="cancelled", message=message).model_dump(mode="json")
        payload = {"message_id": message_id, "error": error}
        return [self.event("assistant.message.failed", payload, "main")]

    def chat(self, question: str, answer: str, *, chunks: int = 4) -> list[RuntimeEvent]:
        """A whole chat turn: the question, a streamed answer in ``chunks`` deltas, the answer."""
        out = self.user_message(question)
        mid, started = self.assistant_start()
        out += started
        size = max(1, len(answer) // chunks + 1)
        out += [
            self.assistant_delta(mid, answer[i : i + size]) for i in range(0, len(answer), size)
        ]
        return out + self.assistant_done(mid, answer)

    # --- tasks ----------------------------------------------------------------------------

    def task(
        self, task_id: str, title: str, *, depends_on: list[str] | None = None
    ) -> list[RuntimeEvent]:
        spec = {
            "id": task_id,
            "type": "execute",
            "title": title,
            "description": title,
            "dependencies": [{"depends_on_task_id": d} for d in depends_on or []],
        }
        return [self.event("task.created", {"task_spec": spec})]

    def start(self, task_id: str) -> list[RuntimeEvent]:
        attempt = self.attempt_of.get(task_id, 0) + 1
        self.attempt_of[task_id] = attempt
        agent = self.agent_of[task_id] = self.next_id("agt")
        started = {
            "agent_id": agent,
            "task_id": task_id,
            "agent_type": "executor",
            "status": "running",
            "pid": 4242,
        }
        payload = {
            "task_id": task_id,
            "agent_id": agent,
            "agent_type": "executor",
            "attempt_index": attempt,
        }
        return [self.event("agent.started", started), self.event("task.started", payload)]

    def heartbeat(self, task_id: str, turn: int, tokens: int) -> RuntimeEvent:
        payload = {
            "agent_id": self.agent_of[task_id],
            "task_id": task_id,
            "state": "thinking",
            "turn": turn,
            "tokens": tokens,
        }
        return self.event("agent.heartbeat", payload, "agent")

    def usage(
        self, task_id: str | None, tokens: int, cost: float | None, *, purpose: str = "task"
    ) -> RuntimeEvent:
        """One model call of the usage ledger (IMPL-USAGE-1): ``tokens`` in and out (a quarter
        out), at ``cost`` (``None``: the model's price is unknown)."""
        payload = {
            "purpose": purpose,
            "provider_id": "scripted",
            "model_id": "scripted-model",
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id or "", "main"),
            "input_tokens": tokens - tokens // 4,
            "output_tokens": tokens // 4,
            "cost_usd": cost,
        }
        return self.event("model.usage.recorded", payload, "main")

    def progress(self, task_id: str, message: str) -> RuntimeEvent:
        return self.event("task.progress", {"task_id": task_id, "message": message}, "agent")

    def _end_agent(self, task_id: str, kind: str) -> RuntimeEvent:
        payload: dict[str, Any] = {"agent_id": self.agent_of[task_id], "task_id": task_id}
        if kind == "failed":
            payload["error"] = make_air_error(kind="tool_error", message="failed").model_dump(
                mode="json"
            )
        return self.event(f"agent.{kind}", payload)

    def complete(
        self, task_id: str, summary: str, *, tokens: int = 1200, turns: int = 3, cost: float = 0.01
    ) -> list[RuntimeEvent]:
        result = {
            "task_id": task_id,
            "agent_id": self.agent_of[task_id],
            "agent_type": "executor",
            "status": "completed",
            "summary": summary,
            "usage": {"tokens": tokens, "turns": turns, "cost_usd": cost},
        }
        payload = {
            "task_id": task_id,
            "agent_id": self.agent_of[task_id],
            "attempt_index": self.attempt_of[task_id],
            "worker_result": result,
        }
        return [
            self.usage(task_id, tokens, cost),  # the worker's calls, as the parent counts them
            self.event("task.completed", payload),
            self._end_agent(task_id, "completed"),
        ]

    def cancel(self, task_id: str, reason: str = "cancelled by the person") -> list[RuntimeEvent]:
        out = []
        if task_id in self.agent_of:
            out.append(self._end_agent(task_id, "cancelled"))
        return [*out, self.event("task.cancelled", {"task_id": task_id, "reason": reason})]

    def block(self, task_id: str, reason: str, options: list[str]) -> list[RuntimeEvent]:
        payload = {
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id),
            "reason": reason,
            "blocker": {"reason": reason, "needs": "user_decision", "options": options},
        }
        return [self.event("task.blocked", payload)]

    # --- tools, commands, artifacts -----------------------------------------------------------

    def tool(self, task_id: str, name: str, args: dict[str, Any]) -> tuple[str, list[RuntimeEvent]]:
        tid = self.next_id("tool")
        payload = {
            "tool_run_id": tid,
            "tool_name": name,
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id),
            "input": args,
        }
        return tid, [self.event("tool.started", payload, "tool")]

    def tool_done(self, tool_run_id: str, summary: str = "ok") -> list[RuntimeEvent]:
        payload = {"tool_run_id": tool_run_id, "output_summary": summary, "duration_ms": 12}
        return [self.event("tool.completed", payload, "tool")]

    def command(
        self, task_id: str, command: str, tool_run_id: str | None = None
    ) -> tuple[str, list[RuntimeEvent]]:
        cid = self.next_id("cmd")
        payload = {
            "command_run_id": cid,
            "command": command,
            "cwd": "/work/project",
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id),
            "tool_run_id": tool_run_id,
        }
        return cid, [self.event("command.started", payload, "tool")]

    def output(self, command_run_id: str, data: str, *, stderr: bool = False) -> RuntimeEvent:
        kind = "command.stderr.delta" if stderr else "command.stdout.delta"
        return self.event(kind, {"command_run_id": command_run_id, "data": data}, "tool")

    def command_done(self, command_run_id: str, exit_code: int = 0) -> list[RuntimeEvent]:
        payload = {"command_run_id": command_run_id, "exit_code": exit_code, "duration_ms": 40}
        return [self.event("command.completed", payload, "tool")]

    def command_cancelled(self, command_run_id: str) -> list[RuntimeEvent]:
        error = make_air_error(kind="cancelled", message="cancelled").model_dump(mode="json")
        payload = {"command_run_id": command_run_id, "error": error, "cancelled": True}
        return [self.event("command.failed", payload, "tool")]

    def tool_cancelled(self, tool_run_id: str) -> list[RuntimeEvent]:
        return [self.event("tool.cancelled", {"tool_run_id": tool_run_id}, "tool")]

    def merged(self, task_id: str, *, left_out: list[str] | None = None) -> list[RuntimeEvent]:
        """The task's worktree made and merged; ``left_out``: what git ignores that it left."""
        wid = self.next_id("ws")
        created = {
            "workspace_id": wid,
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id),
            "strategy": "worktree",
            "path": f"/tmp/air-worktrees/{wid}",
            "branch": f"air/ws/{wid}",
        }
        completed: dict[str, Any] = {"workspace_id": wid, "merge_commit": "0" * 40}
        if left_out:
            completed.update(left_out=left_out[:20], left_out_count=len(left_out))
        return [
            self.event("workspace.created", created),
            self.event("workspace.merge.started", {"workspace_id": wid}),
            self.event("workspace.merge.completed", completed),
        ]

    def artifact(self, task_id: str, path: str, *, type_: str = "diff") -> list[RuntimeEvent]:
        aid = self.next_id("art")
        payload = {
            "artifact_id": aid,
            "uri": f"artifact://{aid}",
            "path": path,
            "type": type_,
            "slug": "change",
            "task_id": task_id,
            "created_at": utc_now_iso(),
        }
        return [self.event("artifact.created", payload, "tool")]

    def evidence(self, task_id: str, claim: str, ref: str = "pytest -q") -> list[RuntimeEvent]:
        payload = {
            "evidence_ref_id": self.next_id("ev"),
            "kind": "test_output",
            "ref": ref,
            "claim": claim,
            "entity_type": "task",
            "entity_id": task_id,
        }
        return [self.event("evidence.created", payload, "tool")]

    def prompt(
        self, task_id: str, summary: str, *, risk: str = "medium"
    ) -> tuple[str, list[RuntimeEvent]]:
        pid = self.next_id("prm")
        payload = {
            "prompt_id": pid,
            "tool_name": "shell.run",
            "summary": summary,
            "risk_level": risk,
            "task_id": task_id,
            "agent_id": self.agent_of.get(task_id),
        }
        return pid, [self.event("permission.prompt.requested", payload, "tool")]

    def prompt_resolved(
        self, prompt_id: str, decision: str, resolved_by: str = "user"
    ) -> list[RuntimeEvent]:
        payload = {"prompt_id": prompt_id, "decision": decision, "resolved_by": resolved_by}
        return [self.event("permission.prompt.resolved", payload, "tool")]


def demo_events(ev: ConsoleEvents, *, diff_path: str | None = None) -> list[RuntimeEvent]:
    """A whole small session: a chat turn, two waves of tasks with a tool, a command with
    output, a diff, evidence, a permission prompt answered, a blocker and a completion."""
    out = ev.session()
    out += ev.chat("what does calc do?", "It adds numbers.\n```python\nprint(1 + 2)\n```\nDone.")
    out += ev.user_message("fix the subtraction bug")
    out += ev.task("task_a", "fix subtraction") + ev.task(
        "task_b", "add tests", depends_on=["task_a"]
    )
    out += ev.start("task_a")
    out.append(ev.heartbeat("task_a", 1, 300))
    tool, events = ev.tool("task_a", "shell.run", {"command": "pytest -q"})
    out += events
    cmd, events = ev.command("task_a", "pytest -q", tool)
    out += events
    out += [ev.output(cmd, "collected 3 items\n"), ev.output(cmd, "3 passed\n")]
    out += ev.command_done(cmd, 0) + ev.tool_done(tool, "3 passed")
    if diff_path is not None:
        out += ev.artifact("task_a", diff_path)
    out += ev.evidence("task_a", "tests pass after the fix")
    prompt, events = ev.prompt("task_a", "git commit -m fix", risk="medium")
    out += events + ev.prompt_resolved(prompt, "allow_once")
    out += ev.complete("task_a", "subtraction fixed")
    out += ev.start("task_b")
    out.append(ev.progress("task_b", "writing tests"))
    out += ev.block("task_b", "which test framework?", ["pytest", "unittest"])
    return out


class RecordingChannel:
    """A UiCommandChannel that keeps what it was sent (tests of the console's keys)."""

    def __init__(self) -> None:
        self.sent: list[UiCommand] = []

    async def send(self, command: UiCommand) -> None:
        self.sent.append(command)
