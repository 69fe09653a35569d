"""Generators of valid durable event sequences: the replay property, the crash test, the
session read paths and ``bench/sessions.py``.

``SessionSimulator`` tracks the session's state (tasks, attempts, agents, tool and command
runs, workspaces, drafts) and offers only the events that fit it, so every generated sequence
projects without error. Timestamps advance one millisecond per event (deterministic).
``random_sequence`` picks every action alike (every kind of event, small sessions);
``realistic_sequence`` weighs them like a long working day (a few hundred tasks, mostly tool
calls, commands and their artifacts, a conversation alongside), so its size can grow to
100,000 events without the task count growing with it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from air.contracts.error import make_air_error
from air.contracts.event import EventSource, RuntimeEvent

Chooser = Callable[[list[str]], str]

_BASE = datetime(2026, 1, 1, tzinfo=UTC)


class SessionSimulator:
    """Emit valid events; ``choose`` picks among the currently possible actions."""

    def __init__(self, session_id: str, project_id: str, *, prefix: str = "") -> None:
        self.session_id = session_id
        self.project_id = project_id
        self.prefix = prefix
        self.n = 0
        self.tick = 0
        self.tasks: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self.task_agent: dict[str, str] = {}
        self.agents: dict[str, str] = {}
        self.tools: set[str] = set()
        self.commands: set[str] = set()
        self.workspaces: dict[str, str] = {}
        self.drafts: set[str] = set()
        self.messages: list[str] = []
        self.artifacts: list[str] = []
        self.compactions: dict[str, str] = {}
        self.started = False

    def _id(self, kind: str) -> str:
        self.n += 1
        return f"{kind}_{self.prefix}{self.n:06d}"

    def event(self, type_: str, payload: dict[str, Any]) -> RuntimeEvent:
        self.tick += 1
        ts = (_BASE + timedelta(milliseconds=self.tick)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return RuntimeEvent(
            id=f"00000000-0000-4000-8000-{self.prefix}{self.tick:0{12 - len(self.prefix)}d}",
            type=type_,
            timestamp=ts,
            session_id=self.session_id,
            project_id=self.project_id,
            source=EventSource(kind="scheduler"),
            route=["scheduler", "event_store"],
            payload=payload,
        )

    def start(self) -> RuntimeEvent:
        self.started = True
        return self.event(
            "session.created",
            {"session_id": self.session_id, "project_id": self.project_id, "mode": "headless"},
        )

    def actions(self) -> list[str]:
        acts = ["user_message", "task", "tool", "command", "workspace", "draft", "permission"]
        acts += ["summary", "compaction_request", "doctor"]
        if any(s in ("pending", "failed", "interrupted", "blocked") for s in self.tasks.values()):
            acts.append("task_start")
        if any(s == "running" for s in self.tasks.values()):
            acts += ["task_end", "task_end"]
        if any(s == "pending" for s in self.tasks.values()):
            acts += ["task_cancel", "evidence"]
        if self.tools:
            acts.append("tool_end")
        if self.commands:
            acts.append("command_end")
        if self.drafts:
            acts.append("draft_end")
        if self.artifacts:
            acts.append("diagnostic")
        if any(
            s in ("active", "conflicted", "merged", "abandoned") for s in self.workspaces.values()
        ):
            acts.append("workspace_step")
        if self.compactions:
            acts.append("compaction_step")
        acts.append("artifact")
        return acts

    def step(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        """One action's events (usually one, sometimes two)."""
        action = choose(self.actions())
        return getattr(self, f"_a_{action}")(choose, rnd)  # type: ignore[no-any-return]

    # --- actions -------------------------------------------------------------------------

    def _a_user_message(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        mid = self._id("msg")
        self.messages.append(mid)
        text = choose(["hello", "build it", "ünïcödé ✓", ""])
        return [
            self.event(
                "user.message.created",
                {"message_id": mid, "content": [{"type": "text", "text": text}]},
            )
        ]

    def _a_task(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        tid = self._id("task")
        deps = []
        if self.tasks and rnd.random() < 0.6:
            dep = choose(sorted(self.tasks))
            deps.append(
                {
                    "depends_on_task_id": dep,
                    "dependency_type": choose(["hard", "soft", "conflict", "serialization"]),
                    "source": choose(["architecture", "scheduler", "user"]),
                }
            )
        self.tasks[tid] = "pending"
        spec = {
            "id": tid,
            "type": choose(["execute", "review", "debug", "docs"]),
            "title": f"task {tid}",
            "description": "do the thing",
            "dependencies": deps,
        }
        payload: dict[str, Any] = {"task_spec": spec}
        if self.messages and rnd.random() < 0.5:
            payload["origin_message_id"] = choose(self.messages)
        return [self.event("task.created", payload)]

    def _a_task_start(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        candidates = sorted(
            t for t, s in self.tasks.items() if s in ("pending", "failed", "interrupted", "blocked")
        )
        tid = choose(candidates)
        aid = self._id("agt")
        self.agents[aid] = "running"
        self.attempts[tid] = self.attempts.get(tid, 0) + 1
        self.tasks[tid] = "running"
        self.task_agent[tid] = aid
        out = [
            self.event(
                "agent.started",
                {
                    "agent_id": aid,
                    "task_id": tid,
                    "agent_type": "executor",
                    "status": choose(["running", "starting"]),
                    "pid": rnd.randint(100, 99999),
                },
            ),
        ]
        if out[0].payload["status"] == "starting":
            out.append(
                self.event(
                    "agent.started",
                    {
                        "agent_id": aid,
                        "task_id": tid,
                        "agent_type": "executor",
                        "status": "running",
                    },
                )
            )
        out.append(
            self.event(
                "task.started",
                {
                    "task_id": tid,
                    "agent_id": aid,
                    "agent_type": "executor",
                    "attempt_index": self.attempts[tid],
                },
            )
        )
        return out

    def _a_task_end(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        tid = choose(sorted(t for t, s in self.tasks.items() if s == "running"))
        outcome = choose(["completed", "failed", "blocked", "interrupted", "cancelled"])
        aid = self.task_agent[tid]
        self.tasks[tid] = outcome
        err = make_air_error(kind="task_failed", message=f"tests failed in {tid}")
        payloads: dict[str, dict[str, Any]] = {
            "completed": {
                "task_id": tid,
                "agent_id": aid,
                "worker_result": {
                    "task_id": tid,
                    "agent_id": aid,
                    "agent_type": "executor",
                    "status": "completed",
                    "summary": "done",
                },
            },
            "failed": {"task_id": tid, "agent_id": aid, "error": err.model_dump(mode="json")},
            "blocked": {"task_id": tid, "reason": "needs a decision"},
            "interrupted": {"task_id": tid, "reason": "ctrl-c"},
            "cancelled": {"task_id": tid, "reason": "user"},
        }
        agent_end = {
            "completed": "agent.completed",
            "failed": "agent.failed",
            "blocked": "agent.completed",
            "interrupted": "agent.cancelled",
            "cancelled": "agent.cancelled",
        }[outcome]
        self.agents[aid] = agent_end.split(".")[1]
        agent_payload: dict[str, Any] = {"agent_id": aid, "task_id": tid, "exit_code": 0}
        if agent_end == "agent.failed":
            agent_payload["error"] = err.model_dump(mode="json")
        if outcome == "completed":  # the result the worker returned, kept (IMPL-RESUME-1)
            agent_payload["worker_result"] = payloads["completed"]["worker_result"]
        return [
            self.event(f"task.{outcome}", payloads[outcome]),
            self.event(agent_end, agent_payload),
        ]

    def _a_task_cancel(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        tid = choose(sorted(t for t, s in self.tasks.items() if s == "pending"))
        self.tasks[tid] = "cancelled"
        return [self.event("task.cancelled", {"task_id": tid})]

    def _owner(self, choose: Chooser) -> dict[str, Any]:
        running = sorted(t for t, s in self.tasks.items() if s == "running")
        if running:
            tid = choose(running)
            return {"task_id": tid, "agent_id": self.task_agent[tid]}
        return {}

    def _a_tool(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        trid = self._id("tr")
        self.tools.add(trid)
        payload: dict[str, Any] = {
            "tool_run_id": trid,
            "tool_name": choose(["fs.read", "shell.run"]),
        }
        payload |= self._owner(choose)
        if self.messages and rnd.random() < 0.5:
            payload["origin_message_id"] = choose(self.messages)
        payload["input"] = {"path": "src/a.c", "n": rnd.randint(0, 9)}
        return [self.event("tool.started", payload)]

    def _a_tool_end(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        trid = choose(sorted(self.tools))
        self.tools.discard(trid)
        kind = choose(["completed", "failed", "cancelled"])
        payload: dict[str, Any] = {"tool_run_id": trid, "duration_ms": rnd.randint(0, 5000)}
        if kind == "completed":
            payload |= {"output_summary": "ok", "artifact_ids": self.artifacts[-1:]}
        elif kind == "failed":
            payload["error"] = make_air_error(kind="tool_error", message="boom").model_dump(
                mode="json"
            )
        return [self.event(f"tool.{kind}", payload)]

    def _a_command(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        crid = self._id("cr")
        self.commands.add(crid)
        payload: dict[str, Any] = {"command_run_id": crid, "command": "make test", "cwd": "/w"}
        payload |= self._owner(choose)
        if self.tools and rnd.random() < 0.5:
            payload["tool_run_id"] = choose(sorted(self.tools))
        return [self.event("command.started", payload)]

    def _a_command_end(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        crid = choose(sorted(self.commands))
        self.commands.discard(crid)
        kind = choose(["ok", "error", "failed", "cancelled"])
        if kind in ("ok", "error"):
            return [
                self.event(
                    "command.completed",
                    {
                        "command_run_id": crid,
                        "exit_code": 0 if kind == "ok" else 2,
                        "duration_ms": rnd.randint(1, 900),
                    },
                )
            ]
        err = make_air_error(kind="timeout" if kind == "cancelled" else "tool_error", message="x")
        return [
            self.event(
                "command.failed",
                {
                    "command_run_id": crid,
                    "error": err.model_dump(mode="json"),
                    "cancelled": kind == "cancelled",
                },
            )
        ]

    def _a_artifact(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        aid = self._id("art")
        self.artifacts.append(aid)
        payload: dict[str, Any] = {
            "artifact_id": aid,
            "uri": f"artifact://project/{self.project_id}/session/{self.session_id}/{aid}",
            "path": f"/a/{aid}.log",
            "type": choose(["log", "diff", "report", "other"]),
            "sha256": "0" * 64,
            "size_bytes": rnd.randint(0, 10_000),
            "slug": "out",
            "created_at": "2026-01-01T00:00:00.000000Z",
        }
        payload |= self._owner(choose)
        return [self.event("artifact.created", payload)]

    def _a_diagnostic(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        return [
            self.event(
                "diagnostic.created",
                {
                    "diagnostic_id": self._id("diag"),
                    "severity": choose(["error", "warning", "note"]),
                    "message": "unused variable",
                    "file": "a.c",
                    "line": rnd.randint(1, 99),
                    "semantic_signature": "cc:unused",
                    "artifact_id": choose(self.artifacts),
                },
            )
        ]

    def _a_evidence(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        tid = choose(sorted(self.tasks))
        return [
            self.event(
                "evidence.created",
                {
                    "evidence_ref_id": self._id("evd"),
                    "kind": choose(["build_output", "test_output", "diff"]),
                    "ref": "artifact://x",
                    "claim": "tests pass",
                    "location_json": {"line": rnd.randint(1, 9)},
                    "entity_type": "task",
                    "entity_id": tid,
                },
            )
        ]

    def _a_workspace(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        wid = self._id("ws")
        self.workspaces[wid] = "active"
        payload: dict[str, Any] = {
            "workspace_id": wid,
            "strategy": choose(["main", "worktree", "isolated_copy"]),
            "path": f"/w/{wid}",
        }
        payload |= self._owner(choose)
        return [self.event("workspace.created", payload)]

    def _a_workspace_step(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        wid = choose(
            sorted(
                w
                for w, s in self.workspaces.items()
                if s in ("active", "conflicted", "merged", "abandoned")
            )
        )
        status = self.workspaces[wid]
        options = {
            "active": ["merge.started", "merge.completed", "merge.conflicted", "abandoned"],
            "conflicted": ["merge.started", "abandoned"],
            "merged": ["cleaned"],
            "abandoned": ["cleaned"],
        }[status]
        step = choose(options)
        new_status = {
            "merge.started": "active",
            "merge.completed": "merged",
            "merge.conflicted": "conflicted",
            "abandoned": "abandoned",
            "cleaned": "cleaned",
        }[step]
        self.workspaces[wid] = new_status
        payload: dict[str, Any] = {"workspace_id": wid}
        if step == "merge.conflicted":
            payload["conflicted_paths"] = ["a.c"]
        return [self.event(f"workspace.{step}", payload)]

    def _a_draft(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        mid = self._id("msg")
        self.drafts.add(mid)
        return [self.event("assistant.message.started", {"message_id": mid, "model_id": "m"})]

    def _a_draft_end(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        mid = choose(sorted(self.drafts))
        self.drafts.discard(mid)
        if choose(["ok", "fail"]) == "ok":
            self.messages.append(mid)
            return [
                self.event(
                    "assistant.message.created",
                    {"message_id": mid, "content": [{"type": "text", "text": "hi"}]},
                )
            ]
        err = make_air_error(kind="provider_error", message="overloaded")
        return [
            self.event(
                "assistant.message.failed",
                {"message_id": mid, "error": err.model_dump(mode="json")},
            )
        ]

    def _a_permission(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        return [
            self.event(
                "permission.decision.recorded",
                {
                    "decision": {"action": choose(["allow", "deny"]), "reason": "policy"},
                    "tool_name": "shell.run",
                },
            )
        ]

    def _a_summary(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        return [
            self.event("summary.created", {"summary_id": self._id("sum"), "content": "we built it"})
        ]

    def _a_compaction_request(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        accepted = choose(["yes", "no"]) == "yes"
        payload: dict[str, Any] = {"accepted": accepted, "reason": "context 80% full"}
        if accepted:
            tid = self._id("task")
            self.compactions[tid] = "pending"
            payload["task_spec"] = {
                "id": tid,
                "type": "compact",
                "title": "compact",
                "description": "compact the conversation",
                "output_contract": "CompactorResult",
            }
        return [self.event("context.compaction.requested", payload)]

    def _a_compaction_step(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        tid = choose(sorted(self.compactions))
        status = self.compactions.pop(tid)
        if status == "pending":
            self.compactions[tid] = "running"
            return [self.event("context.compaction.started", {"task_id": tid})]
        if choose(["ok", "fail"]) == "ok":
            sid = self._id("sum")
            return [
                self.event("summary.created", {"summary_id": sid, "content": "s", "task_id": tid}),
                self.event("context.compaction.completed", {"task_id": tid, "summary_id": sid}),
            ]
        err = make_air_error(kind="context_overflow", message="too big")
        return [
            self.event(
                "context.compaction.failed", {"task_id": tid, "error": err.model_dump(mode="json")}
            )
        ]

    def _a_doctor(self, choose: Chooser, rnd: random.Random) -> list[RuntimeEvent]:
        run = self._id("doc")
        return [
            self.event("doctor.run.started", {"doctor_run_id": run, "checks": ["db"]}),
            self.event("doctor.run.completed", {"doctor_run_id": run, "ok": True}),
        ]


def random_sequence(
    session_id: str, project_id: str, length: int, seed: int, *, prefix: str = ""
) -> list[RuntimeEvent]:
    """A valid sequence of about ``length`` events (session.created first)."""
    rnd = random.Random(seed)
    sim = SessionSimulator(session_id, project_id, prefix=prefix)
    events = [sim.start()]
    while len(events) < length:
        events += sim.step(rnd.choice, rnd)
    return events


_DAY_WEIGHTS: dict[str, float] = {
    "tool": 24.0,
    "tool_end": 24.0,
    "command": 12.0,
    "command_end": 12.0,
    "artifact": 8.0,
    "evidence": 2.0,
    "diagnostic": 1.0,
    "user_message": 2.0,
    "draft": 2.0,
    "draft_end": 2.0,
    "permission": 2.0,
    "task": 0.25,
    "task_start": 0.5,
    "task_end": 0.5,
    "task_cancel": 0.02,
    "workspace": 0.2,
    "workspace_step": 0.4,
    "summary": 0.05,
    "compaction_request": 0.01,
    "compaction_step": 0.5,
    "doctor": 0.01,
}
"""How often a working day does each action (relative): mostly tool calls and commands."""


def realistic_sequence(
    session_id: str, project_id: str, length: int, seed: int, *, prefix: str = ""
) -> list[RuntimeEvent]:
    """A valid sequence of about ``length`` events shaped like a long working day
    (``_DAY_WEIGHTS``): about one task per 200 events, each with many tool calls, commands
    and artifacts, messages alongside. Deterministic for a ``seed``."""
    rnd = random.Random(seed)
    sim = SessionSimulator(session_id, project_id, prefix=prefix)
    events = [sim.start()]
    while len(events) < length:
        actions = sorted(set(sim.actions()))
        weights = [_DAY_WEIGHTS.get(a, 0.0) for a in actions]
        action = rnd.choices(actions, weights)[0]
        events += getattr(sim, f"_a_{action}")(rnd.choice, rnd)
    return events


def drawn_sequence(data: Any, session_id: str, project_id: str, length: int) -> list[RuntimeEvent]:
    """A valid sequence of about ``length`` events whose choices hypothesis draws (so it can
    shrink them): ``data`` is a ``st.data()`` object."""
    from hypothesis import strategies as st

    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    sim = SessionSimulator(session_id, project_id)

    def choose(options: list[str]) -> str:
        return str(data.draw(st.sampled_from(options)))

    events = [sim.start()]
    while len(events) < length:
        events += sim.step(choose, rnd)
    return events
