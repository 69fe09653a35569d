"""Fixtures for worker supervision: a project on disk, the real ToolRegistry (fs + shell), the
real ProviderManager replaying a cassette written by the test, and file-backed sinks
(``air.testing.workers.harness``: the session store was not ready when these were written)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from air.contracts.ids import new_id
from air.contracts.provider import ModelConfig, ModelPrice
from air.contracts.task import TaskConstraints, TaskSpec, TaskType, VerificationPolicy, WorkspaceRef
from air.llm.manager import ProviderManager, scripted_models_config
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.redact import SecretRedactor
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import SupervisionConfig, WorkerManager
from air.testing.workers.harness import DirArtifacts, RecordingEvents
from air.tools import ToolRegistry, register_builtin_tools


def text_turn(text: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def tool_turn(name: str, input: dict[str, Any], text: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": new_id("toolu"), "name": name, "input": input})
    return {
        "content": content,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def result_text(status: str, summary: str, result: dict[str, Any]) -> str:
    block = json.dumps({"status": status, "summary": summary, "result": result})
    return f"Done.\n```json:result\n{block}\n```\n"


class Env:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "proj"
        (self.root / "src").mkdir(parents=True)
        (self.root / "src" / "app.py").write_text("VALUE = 1\n")
        self.events = RecordingEvents(str(tmp / "events.jsonl"))
        self.artifacts = DirArtifacts(str(tmp / "artifacts"))
        home = tmp / "home"
        home.mkdir()
        redactor = SecretRedactor()
        engine = PermissionEngine(
            classifier=PathClassifier(home=str(home)), redactor=redactor, sink=self.events.ingest
        )
        self.registry = ToolRegistry(
            engine=engine, recorder=self.events, artifacts=self.artifacts, redactor=redactor
        )
        register_builtin_tools(self.registry)
        self.state_dir = str(tmp / "runs")

    def manager(self, turns: list[dict[str, Any]], **config: Any) -> WorkerManager:
        """A manager replaying ``turns`` under ``SupervisionConfig(**config)``; a ``price``
        (a ``ModelPrice``, USD per million tokens) among ``config`` makes every call cost."""
        price: ModelPrice | None = config.pop("price", None)
        cassette = self.tmp / f"cassette-{new_id('c')}.jsonl"
        cassette.write_text("".join(json.dumps(t) + "\n" for t in turns))
        models = scripted_models_config(str(cassette))
        if price is not None:
            scripted = models.providers["scripted"]
            models = models.model_copy(
                update={
                    "providers": {
                        "scripted": scripted.model_copy(
                            update={"models": {"scripted": ModelConfig(price=price)}}
                        )
                    }
                }
            )
        provider = ProviderManager(models)
        specs = [
            {"name": d.name, "description": d.description, "input_schema": d.input_schema}
            for d in self.registry.list()
        ]
        return WorkerManager(
            tools=self.registry.call,
            tool_streams=self.registry.call_streaming,
            provider=provider,
            events=self.events,
            artifacts=self.artifacts,
            tool_specs=specs,
            config=SupervisionConfig(**config),
            state_dir=self.state_dir,
        )

    def request(
        self,
        *,
        type: TaskType = TaskType.EXECUTE,
        commands: list[str] | None = None,
        fallback: bool = False,
        **constraints: Any,
    ) -> SuperviseRequest:
        task_id = new_id("task")
        return SuperviseRequest(
            session_id="ses_test",
            project_id="proj_test",
            project_root=str(self.root),
            task_spec=TaskSpec(
                id=task_id,
                type=type,
                title="bump VALUE",
                description="Set VALUE to 2 in src/app.py.",
                verification=VerificationPolicy(commands=commands, fallback_allowed=fallback),
                constraints=TaskConstraints(**constraints),
            ),
            agent_id=new_id("agt"),
            attempt_index=0,
            workspace=WorkspaceRef(workspace_id=new_id("ws"), strategy="main", path=str(self.root)),
        )


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is neither a zombie nor dead (its /proc state)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def survivors(pid: int, marker: str) -> list[int]:
    """Live processes in the worker's group or session, or carrying its run marker."""
    found: list[int] = []
    needle = f"AIR_WORKER_RUN={marker}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            if fields[0] in ("Z", "X"):
                continue
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if fields[2] == str(pid) or fields[3] == str(pid) or needle in env.split(b"\0"):
            found.append(int(name))
    return found


def read_text(path: str) -> str:
    return Path(path).read_text()


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)
