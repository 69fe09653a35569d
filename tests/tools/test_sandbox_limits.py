"""Every sandboxed command is bounded (issue 22 item 6), as root and as an unprivileged user.

A real fork bomb, a real memory hog, a file-size hog and a CPU spinner each run under low limits
(64 processes, 256 MiB, 1 MiB per file, 1 s of CPU) through the sandbox shell.run and the cpp
tools spawn; each is ended and named by the limit it went over, and the next command runs: air
goes on. The probe's own 120 s deadline bounds every test if a limit fails to hold. The limits
come from the user's and the project's ``sandbox.yaml``; a project may only lower them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.ids import new_id
from air.tools.limits import PidsCgroup, ResourceLimits, _own_cgroup, load_limits
from air.tools.run import ToolRun
from tests.tools.conftest import Env
from tests.tools.sandbox_probe import Sandboxed

FORK_BOMB = "bomb() { while :; do bomb & done; }; bomb"
"""Every process forks forever; refused forks are retried, so it never ends by itself."""
MEMORY_HOG = (
    "python3 -c 'chunks = []\nfor _ in range(128): chunks.append(bytes([1]) * (16 << 20))\n"
    'print("allocated", len(chunks))\''
)
"""Tries to hold 2 GiB, 16 MiB at a time, every page written (untouched pages cost nothing)."""


def test_a_fork_bomb_is_ended_as_over_its_process_limit(box: Sandboxed) -> None:
    out = box.run(FORK_BOMB, limits={"processes": 64})
    assert out["limit"] == "processes", out
    assert box.run("echo alive")["stdout"] == "alive\n"


def test_a_memory_hog_is_ended_as_over_its_memory_limit(box: Sandboxed) -> None:
    out = box.run(MEMORY_HOG, limits={"memory_mb": 256})
    assert out["limit"] == "memory_mb", out
    assert "allocated" not in str(out["stdout"])
    assert box.run("echo alive")["stdout"] == "alive\n"


def test_a_file_size_hog_is_ended_at_its_file_size_limit(box: Sandboxed) -> None:
    out = box.run("head -c 64M /dev/zero > big", limits={"file_size_mb": 1})
    assert out["limit"] == "file_size_mb", out
    assert (box.workspace / "big").stat().st_size <= 1 << 20
    assert box.run("echo alive")["stdout"] == "alive\n"


def test_a_cpu_spinner_is_ended_at_its_cpu_limit(box: Sandboxed) -> None:
    out = box.run("while :; do :; done", limits={"cpu_seconds": 1})
    assert out["limit"] == "cpu_seconds", out
    assert box.run("echo alive")["stdout"] == "alive\n"


def test_a_command_within_its_limits_is_not_named(box: Sandboxed) -> None:
    out = box.run("seq 1 20 | xargs -P 8 -n 1 true; echo done", limits={"processes": 64})
    assert (out["stdout"], out["limit"]) == ("done\n", None), out


def _shell_runs(env: Env, sandbox_yaml: str) -> Callable[[], ToolRun]:
    """The project's ``sandbox.yaml`` written; a new headless shell.run's ``ToolRun`` a call."""
    shared = env.root / ".air" / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "sandbox.yaml").write_text(sandbox_yaml)
    definition = next(d for d in env.registry.list() if d.name == "shell.run")

    def run() -> ToolRun:
        return ToolRun(new_id("tr"), definition, env.ctx(headless=True), env.registry)

    return run


async def test_shell_run_reports_resource_limit_and_records_it(env: Env) -> None:
    run = _shell_runs(env, "limits:\n  processes: 48\n  cpu_seconds: 1\n")
    with pytest.raises(AirException) as caught:
        await env.registry.workspace.execute("shell.run", {"command": FORK_BOMB}, run())
    assert caught.value.error.kind == "resource_limit"
    assert caught.value.error.metadata == {"limit": "processes", "value": 48}
    assert "processes limit (48 processes and threads)" in caught.value.error.message
    failed = env.payloads("command.failed")[-1]
    assert failed["error"]["kind"] == "resource_limit"
    assert failed["error"]["metadata"]["limit"] == "processes"
    with pytest.raises(AirException) as caught:
        await env.registry.workspace.execute("shell.run", {"command": "while :; do :; done"}, run())
    assert caught.value.error.metadata == {"limit": "cpu_seconds", "value": 1}
    out = await env.registry.workspace.execute("shell.run", {"command": "echo alive"}, run())
    assert out["stdout"] == "alive\n"


async def test_a_runaway_output_is_ended_at_the_file_size_limit(env: Env) -> None:
    """A command's log is a file it writes: one printing 64 MiB (``yes`` for a while) is ended
    as over the file size limit once its output passes it; the log holds the limit's first
    bytes and the next command runs. Found: a runaway output's log grew at pipe speed until
    the command's timeout (up to an hour of it), filling the disk the session's own database
    is on."""
    run = _shell_runs(env, "limits:\n  file_size_mb: 1\n")
    with pytest.raises(AirException) as caught:
        await env.registry.workspace.execute(
            "shell.run", {"command": "yes | head -c 64M", "timeout_s": 3600}, run()
        )
    assert caught.value.error.metadata == {"limit": "file_size_mb", "value": 1}
    assert caught.value.error.message == (
        "the command's stdout (its log) went over its file_size_mb limit "
        "(1 MiB per file written) and was ended"
    )
    failed = env.payloads("command.failed")[-1]
    stored = env.session.artifacts.read(failed["stdout_artifact_id"]).content
    assert len(stored) == 1 << 20
    assert set(stored.split(b"\n")) == {b"y", b""}
    out = await env.registry.workspace.execute(
        "shell.run", {"command": "head -c 900000 /dev/zero | tr '\\0' x; echo"}, run()
    )
    assert (out["exit_code"], len(out["stdout"])) == (0, 20_000)  # under it: a normal run
    done = env.payloads("command.completed")[-1]
    assert len(env.session.artifacts.read(done["stdout_artifact_id"]).content) == 900_001


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_limits_come_from_the_user_then_the_project(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    assert load_limits(str(project), home=str(home)) == ResourceLimits()
    _write(home / ".air" / "sandbox.yaml", "limits: {memory_mb: 20000, processes: 300}\n")
    _write(project / ".air" / "shared" / "sandbox.yaml", "limits: {processes: 100}\n")
    limits = load_limits(str(project), home=str(home))
    assert (limits.memory_mb, limits.processes) == (20000, 100)
    assert limits.cpu_seconds == ResourceLimits().cpu_seconds


def test_a_project_cannot_raise_a_limit(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    _write(project / ".air" / "shared" / "sandbox.yaml", "limits: {memory_mb: 999999}\n")
    with pytest.raises(AirException) as caught:
        load_limits(str(project), home=str(home))
    assert caught.value.error.kind == "untrusted_config"
    assert "memory_mb" in caught.value.error.message
    assert caught.value.error.user_action
    assert "trust" not in caught.value.error.user_action  # trusting it lifts nothing


@pytest.mark.parametrize(
    "text",
    [
        "limits: {processes: 0}\n",
        "limits: {processes: many}\n",
        "limits: {processes: true}\n",
        "limits: {threads: 5}\n",
        "limits: [1]\n",
        "other: 1\n",
        "limits: {processes: [\n",
        "limits: {processes: 4194305}\n",
        "limits: {memory_mb: 4294967297}\n",
        "limits: {file_size_mb: 99999999999999}\n",
        "limits: {cpu_seconds: 99999999999999999999999}\n",
    ],
)
def test_a_malformed_limits_file_is_a_config_error(tmp_path: Path, text: str) -> None:
    _write(tmp_path / "home" / ".air" / "sandbox.yaml", text)
    with pytest.raises(AirException) as caught:
        load_limits(None, home=str(tmp_path / "home"))
    assert caught.value.error.kind == "config_error"
    assert "sandbox.yaml" in caught.value.error.message
    assert caught.value.error.user_action


async def test_each_limit_at_its_most_still_runs_a_command(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found: a user's "unlimited" ``file_size_mb: 99999999999999`` overflowed the shell's
    ``ulimit -f`` and every command ended ``limit out of range`` (exit 125); a huge
    ``memory_mb`` overflowed bwrap's tmpfs ``--size`` (exit 1). Such a file is refused at load
    now (above); at the most it allows, a command runs under what it asked."""
    monkeypatch.setenv("HOME", str(env.home))
    most = "limits:\n  processes: 4194304\n  memory_mb: 4294967296\n"
    most += "  file_size_mb: 4294967296\n  cpu_seconds: 4294967296\n"
    _write(env.home / ".air" / "sandbox.yaml", most)
    run = _shell_runs(env, "")
    command = {"command": "ulimit -f; ulimit -t; echo ran"}
    out = await env.registry.workspace.execute("shell.run", command, run())
    assert out["stderr"] == ""
    assert (out["exit_code"], out["stdout"]) == (0, f"{4294967296 * 1024}\n4294967296\nran\n")
    _write(env.home / ".air" / "sandbox.yaml", "limits:\n  file_size_mb: 4294967297\n")
    with pytest.raises(AirException) as caught:
        await env.registry.workspace.execute("shell.run", command, run())
    assert caught.value.error.kind == "config_error"
    assert caught.value.error.message.endswith(
        "file_size_mb must be at most 4294967296, not 4294967297"
    )


def test_a_command_cgroup_is_removed_and_a_dead_airs_are_swept() -> None:
    """As root (how the suite runs), each command gets its own pids cgroup, gone after it;
    the empty ones an air killed with -9 left behind go when the next one is made."""
    assert os.geteuid() == 0, "run the suite as root: the pids cgroup is root's mechanism"
    made = PidsCgroup.create(10)
    assert made is not None
    parent = os.path.dirname(made.path)
    with open(os.path.join(made.path, "pids.max"), encoding="ascii") as fh:
        assert fh.read().strip() == "10"
    made.close()
    assert not os.path.exists(made.path)
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = os.path.join(parent, f"air-{gone.pid}-3")
    os.mkdir(orphan)
    again = PidsCgroup.create(10)
    assert again is not None
    again.close()
    assert not os.path.exists(orphan)


def test_every_process_of_a_joined_command_counts_in_its_cgroup() -> None:
    """The shell that joins moves itself (through ``tasks`` on cgroup v1: its one thread), so
    it and everything it starts are in the command's cgroup and count against ``pids.max``."""
    made = PidsCgroup.create(50)
    assert made is not None
    version = _own_cgroup("pids")
    assert version is not None
    assert made.join_file == ("tasks" if version[0] == "1" else "cgroup.procs")
    script = "sleep 30 & sleep 30 & echo ready; wait"
    proc = subprocess.Popen(
        made.join_argv(["/bin/sh", "-c", script]), stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children", encoding="ascii") as fh:
            children = {int(p) for p in fh.read().split()}
        assert len(children) == 2
        assert set(made.pids()) == {proc.pid, *children}
        with open(os.path.join(made.path, "pids.current"), encoding="ascii") as fh:
            assert fh.read().strip() == "3"
    finally:
        made.close()  # kills what is in it
        proc.wait(timeout=10)
    assert not os.path.exists(made.path)


def test_tmp_and_home_hold_no_more_than_the_memory_limit(box: Sandboxed) -> None:
    """/tmp and HOME are tmpfs, memory no process's RSS shows: each is bounded by the limit."""
    for where in ("/tmp", "~"):
        out = box.run(
            f"for i in 1 2 3 4; do head -c 16M /dev/zero > {where}/f$i || exit 7; done",
            limits={"memory_mb": 32},
        )
        assert out["exit_code"] == 7, out
        assert "No space left on device" in str(out["stderr"]), out


def test_air_under_lower_hard_limits_runs_commands_within_them(tmp_path: Path) -> None:
    """air run under a lower hard limit than its own (an HPC login node's ``ulimit -t``, a
    batch system's file size limit): every command failed (``ulimit: cpu time: cannot modify
    limit``, exit 125) as air asked for more than it held. Now a command runs within the
    stricter of the two, and the limit air reports is the one that holds."""
    script = f"""
import json, resource, sys, trio
resource.setrlimit(resource.RLIMIT_CPU, (1000, 1000))
resource.setrlimit(resource.RLIMIT_FSIZE, ((2 << 20) + 512, (2 << 20) + 512))
from pathlib import Path
from air.tools.limits import load_limits
from tests.tools.conftest import Env

async def main():
    env = Env(Path({str(tmp_path)!r}))
    env.engine.headless_allow_ask = True
    command = {{"command": "ulimit -S -t; ulimit -H -t; ulimit -f; echo ran"}}
    done = await env.registry.call("shell.run", command, env.ctx(headless=True))
    env.close()
    print(json.dumps([done.output, list(load_limits(None, home={str(tmp_path)!r}))]))

trio.run(main)
"""
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    output, limits = json.loads(done.stdout.splitlines()[-1])
    assert (output["exit_code"], output["stdout"]) == (0, "999\n1000\n2048\nran\n"), output
    assert limits == [1024, 8192, 2, 999]  # processes, memory_mb, file_size_mb, cpu_seconds
