"""A worker started ahead of its task (SpareWorker) serves the first attempt; an unused spare
exits quietly; ``worker.ready`` comes only once the worker validated its task. Real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from air.contracts.ipc import AgentStartControl
from air.contracts.runtime import AgentRuntimeContext, ContextPack, PermissionTemplate
from air.contracts.task import TaskSpec, TaskType
from air.contracts.worker_result import WorkerStatus
from air.ipc.spare import SpareWorker
from tests.workers.conftest import Env, result_text, text_turn


def _start_line(payload: dict[str, object]) -> bytes:
    env = {
        "v": 1,
        "id": "msg_1",
        "kind": "control",
        "ts": "2026-01-01T00:00:00Z",
        "session_id": "ses_test",
        "agent_id": "agt_test",
        "payload": payload,
    }
    return json.dumps(env).encode() + b"\n"


def _run_records(state_dir: str) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in Path(state_dir).glob("*.json")]


def _worker(stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "air.roles"],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=False,
    )


async def test_the_first_attempt_adopts_the_spare(env: Env) -> None:
    spare = SpareWorker.start(str(env.root))
    assert spare is not None
    manager = env.manager([text_turn(result_text("completed", "ok", {"verdict": "approved"}))])
    manager.spare = spare
    outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED
    assert spare.adopted
    assert spare.popen.poll() == 0
    records = _run_records(env.state_dir)
    assert [r["marker"] for r in records] == [spare.marker]
    assert records[0]["pid"] == spare.popen.pid
    # the second attempt spawns afresh
    manager2 = env.manager([text_turn(result_text("completed", "ok", {"verdict": "approved"}))])
    outcome2 = await manager2.supervise(env.request(type=TaskType.REVIEW))
    assert outcome2.result is not None
    assert outcome2.result.status == WorkerStatus.COMPLETED


async def test_a_spare_with_another_command_is_not_adopted(env: Env) -> None:
    spare = SpareWorker.start(str(env.root))
    assert spare is not None
    turns = [text_turn(result_text("completed", "ok", {"verdict": "approved"}))]
    manager = env.manager(turns, command=[sys.executable, "-m", "air.roles"])
    manager.spare = spare
    outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
    assert outcome.result is not None
    assert not spare.adopted
    assert spare.popen.poll() is not None  # closed and reaped, not left waiting


def test_an_unused_spare_exits_quietly(tmp_path: Path) -> None:
    # the parent went away: end-of-file on stdin before any byte
    spare = SpareWorker.start(str(tmp_path))
    assert spare is not None
    assert spare.popen.stdin is not None
    spare.popen.stdin.close()
    assert spare.popen.wait(timeout=60) == 0
    assert spare.popen.stderr is not None
    assert spare.popen.stderr.read() == b""
    # the run ended without using it: killed and reaped at once
    other = SpareWorker.start(str(tmp_path))
    assert other is not None
    other.close()
    assert other.popen.returncode is not None
    other.close()  # idempotent


def test_ready_only_after_the_task_validated(tmp_path: Path) -> None:
    bad = _worker(_start_line({"type": "agent.start", "version": 1, "task_spec": {}}), tmp_path)
    first = json.loads(bad.stdout.splitlines()[0])
    assert first["kind"] == "protocol.error"
    assert "invalid agent.start" in first["payload"]["error"]["message"]
    assert bad.returncode == 2
    start = AgentStartControl(
        task_spec=TaskSpec.model_validate(
            {"id": "task_1", "type": "review", "title": "t", "description": "d"}
        ),
        context_pack=ContextPack(),
        runtime=AgentRuntimeContext(
            session_id="ses_test",
            project_id="prj",
            agent_id="agt_test",
            worktree_path=str(tmp_path),
            permission_template=PermissionTemplate.REVIEWER,
        ),
    )
    # a valid start is answered with worker.ready (then the pipe closes: the worker cancels)
    good = _worker(_start_line(start.model_dump(mode="json")), tmp_path)
    lines = [json.loads(x) for x in good.stdout.splitlines()]
    assert lines[0]["kind"] == "event"
    assert lines[0]["payload"]["type"] == "worker.ready"


def _modules_after_warm(extra_env: dict[str, str]) -> list[bool]:
    probe = (
        "import json, sys\n"
        "from air.ipc.startup import skip_pydantic_plugins\n"
        "skip_pydantic_plugins()\n"
        "from air.roles.main import warm_models\n"
        "warm_models()\n"
        "print(json.dumps(['importlib.metadata' in sys.modules,\n"
        "    getattr(sys.modules.get('pydantic.plugin._loader'), '__file__', None) is None]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, **extra_env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(out.stdout))


def test_the_worker_skips_the_pydantic_plugin_lookup() -> None:
    assert _modules_after_warm({}) == [False, True]
    # a user who asks for (some) plugins gets pydantic's own loader
    assert _modules_after_warm({"PYDANTIC_DISABLE_PLUGINS": "some_plugin"}) == [True, False]


async def test_a_planted_air_package_in_the_workspace_is_never_imported(env: Env) -> None:
    planted = env.root / "air"
    planted.mkdir()
    marker = env.tmp / "planted-code-ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    spare = SpareWorker.start(str(env.root))
    assert spare is not None
    for adopt in (True, False):
        manager = env.manager([text_turn(result_text("completed", "ok", {"verdict": "approved"}))])
        manager.spare = spare if adopt else None
        outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
        assert outcome.result is not None
        assert outcome.result.status == WorkerStatus.COMPLETED
    assert spare.adopted
    assert not _exists(marker)


def _exists(path: Path) -> bool:
    return path.exists()


def test_gc_is_held_during_start_up_and_released_frozen() -> None:
    probe = (
        "import gc, json\n"
        "from air.ipc.startup import hold_gc, release_gc\n"
        "hold_gc()\n"
        "held = gc.isenabled()\n"
        "import air.roles.main\n"
        "release_gc()\n"
        "release_gc()\n"
        "print(json.dumps([held, gc.isenabled(), gc.get_freeze_count() > 0]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == [False, True, True]


def _trio_import_probe(skip: bool) -> dict[str, object]:
    probe = (
        "import json, sys\n"
        "spawned = []\n"
        "sys.addaudithook(lambda e, a: spawned.append(str(a[0])) "
        "if e == 'subprocess.Popen' else None)\n"
        "from air.ipc.startup import skip_ldconfig_probe\n"
        f"{'skip_ldconfig_probe()' if skip else 'pass'}\n"
        "import ctypes.util\n"
        "import trio\n"
        "from trio._core import _thread_cache\n"
        "print(json.dumps({'spawned': spawned,\n"
        "    'named': _thread_cache.set_os_thread_name is not None,\n"
        "    'restored': ctypes.util.find_library.__qualname__}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(out.stdout))


def test_trio_is_imported_without_an_ldconfig_subprocess() -> None:
    # Trio's libpthread lookup (for thread names) runs `ldconfig -p` unless answered first
    plain = _trio_import_probe(skip=False)
    spawned = plain["spawned"]
    assert isinstance(spawned, list)
    assert any("ldconfig" in argv for argv in spawned)
    quick = _trio_import_probe(skip=True)
    assert quick == {"spawned": [], "named": True, "restored": "find_library"}
