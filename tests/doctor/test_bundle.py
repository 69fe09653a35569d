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
