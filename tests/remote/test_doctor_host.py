"""``air doctor --host NAME`` against this machine's sshd (tests/remote/conftest.py): a ready
host passes every aspect (connection with a pinned host key, air's version, git, a bwrap
sandbox started as the remote user); an unknown host key is one blocking problem with its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.remote.hosts import HostConfig
from tests.remote.conftest import remote_uid

pytestmark = pytest.mark.slow


def _doctor(home: Path, host: HostConfig, **override: str) -> subprocess.CompletedProcess[str]:
    fields = host.model_dump(exclude={"name", "source", "srun_options"}, exclude_none=True)
    fields.update(override)
    (home / ".air").mkdir(parents=True, exist_ok=True)
    (home / ".air" / "hosts.yaml").write_text(json.dumps({"hosts": {"box": fields}}))
    return subprocess.run(
        [sys.executable, "-m", "air", "doctor", "--host", "box", "--json"],
        cwd=home,
        env={"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_doctor_host_passes_a_ready_host(tmp_path: Path, remote_host: HostConfig) -> None:
    done = _doctor(tmp_path, remote_host)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    [check] = [c for c in report["checks"] if c["check"] == "host.box"]
    assert check["result"] == "ok"
    for part in ("strict host key", "air 0.1.0, protocol 1", "git version", "bubblewrap", "slirp"):
        assert part in check["found"], check


def test_doctor_host_names_an_unknown_host_key_and_its_fix(
    tmp_path: Path, remote_host: HostConfig
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    done = _doctor(tmp_path, remote_host, known_hosts=str(empty))
    assert done.returncode == 1, done.stdout + done.stderr
    [problem] = json.loads(done.stdout)["issues"]
    assert problem["check"] == "host.box.connection"
    assert problem["severity"] == "blocking"
    assert "host key" in problem["message"]
    assert "known_hosts" in problem["user_action"]


FORGED_PROBE = {
    "list": '{"air": "0.1.0"}\n[1]',  # the last line is read: a list
    "odd-versions": json.dumps(
        {
            "air": "0.1.0",
            "protocol": 1,
            "git": {"path": "/usr/bin/git", "version": [1, None]},
            "bwrap": {"path": "/usr/bin/bwrap", "version": "one string", "sandbox": True},
            "slirp4netns": {"path": "/usr/bin/slirp4netns"},
            "tun": True,
        }
    ),
    "no-network": json.dumps(
        {
            "air": "0.1.0",
            "protocol": 1,
            "git": {"path": "/usr/bin/git"},
            "bwrap": {"path": "/usr/bin/bwrap", "sandbox": True},
            "slirp4netns": {"path": "/usr/bin/slirp4netns"},
            "tun": False,
        }
    ),
}


@pytest.mark.parametrize("forged", sorted(FORGED_PROBE))
def test_doctor_host_reads_a_probe_answer_it_did_not_write(
    tmp_path: Path, remote_host: HostConfig, forged: str
) -> None:
    """The host answers the probe (the host chose the answer): before, ``[1]`` ended ``air
    doctor --host`` with an AttributeError, a version list of numbers with a TypeError."""
    where = Path(remote_host.workdir, f"probe-{os.urandom(4).hex()}")
    where.mkdir()
    wrapper = where / "python"
    answer = FORGED_PROBE[forged].replace("'", "'\\''")
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "-P -c" ]; then echo \'{answer}\'; exit 0; fi\n'
        f'exec {remote_host.python} "$@"\n'
    )
    wrapper.chmod(0o755)
    for path in (where, wrapper):
        os.chown(path, remote_uid(), remote_uid())
    try:
        done = _doctor(tmp_path, remote_host, python=str(wrapper))
    finally:
        wrapper.unlink()
        where.rmdir()
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    if forged == "list":
        assert done.returncode == 1, done.stdout + done.stderr
        [problem] = report["issues"]
        assert problem["check"] == "host.box.python"
    elif forged == "no-network":  # only a command granted the network would be refused
        assert done.returncode == 1, done.stdout + done.stderr
        [problem] = report["issues"]
        assert problem["check"] == "host.box.network"
        assert problem["severity"] == "warning"
        assert "/dev/net/tun" in problem["user_action"]
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        [check] = [c for c in report["checks"] if c["check"] == "host.box"]
        assert "git: 1 None (/usr/bin/git)" in check["found"], check
        assert "bwrap: one string (/usr/bin/bwrap)" in check["found"], check
