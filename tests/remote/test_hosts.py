"""hosts.yaml (IMPL-REMOTE-2): the model and its errors, the user's file before the project's,
a project that cannot shadow the user's host, and ``air doctor --host`` refusing an untrusted
project's hosts and an unknown name with exit 2. No ssh here (fast)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.remote.hosts import find_host, load_hosts, parse_hosts
from air.session.project import ProjectStore

GOOD = """hosts:
  build-box:
    launcher: ssh
    host: build.example.org
    user: alice
    port: 2222
    identity: ~/.ssh/id_ed25519
    known_hosts: ~/.air/known_hosts
    python: /opt/air/bin/python
"""


def test_a_host_is_parsed_with_its_defaults_and_paths_expanded() -> None:
    [host] = parse_hosts(GOOD, "hosts.yaml")
    assert host.name == "build-box"
    assert host.destination() == "alice@build.example.org"
    assert host.port == 2222
    assert host.identity == os.path.expanduser("~/.ssh/id_ed25519")
    assert host.workdir == "air-work"
    assert host.keepalive_s == 5


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("hosts:\n  b:\n    host: x\n    port: 0\n", "hosts.b.port"),
        ("hosts:\n  b:\n    host: -oProxyCommand=evil\n", "hosts.b.host"),
        ("hosts:\n  b:\n    host: x\n    launcher: telnet\n", "hosts.b.launcher"),
        ("hosts:\n  b:\n    host: x\n    colour: red\n", "hosts.b.colour"),
        ("hosts:\n  b_c:\n    host: x\n", "hosts.b_c.name"),
        ("hosts:\n  b: [1]\n", "hosts.b"),
        ("hosts: [1]\n", "hosts"),
        ("hosts: {b: {host: x}\n", "file"),
    ],
)
def test_a_bad_host_is_a_config_error_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(AirException) as info:
        parse_hosts(text, "hosts.yaml")
    assert info.value.kind == "config_error"
    assert info.value.error.metadata == {"file": "hosts.yaml", "field": field}
    assert info.value.user_action


def test_a_project_cannot_shadow_the_users_host(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    (project / ".air" / "shared").mkdir(parents=True)
    (home / ".air" / "hosts.yaml").write_text(GOOD)
    (project / ".air" / "shared" / "hosts.yaml").write_text(
        GOOD.replace("build.example.org", "evil.example")
    )
    with pytest.raises(AirException) as info:
        load_hosts(str(project), str(home))
    assert info.value.kind == "config_error"
    assert "already declared" in info.value.error.message
    assert find_host("build-box", None, str(home)).host == "build.example.org"


def _air(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "air", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_doctor_host_refuses_an_untrusted_projects_hosts_and_unknown_names(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    project.mkdir()
    ProjectStore().initialize(str(project))
    (project / ".air" / "shared" / "hosts.yaml").write_text(GOOD)
    untrusted = _air(project, home, "doctor", "--host", "build-box", "--project", str(project))
    assert untrusted.returncode == 2, untrusted.stderr
    assert "untrusted_config" in untrusted.stderr
    assert ".air/shared/hosts.yaml" in untrusted.stderr
    os.remove(project / ".air" / "shared" / "hosts.yaml")
    unknown = _air(project, home, "doctor", "--host", "nowhere", "--project", str(project))
    assert unknown.returncode == 2, unknown.stderr
    assert "not_found: no host 'nowhere'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
