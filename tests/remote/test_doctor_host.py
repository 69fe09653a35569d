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
    for part in ("strict host key", "air 0.1.0, protocol 1", "git version", "bubblewrap"):
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
