"""Errors cross the runtime's edge once (issue 23 item 4): ``open_runtime`` turns the exception
groups its nurseries raise into one error (``one_error``), so no front end unwraps a group; and
``air compact`` opens its session through ``open_runtime`` like the others, so it claims the
session and a session another live air process is running is refused."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException, ErrorKind, machine_failure
from air.contracts.project import OpenSessionOptions
from air.nursery.runtime import RuntimeConfig, RuntimeServices, one_error, open_runtime
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.supervision.runs import runs_dir
from tests.forked_air import air_cli
from tests.trusted import trust_project


def _air_error(kind: str, message: str, action: str = "fix it") -> AirException:
    return AirException.of(kind=kind, message=message, user_action=action)


def test_one_air_exception_in_nested_groups_is_itself() -> None:
    error = _air_error("validation_error", "bad input")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [error])])
    assert one_error(group) is error


def test_several_air_exceptions_become_one_system_error_listing_them() -> None:
    first = _air_error("validation_error", "bad input", "fix the input")
    second = _air_error("not_found", "no such file", "pass a file")
    made = one_error(ExceptionGroup("two", [first, ExceptionGroup("n", [second])]))
    assert isinstance(made, AirException)
    assert made.kind == ErrorKind.SYSTEM_ERROR
    assert "validation_error: bad input" in made.error.message
    assert "not_found: no such file" in made.error.message
    assert made.user_action == "fix the input / pass a file"


def test_bugs_and_cancellations_propagate_as_themselves() -> None:
    bug = KeyError("a bug")
    assert one_error(ExceptionGroup("g", [bug])) is bug
    mixed = ExceptionGroup("g", [KeyError("bug"), _air_error("validation_error", "bad")])
    assert one_error(mixed) is mixed  # the bug's traceback shows, not a user message
    interrupted = BaseExceptionGroup("g", [KeyboardInterrupt(), _air_error("not_found", "x")])
    assert one_error(interrupted) is interrupted


def test_a_full_disk_or_no_file_left_is_the_users_however_many_tasks_met_it() -> None:
    """Two tasks writing when the disk filled: two raw OSErrors in a group were a traceback."""
    full = OSError(errno.ENOSPC, "No space left on device")
    quota = OSError(errno.EDQUOT, "Disk quota exceeded", "/p/.air/local/x.json")
    made = one_error(ExceptionGroup("wave", [full, ExceptionGroup("n", [quota])]))
    assert isinstance(made, AirException)
    assert "no space is left on the device" in made.error.message
    assert "could not write /p/.air/local/x.json: the disk quota is used up" in made.error.message
    single = one_error(ExceptionGroup("g", [OSError(errno.EROFS, "Read-only file system")]))
    assert isinstance(single, AirException)
    assert single.kind == ErrorKind.STORAGE_ERROR
    assert "air resume" in (single.user_action or "")
    sqlite_full = sqlite3.OperationalError("database or disk is full")
    sqlite_full.sqlite_errorcode = sqlite3.SQLITE_FULL
    assert machine_failure(sqlite_full) is not None
    assert machine_failure(OSError(errno.ENOENT, "No such file")) is None  # a path's problem
    files = machine_failure(OSError(errno.EMFILE, "Too many open files"))
    assert files is not None
    assert files.kind == ErrorKind.ENVIRONMENT_ERROR
    assert "`ulimit -n`" in files.error.message
    assert "--max-workers" in (files.user_action or "")
    memory = machine_failure(OSError(errno.ENOMEM, "Cannot allocate memory"))
    assert memory is not None
    assert memory.error.message == "the machine is out of memory"
    assert (memory.user_action or "").startswith("Free memory")
    bug = OSError(errno.EBADF, "Bad file descriptor")
    assert one_error(ExceptionGroup("g", [bug])) is bug  # a bug stays a bug


def _config(project: object, session_id: str | None = None) -> RuntimeConfig:
    return RuntimeConfig(
        project=project,  # type: ignore[arg-type]
        session=OpenSessionOptions(session_id=session_id, mode="interactive"),
        new_session=session_id is None,
        services=RuntimeServices,
        interactive=True,
    )


async def test_an_error_in_the_runtime_s_nursery_leaves_open_runtime_as_itself(
    tmp_path: Path,
) -> None:
    project = ProjectStore().initialize(tmp_path)
    refused = _air_error("validation_error", "a client service refused")

    async def service() -> None:
        raise refused

    async def with_a_service() -> None:
        async with open_runtime(_config(project)) as runtime:
            runtime.nursery.start_soon(service)
            await trio.sleep_forever()

    async def refusing_body() -> None:
        async with open_runtime(_config(project)):
            raise refused  # the client's own body: under the root nursery too

    with pytest.raises(AirException) as caught:
        await with_a_service()
    assert caught.value is refused
    with pytest.raises(AirException) as body:
        await refusing_body()
    assert body.value is refused


_HOLDER = """
import sys, time
from air.supervision.runs import claim_session
claim_session(sys.argv[1], sys.argv[2])
print("claimed", flush=True)
time.sleep(60)
"""


def _compact(root: Path, home: Path, session_id: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AIR_"))}
    env = {**keep, "HOME": str(home), "ANTHROPIC_API_KEY": "sk-test-not-used"}
    return air_cli(["compact", "--session", session_id], cwd=root, env=env)


def test_compact_refuses_a_session_another_live_air_process_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(root)
    trust_project(root, home)

    session = SessionManager().open_session(project, OpenSessionOptions(mode="interactive"))
    session_id = session.session_id
    session.close()  # recorded, and claimed by no process (this one must not hold it)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, runs_dir(str(root)), session_id],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "claimed\n"
        refused = _compact(root, home, session_id)
        assert refused.returncode == 2, refused.stderr
        assert (
            f"air: validation_error: session {session_id} is running in another air process "
            f"(pid {holder.pid})" in refused.stderr
        )
        assert "Traceback" not in refused.stderr
    finally:
        holder.kill()
        holder.wait()
    # its owner gone, the same session compacts (here: nothing old enough yet)
    done = _compact(root, home, session_id)
    assert done.returncode == 0, done.stderr
    assert f"session {session_id}: nothing to compact" in done.stdout
