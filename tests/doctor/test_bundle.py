"""Must show: a bundle built with a canary secret planted in the environment, the
configuration and a log holds 0 occurrences of it (every extracted byte is scanned)."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.doctor.helpers import air, make_project

CANARY = "zq9-canary-5e1b7c0d4a"
PROVIDER_KEY = "sk-ant-api03-" + "C" * 44


def test_bundle_holds_no_planted_secret(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    user_air = home / ".air"
    (user_air / "logs").mkdir(parents=True, exist_ok=True)
    # configuration: a custom secret field, and the canary in the project config
    (user_air / "config.yaml").write_text(f"theme: dark\nwebhook_secret: {CANARY}\n")
    (project / ".air" / "shared" / "config.yaml").write_text(
        f'upload:\n  "api_key": "{CANARY}"\n  endpoint: https://example.invalid\n'
    )
    # a log written by an older air, before redaction
    (user_air / "logs" / "air.log").write_text(
        f"2026-01-01 WARNING air: request with {CANARY} failed\n"
        f"2026-01-01 WARNING air: header x-api-key: {PROVIDER_KEY}\n"
    )
    bundle = tmp_path / "out" / "bundle.tar.gz"
    bundle.parent.mkdir()
    env_extra = {"AIR_TEST_SERVICE_TOKEN": CANARY, "ANTHROPIC_API_KEY": PROVIDER_KEY}
    done = _air_env(project, home, env_extra, "doctor", "--bundle", str(bundle))
    assert done.returncode in (0, 1), done.stderr
    assert bundle.stat().st_mode & 0o077 == 0

    with tarfile.open(bundle, "r:gz") as tar:
        members = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                members[member.name] = handle.read()
    names = set(members)
    for expected in (
        "air-doctor/report.json",
        "air-doctor/versions.json",
        "air-doctor/environment.json",
        "air-doctor/config/user/config.yaml",
        "air-doctor/config/project/config.yaml",
        "air-doctor/logs/air.log",
    ):
        assert expected in names, names
    raw = bundle.read_bytes()
    everything = b"".join(members.values()) + raw
    for secret in (CANARY, PROVIDER_KEY):
        for form in (secret.encode(), base64.b64encode(secret.encode())):
            assert everything.count(form) == 0, (secret, form)
    # the planted places are in the bundle, redacted (the scan is not vacuous)
    assert b"[REDACTED]" in members["air-doctor/logs/air.log"]
    assert b"request with" in members["air-doctor/logs/air.log"]
    assert b"webhook_secret: [REDACTED]" in members["air-doctor/config/user/config.yaml"]
    assert b"AIR_TEST_SERVICE_TOKEN" in members["air-doctor/environment.json"]
    assert b"theme: dark" in members["air-doctor/config/user/config.yaml"]


def test_bundle_to_a_missing_directory_is_bad_input(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    done = air(project, home, "doctor", "--bundle", str(tmp_path / "nope" / "b.tar.gz"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    # said as what was asked, before any check runs (not as a temporary file's os_error)
    assert done.stderr.startswith(f"air: not_found: --bundle {tmp_path}/nope/b.tar.gz: no dir")
    assert done.stdout == ""
    assert "what to do" in done.stderr


def _air_env(
    project: Path, home: Path, extra: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    env.update(extra, HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "air.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_extracted_archive_is_plain_tar_gz(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    bundle = tmp_path / "b.tgz"
    done = air(project, home, "doctor", "--bundle", str(bundle), "--json")
    assert done.returncode == 0, done.stdout
    with tarfile.open(fileobj=io.BytesIO(bundle.read_bytes()), mode="r:gz") as tar:
        assert all(m.name.startswith("air-doctor/") for m in tar.getmembers())


PRIVATE = "zq9-private-notes-0b7e4c1a: nothing a secret pattern knows"


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as tar:
        return {
            m.name: handle.read()
            for m in tar.getmembers()
            if (handle := tar.extractfile(m)) is not None
        }


def test_a_cloned_projects_links_carry_no_file_into_the_bundle(tmp_path: Path) -> None:
    """Found: a repository shipping ``.air/shared/config.yaml -> <a file of the user's>``
    (``~/.netrc``, notes, ``/etc/passwd``) put that file into the bundle a person attaches to
    a bug report; the redactor knows secrets by their shape, not private text. A project's
    files are read where they are now, never through a link, and what is left out is named."""
    project, home = make_project(tmp_path)
    private = tmp_path / "private.txt"
    private.write_text(PRIVATE + "\n")
    shared = project / ".air" / "shared"
    (shared / "config.yaml").symlink_to(private)
    (shared / "permissions.yaml").unlink()  # air init's
    (shared / "permissions.yaml").symlink_to("/etc/passwd")
    (shared / "models.yaml").write_text("default: none\n")  # a regular file is still there
    (home / ".air" / "config.yaml").symlink_to(tmp_path / "dotfiles.yaml")  # the user's own
    (tmp_path / "dotfiles.yaml").write_text("theme: linked-by-the-user\n")
    bundle = tmp_path / "b.tgz"
    done = air(project, home, "doctor", "--bundle", str(bundle))
    assert done.returncode in (0, 1), done.stderr
    members = _members(bundle)
    everything = b"".join(members.values())
    assert PRIVATE.encode() not in everything
    assert b"root:x:0:0" not in everything
    assert "air-doctor/config/project/config.yaml" not in members
    left = members["air-doctor/config/left-out.txt"].decode()
    assert "project/config.yaml: a symbolic link" in left
    assert "project/permissions.yaml: a symbolic link" in left
    assert members["air-doctor/config/project/models.yaml"] == b"default: none\n"
    assert b"linked-by-the-user" in members["air-doctor/config/user/config.yaml"]


def test_odd_configuration_files_are_left_out_and_named(tmp_path: Path) -> None:
    """A directory where a file should be, a file past ``MAX_CONFIG_BYTES`` (air's YAML loader
    refuses it unread) and a project's link that stays inside it (still a link: left out)."""
    from air.doctor.bundle import MAX_CONFIG_BYTES

    project, home = make_project(tmp_path)
    (project / "notes.yaml").write_text(PRIVATE + "\n")
    (project / ".air" / "shared" / "config.yaml").symlink_to("../../notes.yaml")
    (home / ".air" / "models.yaml").mkdir()
    (home / ".air" / "config.yaml").write_text("x" * (MAX_CONFIG_BYTES + 1))
    bundle = tmp_path / "b.tgz"
    done = air(project, home, "doctor", "--bundle", str(bundle))
    assert "Traceback" not in done.stderr, done.stderr
    members = _members(bundle)
    assert PRIVATE.encode() not in b"".join(members.values())
    left = members["air-doctor/config/left-out.txt"].decode()
    assert "project/config.yaml: a symbolic link" in left
    assert "user/models.yaml: not a regular file" in left
    assert f"user/config.yaml: larger than {MAX_CONFIG_BYTES} bytes" in left
    assert "air-doctor/config/user/config.yaml" not in members
