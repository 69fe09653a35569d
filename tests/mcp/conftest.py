"""Fixtures for the MCP tests: a real air session with a ToolRegistry and no built-in tools.

``McpEnv`` wires a real PermissionEngine (policy rules given per test), the session's real
ingestor and artifact store, and an optional prompt; ``ctx`` is a tool call's context.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from air.contracts.provider import TextBlock, ToolUseBlock
from air.contracts.tool_runs import ToolExecutionContext
from air.llm.cassette import CassetteTurn
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.policy import PermissionPolicy, parse_policy
from air.security.redact import SecretRedactor
from air.session.manager import OpenSession, SessionManager
from air.session.project import ProjectStore
from air.tools import PromptBroker, ToolRegistry
from tests.gitrepo import git, init_repo


class McpEnv:
    def __init__(self, tmp: Path, *, rules: str = "", prompts: PromptBroker | None = None) -> None:
        self.root = tmp / "proj"
        self.root.mkdir()
        git(self.root, "init", "-q")
        self.project = ProjectStore().initialize(self.root)
        self.session: OpenSession = SessionManager().open_session(self.project)
        policy = parse_policy(rules, "rules.yaml") if rules else PermissionPolicy()
        self.engine = PermissionEngine(
            policy=policy,
            classifier=PathClassifier(home=str(tmp / "home")),
            redactor=SecretRedactor(),
            sink=self.session.ingestor.ingest,
        )
        self.registry = ToolRegistry(
            engine=self.engine,
            recorder=self.session.ingestor,
            artifacts=self.session.artifacts,
            prompts=prompts,
        )

    def ctx(self, **kw: Any) -> ToolExecutionContext:
        fields: dict[str, Any] = {
            "session_id": self.session.session_id,
            "project_root": str(self.root),
            "workspace_root": str(self.root),
        }
        fields.update(kw)
        return ToolExecutionContext.model_validate(fields)

    def payloads(self, type: str) -> list[dict[str, Any]]:
        return [dict(e.payload) for e in self.session.events.query() if e.type == type]


@pytest.fixture
def mcp_env(tmp_path: Path) -> Iterator[McpEnv]:
    env = McpEnv(tmp_path, rules="rules:\n  - {action: allow, tool: 'mcp__*'}\n")
    yield env
    env.session.close()


def one_call_cassette(path: Path, call: ToolUseBlock) -> None:
    """A task's cassette at ``path``: the model makes ``call``, then reports it done."""
    result = {"status": "completed", "summary": "Done.", "result": {"changes_made": False}}
    turns = [
        CassetteTurn(content=[call], stop_reason="tool_use"),
        CassetteTurn(
            content=[TextBlock(text=f"Done.\n```json:result\n{json.dumps(result)}\n```\n")],
            stop_reason="end_turn",
        ),
    ]
    path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns))


def one_call_project(root: Path, task_id: str, call: ToolUseBlock) -> None:
    """A committed git project at ``root`` (made) with ``batch.yaml``: one task ``task_id``
    whose cassette (``cassettes/<task_id>.jsonl``) makes ``call``, then reports it done."""
    (root / "cassettes").mkdir(parents=True)
    (root / "notes.txt").write_text("notes\n")
    (root / "batch.yaml").write_text(
        f"version: 1\ntasks:\n  - id: {task_id}\n    title: Call {call.name}\n"
        "    scope: {write_area: [notes.txt]}\n"
    )
    one_call_cassette(root / "cassettes" / f"{task_id}.jsonl", call)
    init_repo(root, message="start")
