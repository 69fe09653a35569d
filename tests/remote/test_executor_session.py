"""A remote task's decided calls through kept executor sessions (IMPL-REMOTE-7), over this
machine's sshd (tests/remote/conftest.py): the real ToolRegistry decides in the parent, the real
``air.remote.executor serve`` runs the calls in a worktree of the remote user. The calls of a
task share one ssh connection and one remote executor; and no session survives: not the end of
the task's attempt, not a cancelled call (its sandboxed command included), not the parent's
SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from air.remote.guard import EXECUTOR_INPUT_ENDED
from air.remote.hosts import HostConfig
from air.remote.session import ExecutorSession
from air.remote.workspace import RemoteTarget, RoutingWorkspaceExecutor
from air.tools import ToolRegistry, register_builtin_tools
from tests.remote.conftest import CHECKOUT, remote_marked, remote_uid
from tests.tools.conftest import Env

pytestmark = pytest.mark.slow


async def wait_for(predicate: Callable[[], bool], limit_s: float = 20.0) -> None:
    with trio.fail_after(limit_s):
        while not predicate():  # noqa: ASYNC110 (processes on the remote host)
            await trio.sleep(0.05)


def remote_cmdlines(needle: bytes) -> list[int]:
    """Processes of the remote user whose command line carries ``needle``."""
    found = []
    uid = remote_uid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if needle in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def _content(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def _ssh_alive(session: ExecutorSession) -> bool:
    assert session.process is not None
    return session.process.returncode is None and os.path.exists(f"/proc/{session.process.pid}")


def make_worktree(host: HostConfig) -> str:
    """A worktree of the remote user's in the host's work directory, with one file."""
    path = Path(host.workdir, f"wt-{os.urandom(6).hex()}")
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("print('there')\n")
    for where in (path, path / "src", path / "src" / "app.py"):
        os.chown(where, remote_uid(), remote_uid())
    return str(path)


def remote_registry(
    env: Env, host: HostConfig, worktree: str, job: int | None = None
) -> RoutingWorkspaceExecutor:
    """The parent's registry with task_1 attached to ``worktree`` on ``host`` (a slurm host:
    in the running ``job``)."""
    executor = RoutingWorkspaceExecutor()
    env.registry = ToolRegistry(
        engine=env.engine,
        recorder=env.session.ingestor,
        artifacts=env.session.artifacts,
        redactor=env.redactor,
        workspace=executor,
    )
    register_builtin_tools(env.registry)
    executor.attach("task_1", RemoteTarget(host, worktree, None if job is None else lambda: job))
    return executor


async def test_a_tasks_calls_share_one_session_that_closing_ends(
    env: Env, remote_host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweeps: list[list[str]] = []

    async def sweep(host: HostConfig, markers: list[str], timeout_s: float) -> bool:
        sweeps.append(markers)
        return True

    monkeypatch.setattr("air.remote.session.sweep_remote", sweep)
    worktree = make_worktree(remote_host)
    executor = remote_registry(env, remote_host, worktree)
    read = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert read.status == "ok", read
    assert "there" in str(read.output)
    write = {"path": "src/new.py", "content": "X = 1\n"}
    wrote = await env.registry.call("fs.write", write, env.ctx())
    assert wrote.status == "ok", wrote
    assert _content(Path(worktree, "src", "new.py")) == "X = 1\n"
    assert _content(env.root / "src" / "new.py") is None  # nothing ran on the parent's disk
    again = await env.registry.call("fs.read", {"path": "src/new.py"}, env.ctx())
    assert again.status == "ok", again
    assert executor.sessions.opened == 1  # one connection, one remote executor for all three
    [session] = executor.sessions.idle["task_1"]
    assert session.remote is not None
    assert remote_marked(session.marker)  # kept between calls
    assert "tool.completed" in env.types()  # the parent recorded the calls
    await executor.close("task_1")
    assert remote_marked(session.marker) == []
    assert not _ssh_alive(session)
    # a clean end: the executor ended on its stdin's end and its guard swept there, so the
    # parent neither killed the client nor swept over a fresh connection
    assert session.process is not None
    assert session.process.returncode == EXECUTOR_INPUT_ENDED
    assert sweeps == []


async def cancel_a_sleep(
    env: Env, executor: RoutingWorkspaceExecutor, sleeping: Callable[[bytes], bool]
) -> tuple[ExecutorSession, bytes]:
    """Cancel task_1's ``shell.run`` of a ``sleep`` once ``sleeping(its command line)`` sees it
    run; its session (never reused) and that command line."""
    token = f"{31 + int.from_bytes(os.urandom(2), 'big') / 1e5:.5f}"
    cmdline = f"sleep\0{token}".encode()
    with trio.move_on_after(60) as waited:
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                await env.registry.call("shell.run", {"command": f"sleep {token}"}, env.ctx())

            nursery.start_soon(call)
            await wait_for(lambda: sleeping(cmdline), 30)
            [session] = executor.sessions.busy["task_1"]
            nursery.cancel_scope.cancel()
    assert not waited.cancelled_caught
    assert executor.sessions.idle.get("task_1", []) == []  # never reused after a cancel
    return session, cmdline


async def test_a_cancelled_call_ends_its_session_and_its_command(
    env: Env, remote_host: HostConfig
) -> None:
    worktree = make_worktree(remote_host)
    executor = remote_registry(env, remote_host, worktree)
    session, cmdline = await cancel_a_sleep(env, executor, lambda c: bool(remote_cmdlines(c)))
    assert remote_marked(session.marker) == []
    assert remote_cmdlines(cmdline) == []
    assert not _ssh_alive(session)
    await executor.close("task_1")


PARENT = """
import sys, time, trio
from pathlib import Path
from tests.remote.test_executor_session import remote_registry
from tests.tools.conftest import Env
from air.remote.hosts import parse_hosts

async def main() -> None:
    [host] = parse_hosts(Path(sys.argv[1]).read_text(), sys.argv[1])
    env = Env(Path(sys.argv[2]))
    job = int(sys.argv[4]) if len(sys.argv) > 4 else None  # a slurm host's running job
    executor = remote_registry(env, host, sys.argv[3], job)
    read = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert read.status == "ok", read
    [session] = executor.sessions.idle["task_1"]
    print(session.marker, session.process.pid, flush=True)
    await trio.sleep(600)

trio.run(main)
"""


async def test_the_parents_sigkill_leaves_no_session(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    worktree = make_worktree(remote_host)
    (tmp_path / "env").mkdir()
    (tmp_path / "tmp").mkdir()
    parent = subprocess.Popen(  # noqa: ASYNC220 (read from a thread below)
        [sys.executable, "-c", PARENT, str(CHECKOUT / ".remote" / "hosts.yaml"),
         str(tmp_path / "env"), worktree],
        cwd=CHECKOUT,
        stdout=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        marker, ssh_pid = (await trio.to_thread.run_sync(parent.stdout.readline)).split()
        assert remote_marked(marker.decode())
        # the session's stderr is a file no name leads to: a killed parent leaves no log
        assert os.listdir(tmp_path / "tmp") == []
        assert os.readlink(f"/proc/{ssh_pid.decode()}/fd/2").endswith(" (deleted)")
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    # the ssh client is in a session of its own: it ends because its stdin closed
    await wait_for(lambda: not remote_marked(marker.decode()) and not exists(int(ssh_pid)))
    assert os.listdir(tmp_path / "tmp") == []


def exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


async def test_a_session_that_ended_while_idle_is_not_reused(
    env: Env, remote_host: HostConfig
) -> None:
    worktree = make_worktree(remote_host)
    executor = remote_registry(env, remote_host, worktree)
    first = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert first.status == "ok", first
    [session] = executor.sessions.idle["task_1"]
    for pid in remote_marked(session.marker):  # the host ended it (idle, a reboot, the link)
        os.kill(pid, signal.SIGKILL)
    await wait_for(lambda: not _ssh_alive(session))
    again = await env.registry.call("fs.read", {"path": "src/app.py"}, env.ctx())
    assert again.status == "ok", again
    assert executor.sessions.opened == 2
    await executor.close("task_1")


async def test_the_lease_keeps_a_long_call_and_ends_a_black_holed_one(
    env: Env, remote_host: HostConfig
) -> None:
    host = remote_host.model_copy(update={"lease_ttl_s": 2})
    executor = remote_registry(env, host, make_worktree(host))
    longer = await env.registry.call("shell.run", {"command": "sleep 3.5"}, env.ctx())
    assert longer.status == "ok", longer  # outlived the lease: the parent renewed it
    token = f"{41 + int.from_bytes(os.urandom(2), 'big') / 1e5:.5f}"
    needle = f"sleep\0{token}".encode()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                await env.registry.call("shell.run", {"command": f"sleep {token}"}, env.ctx())

            nursery.start_soon(call)
            await wait_for(lambda: bool(remote_cmdlines(needle)), 30)
            [session] = executor.sessions.busy["task_1"]
            assert session.process is not None
            os.kill(session.process.pid, signal.SIGSTOP)  # the link goes silent, nobody notices
            try:
                await wait_for(lambda: not remote_marked(session.marker), 20)
                assert remote_cmdlines(needle) == []
            finally:
                os.kill(session.process.pid, signal.SIGCONT)
    assert not _ssh_alive(session)
    await executor.close("task_1")
