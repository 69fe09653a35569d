"""A Slurm host in hosts.yaml and the srun command line made from it (no Slurm needed): the
options air sets itself cannot be overridden, the time limit follows the task's deadline, and the
step gets air's explicit environment only (issue #27 items 1 and 3; IMPL-SLURM-2)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from air.contracts.error import AirException, ErrorKind
from air.remote.hosts import parse_hosts
from air.remote.srun import SrunLauncher, client_environment, srun_argv, time_limit

SECRET = "sk-ant-canary-5a6b7c8d9e0f"


def _host(extra: str = "") -> str:
    return (
        "hosts:\n  cluster:\n    launcher: slurm\n    host: login1\n"
        "    python: /opt/air/bin/python\n    workdir: /scratch/air\n" + extra
    )


def test_a_slurm_host_reads_partition_time_gres_and_options() -> None:
    [host] = parse_hosts(
        _host(
            "    partition: gpu\n    time_limit: '1-00:30:00'\n    gres: gpu:1\n"
            "    srun_options: [--account=proj7, --qos=low]\n"
        ),
        "hosts.yaml",
    )
    argv = srun_argv(host, "run_x", "agt_1", ["/opt/air/bin/python", "-m", "w"], {"A": "1"})
    assert argv[:5] == ["srun", "-N1", "-n1", "--kill-on-bad-exit=1", "--export=NONE"]
    assert "--job-name=air-agt_1" in argv
    assert "--chdir=/scratch/air" in argv
    assert "--time=1-00:30:00" in argv  # the host's limit when the task has no deadline
    assert "--partition=gpu" in argv
    assert "--gres=gpu:1" in argv
    assert argv.index("--qos=low") < argv.index("/usr/bin/env")


@pytest.mark.parametrize(
    "option",
    ["--export=ALL", "--job-name=x", "--time=5", "--uid=root", "--pty", "-u", "--unbuffered"],
)
def test_options_air_sets_itself_are_refused(option: str) -> None:
    with pytest.raises(AirException) as caught:
        parse_hosts(_host(f"    srun_options: ['{option}']\n"), "hosts.yaml")
    assert caught.value.error.kind == ErrorKind.CONFIG_ERROR
    assert "hosts.cluster.srun_options" in caught.value.error.message
    assert caught.value.error.user_action


@pytest.mark.parametrize("field", ["time_limit: 1h", "partition: 'a b'", "gres: 'gpu 1'"])
def test_bad_slurm_fields_are_refused(field: str) -> None:
    with pytest.raises(AirException) as caught:
        parse_hosts(_host(f"    {field}\n"), "hosts.yaml")
    assert caught.value.error.kind == ErrorKind.CONFIG_ERROR


def test_the_time_limit_follows_the_deadline() -> None:
    assert time_limit(0.2) == "0:01"
    assert time_limit(59.1) == "1:00"
    assert time_limit(3725) == "62:05"
    [host] = parse_hosts(_host("    time_limit: '30'\n"), "hosts.yaml")
    argv = srun_argv(host, "run_x", "agt_1", ["w"], {}, time_s=90)
    assert "--time=1:30" in argv
    assert "--time=30" not in argv


def test_the_step_gets_air_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("SLURM_JOB_ID", "77")  # air itself inside an allocation
    [host] = parse_hosts(_host(), "hosts.yaml")
    argv = srun_argv(host, "run_x", "agt_1", ["w"], {"IGNORE_TERM": "1"})
    assert SECRET not in " ".join(argv)
    env = argv[argv.index("/usr/bin/env") :]
    assert env[1] == "-i"
    names = {a.split("=", 1)[0] for a in env[2 : env.index("/opt/air/bin/python")]}
    assert names == {
        "HOME", "USER", "LOGNAME", "PATH", "LANG", "PYTHONUNBUFFERED", "IGNORE_TERM",
        "AIR_WORKER_RUN",
    }  # fmt: skip
    assert env[env.index("/opt/air/bin/python") :][:6] == [
        "/opt/air/bin/python", "-P", "-m", "air.remote.guard", "run", "--",
    ]  # fmt: skip
    client = client_environment()
    assert "ANTHROPIC_API_KEY" not in client
    assert "SLURM_JOB_ID" not in client


async def test_srun_ending_before_the_guard_is_quoted_even_when_its_stderr_comes_last() -> None:
    """srun refused the step: its stdout ends at once, and why (on stderr) is read to its end
    before the error is made, even when the stderr reader had not been scheduled yet."""
    [host] = parse_hosts(_host("    partition: nosuchpartition\n"), "hosts.yaml")
    out_send, out_receive = trio.testing.memory_stream_one_way_pair()
    err_send, err_receive = trio.testing.memory_stream_one_way_pair()
    handle = SimpleNamespace(job_id=None, queued=False, remote=None)
    spec = SimpleNamespace(agent_id="agt_1", placed=None)

    async def srun() -> None:
        await out_send.aclose()  # the step never started: nothing on stdout
        await trio.sleep(0.2)
        await err_send.send_all(b"srun: error: Unable to allocate resources: Invalid partition\n")
        await err_send.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(srun)
        out, err = await SrunLauncher(host)._allocation(
            handle,  # type: ignore[arg-type]
            out_receive,
            err_receive,
            spec,  # type: ignore[arg-type]
        )
    error = json.loads(out)["payload"]["error"]
    assert "did not start the worker" in error["message"]
    assert "Invalid partition" in error["message"]
    assert b"Invalid partition" in err
