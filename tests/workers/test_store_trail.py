"""The executor flow against the real session store: the durable trail lands in session.db and
its projection fills the agents / tool_runs / command_runs / artifacts tables."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from air.contracts.ids import new_id
from air.contracts.project import OpenSessionOptions
from air.contracts.task import TaskSpec, TaskType, VerificationPolicy, WorkspaceRef
from air.contracts.worker_result import WorkerStatus
from air.llm.manager import ProviderManager
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from air.security.redact import SecretRedactor
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_manager import WorkerManager
from air.tools import ToolRegistry, register_builtin_tools
from tests.workers.conftest import result_text, text_turn, tool_turn

VERIFY = "grep -q 'VALUE = 2' src/app.py"


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(db)
    try:
        return list(con.execute(sql))
    finally:
        con.close()


async def test_executor_trail_is_projected_into_the_session_db(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("VALUE = 1\n")
    project = ProjectStore().initialize(root)
    session = SessionManager().open_session(project, OpenSessionOptions())
    try:
        spec = TaskSpec(
            id=new_id("task"),
            type=TaskType.EXECUTE,
            title="bump",
            description="Set VALUE to 2.",
            verification=VerificationPolicy(commands=[VERIFY]),
        )
        await session.ingestor.ingest(
            session.event("task.created", {"task_spec": spec.model_dump(mode="json")})
        )
        redactor = SecretRedactor()
        engine = PermissionEngine(
            classifier=PathClassifier(home=str(tmp_path / "home")),
            redactor=redactor,
            sink=session.ingestor.ingest,
        )
        registry = ToolRegistry(
            engine=engine, recorder=session.ingestor, artifacts=session.artifacts, redactor=redactor
        )
        register_builtin_tools(registry)
        cassette = tmp_path / "c.jsonl"
        turns = [
            tool_turn("fs.read", {"path": "src/app.py"}),
            tool_turn(
                "fs.edit",
                {"path": "src/app.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"},
            ),
            tool_turn("shell.run", {"command": VERIFY}),
            text_turn(result_text("completed", "VALUE is 2", {"changes_made": True})),
        ]
        cassette.write_text("".join(json.dumps(t) + "\n" for t in turns))
        manager = WorkerManager(
            tools=registry.call,
            tool_streams=registry.call_streaming,
            provider=ProviderManager.for_cassette(str(cassette)),
            events=session.ingestor,
            artifacts=session.artifacts,
        )
        request = SuperviseRequest(
            session_id=session.session_id,
            project_id=project.project_id,
            project_root=str(root),
            task_spec=spec,
            agent_id=new_id("agt"),
            attempt_index=0,
            workspace=WorkspaceRef(workspace_id=new_id("ws"), strategy="main", path=str(root)),
        )
        outcome = await manager.supervise(request)
        assert outcome.result is not None
        assert outcome.result.status == WorkerStatus.COMPLETED, outcome.result
        db = Path(project.local_root) / "sessions" / session.session_id / "session.db"
        agents = _rows(db, f"SELECT status FROM agents WHERE id = '{request.agent_id}'")
        assert agents == [("completed",)]
        tools = _rows(db, "SELECT tool_name FROM tool_runs ORDER BY tool_name")
        assert [t[0] for t in tools] == ["fs.edit", "fs.read", "shell.run"]
        assert _rows(db, "SELECT count(*) FROM command_runs")[0][0] == 1
        artifacts = _rows(db, "SELECT count(*) FROM artifacts")[0][0]
        assert isinstance(artifacts, int)
        assert artifacts >= 1
        types = [r[0] for r in _rows(db, "SELECT type FROM events ORDER BY seq")]
        assert (
            types.index("agent.started")
            < types.index("tool.started")
            < types.index("agent.completed")
        )
        # the run record is under .air/local/state/runs
        runs = Path(project.local_root) / "state" / "runs" / f"{request.agent_id}.json"
        assert json.loads(runs.read_text())["terminal_state"] == "completed"
    finally:
        session.close()
