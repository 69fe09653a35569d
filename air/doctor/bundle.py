"""``air doctor --bundle FILE``: one local, redacted tar.gz for a bug report (never uploaded).

Owns ``write_bundle``: ``report.json`` (the doctor report), ``versions.json`` (air, Python,
SQLite, the platform, each tool the doctor found), ``environment.json`` (variable NAMES only,
never values), ``config/`` (user and project configuration files: models.yaml, config.yaml,
permissions.yaml, project.json) and ``logs/`` (the newest ``air.log`` files and the encrypted
``air.developer.log``, which only the developer key opens). Every text member passes through
the SecretRedactor first; values of secret-looking keys in the configuration and of
secret-looking environment variables are registered with it before anything is written
(IMPL-DOC-4). The archive is written to a temporary file and renamed, mode 0600.
"""

from __future__ import annotations

import io
import json
import os
import platform
import sys
import tarfile
import time
from collections.abc import Mapping
from typing import Protocol

from air.doctor.logs import AIR_LOG, DEVELOPER_LOG, air_home, log_dir
from air.doctor.service import DoctorReport

__all__ = ["MAX_LOG_BYTES", "write_bundle"]

MAX_LOG_BYTES = 2 * 1024 * 1024
"""At most this much of the newest log lines goes into the bundle per log."""

_SECRET_KEY_WORDS = (
    "secret",
    "token",
    "password",
    "passwd",
    "passphrase",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "private_key",
    "credential",
    "auth",
)


class BundleRedactor(Protocol):
    def redact(self, text: str) -> str: ...

    def register(self, *values: str) -> None: ...

    def register_environment(self, environ: Mapping[str, str]) -> int: ...


def _config_files(project_root: str | None, home: str) -> list[tuple[str, str]]:
    """(archive name, path) of every configuration file that exists."""
    out = []
    user = air_home(home)
    for name in ("models.yaml", "config.yaml", "permissions.yaml"):
        out.append((f"config/user/{name}", os.path.join(user, name)))
    if project_root is not None:
        shared = os.path.join(project_root, ".air", "shared")
        for name in ("models.yaml", "config.yaml", "permissions.yaml", "project.json"):
            out.append((f"config/project/{name}", os.path.join(shared, name)))
    return [(n, p) for n, p in out if os.path.isfile(p)]


def _register_config_secrets(text: str, redactor: BundleRedactor) -> None:
    """Register the value of every ``key: value`` / ``key = value`` / ``"key": "value"`` line
    whose key looks secret (a custom field name the patterns might not know)."""
    for raw in text.splitlines():
        line = raw.strip().lstrip("-").strip()
        for sep in (":", "="):
            key, found, value = line.partition(sep)
            if not found:
                continue
            key = key.strip().strip("\"'").lower()
            value = value.strip().rstrip(",").strip().strip("\"'")
            if value and any(w in key for w in _SECRET_KEY_WORDS) and not key.endswith("_ref"):
                redactor.register(value)
            break


def _tail(path: str, limit: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        data = handle.read()
    if size > limit:
        data = data.split(b"\n", 1)[-1]
    return data


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


def write_bundle(
    path: str,
    report: DoctorReport,
    *,
    redactor: BundleRedactor,
    project_root: str | None,
    environ: Mapping[str, str],
    home: str | None = None,
    air_version: str = "",
) -> list[str]:
    """Write the bundle to ``path``; return the archive member names.

    Raises:
        OSError: ``path`` cannot be written (its directory is missing or read-only).
    """
    home = home or os.path.expanduser("~")
    redactor.register_environment(environ)
    configs = []
    for name, cfg in _config_files(project_root, home):
        with open(cfg, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        _register_config_secrets(text, redactor)
        configs.append((name, text))

    def clean(text: str) -> bytes:
        return redactor.redact(text).encode("utf-8")

    members: list[tuple[str, bytes]] = [
        ("report.json", clean(json.dumps(report.to_json(), indent=2, default=str))),
        (
            "versions.json",
            clean(
                json.dumps(
                    {
                        "air": air_version,
                        "python": sys.version,
                        "platform": platform.platform(),
                        "tools": {
                            k: v
                            for k, v in report.facts.items()
                            if isinstance(v, dict) and "version" in v
                        },
                    },
                    indent=2,
                )
            ),
        ),
        ("environment.json", clean(json.dumps({"names": sorted(environ)}, indent=2))),
    ]
    members += [(name, clean(text)) for name, text in configs]
    logs = log_dir(home)
    for base in (AIR_LOG, f"{AIR_LOG}.1"):
        log_path = os.path.join(logs, base)
        if os.path.isfile(log_path):
            text = _tail(log_path, MAX_LOG_BYTES).decode("utf-8", "replace")
            members.append((f"logs/{base}", clean(text)))
    dev = os.path.join(logs, DEVELOPER_LOG)
    if os.path.isfile(dev):
        # sealed records (base64 lines) — redacting them is a no-op; only the key opens them
        members.append((f"logs/{DEVELOPER_LOG}", _tail(dev, MAX_LOG_BYTES)))
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)  # left by a crashed run of this pid; never followed
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name, data in members:
                _add(tar, f"air-doctor/{name}", data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return [f"air-doctor/{name}" for name, _ in members]
