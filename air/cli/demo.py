"""``air demo``: record a small, real run in a new project and print its history.

Owns the demo scenario only. Every side effect goes through the real ToolRegistry and
PermissionEngine (files read and edited, a test command run in the bubblewrap sandbox, a diff
artifact, test evidence) and every fact lands as a durable event in the session database,
which is then read back and printed. The role of the model is played by this script: it is the
one thing here that is not real.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from air.contracts.error import CliExit
from air.workspace.gitsafe import git_environment, hardened_argv

BUGGY = '''"""Tiny arithmetic helpers."""


def add(a: int, b: int) -> int:
    return a - b
'''

TESTS = """from mathx import add

assert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}"
assert add(-1, 1) == 0
print("2 tests passed")
"""


def _make_project(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "mathx.py").write_text(BUGGY)
    (root / "test_mathx.py").write_text(TESTS)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=air demo", "-c", "user.email=demo@air.invalid", "commit", "-qm", "init"],
    ):
        subprocess.run(
            hardened_argv("-C", str(root), *args),
            check=True,
            capture_output=True,
            env=git_environment(),
        )


def run_demo(args: dict[str, Any]) -> int:
    import trio

    base = Path(args["--dir"]) if args["--dir"] else Path(tempfile.mkdtemp(prefix="air-demo-"))
    root = base / "mathx"
    if root.exists():
        from air.contracts.error import AirException

        raise AirException.of(
            kind="validation_error",
            message=f"{root} already exists",
            user_action="Pass an empty --dir, or leave it out to use a new temporary directory.",
        )
    _make_project(root)
    return trio.run(_scenario, root)


async def _scenario(root: Path) -> int:
    from air.cli.history import print_history
    from air.contracts.event import EntityType, EventSource
    from air.contracts.evidence import EvidenceKind
    from air.contracts.evidence_records import EvidenceCreateInput
    from air.contracts.ids import new_id
    from air.contracts.project import OpenSessionOptions
    from air.contracts.runtime import AgentType
    from air.contracts.task import TaskSpec, TaskType, VerificationPolicy
    from air.contracts.tool_runs import ToolExecutionContext
    from air.contracts.worker_result import WorkerResult, WorkerStatus
    from air.security.engine import PermissionEngine
    from air.security.paths import PathClassifier
    from air.security.redact import SecretRedactor
    from air.session.manager import SessionManager
    from air.session.project import ProjectStore
    from air.tools import ToolRegistry, register_builtin_tools

    project = ProjectStore().initialize(root)
    manager = SessionManager()
    session = manager.open_session(project, OpenSessionOptions(title="demo", mode="headless"))
    sid = session.session_id
    print(f"project {project.project_root} (id {project.project_id})")
    print(f"session {sid}: {session.context.db_path}\n")

    redactor = SecretRedactor()
    engine = PermissionEngine(
        classifier=PathClassifier(), redactor=redactor, sink=session.ingestor.ingest
    )
    registry = ToolRegistry(
        engine=engine, recorder=session.ingestor, artifacts=session.artifacts, redactor=redactor
    )
    register_builtin_tools(registry)

    main = EventSource(kind="main")
    scheduler = EventSource(kind="scheduler")
    ask = "add(2, 3) returns -1. Fix add() in mathx.py and prove it with the tests."
    message_id = new_id("msg")
    await session.ingestor.ingest(
        session.event(
            "user.message.created",
            {"message_id": message_id, "content": [{"type": "text", "text": ask}]},
            source=main,
        )
    )
    task_id = new_id("task")
    verify = "python3 test_mathx.py"
    spec = TaskSpec(
        id=task_id,
        type=TaskType.EXECUTE,
        title="Fix add() in mathx.py",
        description=ask,
        acceptance_criteria=["test_mathx.py passes"],
        verification=VerificationPolicy(commands=[verify], required=True),
    )
    await session.ingestor.ingest(
        session.event(
            "task.created",
            {"task_spec": spec.model_dump(mode="json"), "origin_message_id": message_id},
            source=scheduler,
        )
    )
    agent_id = new_id("agt")
    await session.ingestor.ingest(
        session.event(
            "agent.started",
            {
                "agent_id": agent_id,
                "task_id": task_id,
                "agent_type": "executor",
                "status": "running",
                "pid": os.getpid(),
            },
            source=scheduler,
        )
    )
    await session.ingestor.ingest(
        session.event(
            "task.started",
            {
                "task_id": task_id,
                "agent_id": agent_id,
                "agent_type": "executor",
                "attempt_index": 1,
            },
            source=scheduler,
        )
    )
    ctx = ToolExecutionContext(
        session_id=sid,
        task_id=task_id,
        agent_id=agent_id,
        project_root=str(root),
        workspace_root=str(root),
        origin_message_id=message_id,
        headless=True,
    )
    read = await registry.call("fs.read", {"path": "mathx.py"}, ctx)
    edit = await registry.call(
        "fs.edit", {"path": "mathx.py", "old_string": "a - b", "new_string": "a + b"}, ctx
    )
    test = await registry.call("shell.run", {"command": verify}, ctx)
    for envelope in (read, edit, test):
        if envelope.status != "ok":
            print(f"demo: {envelope.tool_name} ended {envelope.status}: {envelope.error}")
            return CliExit.FAILED
    output = test.output if isinstance(test.output, dict) else {}
    passed = output.get("exit_code") == 0
    evidence = session.evidence.create(
        EvidenceCreateInput(
            kind=EvidenceKind.TEST_OUTPUT,
            ref=str(output.get("command_run_id")),
            claim=f"`{verify}` exited {output.get('exit_code')}",
            entity_type=EntityType.TASK,
            entity_id=task_id,
        )
    )
    result = WorkerResult(
        task_id=task_id,
        agent_id=agent_id,
        agent_type=AgentType.EXECUTOR,
        status=WorkerStatus.COMPLETED if passed else WorkerStatus.FAILED,
        summary="add() subtracted; it now adds. The tests pass."
        if passed
        else "The tests still fail.",
        changed_files=["mathx.py"],
        artifacts=edit.artifacts,
        evidence_refs=[evidence],
        result={"changes_made": True},
    )
    await session.ingestor.ingest(
        session.event(
            "task.completed",
            {
                "task_id": task_id,
                "agent_id": agent_id,
                "attempt_index": 1,
                "worker_result": result.model_dump(mode="json"),
            },
            source=scheduler,
        )
    )
    await session.ingestor.ingest(
        session.event(
            "agent.completed",
            {"agent_id": agent_id, "task_id": task_id, "exit_code": 0},
            source=scheduler,
        )
    )
    events = session.events.query()
    report = session.store.referential_check()
    manager.close_session(sid)

    print("history read back from the session database:\n")
    print_history(events, sys.stdout)
    print(f"\n{len(events)} durable events; referential check clean: {report.clean}")
    print(f"mathx.py now: {(root / 'mathx.py').read_text().splitlines()[-1].strip()}")
    print(f"see it again with: air history --project {root}")
    return CliExit.OK if passed else CliExit.FAILED
