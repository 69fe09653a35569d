"""Must show (SDD §16.2): ``air.log`` holds no secret; ``air.developer.log`` cannot be read
without the private key (and is read with it); both rotate and stay bounded; the CLI writes
them under ``~/.air/logs``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag

from air.doctor.logs import (
    configure_logging,
    decrypt_developer_log,
    developer_key_path,
    generate_developer_keypair,
    log_dir,
)
from air.security.redact import SecretRedactor
from tests.doctor.helpers import air, make_project
from tests.trusted import trust_project

SECRET = "sk-ant-api03-" + "Q" * 40
CANARY = "canary-value-7f3a9c1e"


@pytest.fixture
def air_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("air")
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    for handler in list(logger.handlers):
        if handler not in handlers:
            logger.removeHandler(handler)
            handler.close()
    logger.setLevel(level)


def _keys(home: Path) -> bytes:
    private, public = generate_developer_keypair()
    Path(developer_key_path(str(home))).parent.mkdir(parents=True, exist_ok=True)
    Path(developer_key_path(str(home))).write_bytes(public)
    return private


def test_user_log_is_redacted_and_developer_log_needs_the_key(
    tmp_path: Path, air_logger: logging.Logger
) -> None:
    private = _keys(tmp_path)
    redactor = SecretRedactor()
    redactor.register(CANARY)
    attached = configure_logging(redactor, home=str(tmp_path))
    assert len(attached) == 2
    log = logging.getLogger("air.doctor.test")
    log.warning("provider call failed with key %s and %s", SECRET, CANARY)
    log.debug("detail only the developers see: step 42")
    for handler in air_logger.handlers:
        handler.flush()

    user = (Path(log_dir(str(tmp_path))) / "air.log").read_bytes()
    assert b"provider call failed" in user
    assert SECRET.encode() not in user
    assert CANARY.encode() not in user
    assert b"[REDACTED]" in user
    assert b"step 42" not in user  # DEBUG stays out of the user log

    dev_path = Path(log_dir(str(tmp_path))) / "air.developer.log"
    sealed = dev_path.read_bytes()
    for plain in (b"provider call failed", b"step 42", SECRET.encode(), CANARY.encode()):
        assert plain not in sealed
    assert dev_path.stat().st_mode & 0o077 == 0

    lines = list(decrypt_developer_log(str(dev_path), private))
    assert any("step 42" in line for line in lines)
    assert any("provider call failed" in line and "[REDACTED]" in line for line in lines)
    assert not any(SECRET in line or CANARY in line for line in lines)

    other, _ = generate_developer_keypair()
    with pytest.raises(InvalidTag):
        list(decrypt_developer_log(str(dev_path), other))


def test_no_key_means_no_developer_log(tmp_path: Path, air_logger: logging.Logger) -> None:
    attached = configure_logging(SecretRedactor(), home=str(tmp_path))
    logging.getLogger("air.x").warning("hello")
    assert [Path(p).name for p in attached] == ["air.log"]
    assert not (Path(log_dir(str(tmp_path))) / "air.developer.log").exists()


def test_both_logs_rotate_and_stay_bounded(tmp_path: Path, air_logger: logging.Logger) -> None:
    _keys(tmp_path)
    configure_logging(SecretRedactor(), home=str(tmp_path), max_bytes=4000, backup_count=2)
    log = logging.getLogger("air.rotation")
    for i in range(300):
        log.warning("record %04d %s", i, "x" * 60)
    for handler in air_logger.handlers:
        handler.flush()
    root = Path(log_dir(str(tmp_path)))
    for base in ("air.log", "air.developer.log"):
        assert (root / f"{base}.1").exists()
        assert (root / f"{base}.2").exists()
        assert not (root / f"{base}.3").exists()
        for suffix in ("", ".1", ".2"):
            assert (root / f"{base}{suffix}").stat().st_size <= 4000
    assert "record 0299" in (root / "air.log").read_text()


def test_the_cli_writes_air_log_without_secrets(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    models = project / ".air" / "shared" / "models.yaml"
    models.write_text("version: 1\nproviders: {p: {kind: anthropic, auth_ref: AIR_T_KEY}}\n")
    trust_project(project, home)
    done = air(project, home, "doctor")
    assert done.returncode == 1
    log = (home / ".air" / "logs" / "air.log").read_text()
    assert "AIR_T_KEY (auth_ref) is not set" in log
    assert (home / ".air" / "logs").stat().st_mode & 0o077 == 0
