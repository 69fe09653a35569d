"""``air doctor --bundle FILE``: one local, redacted tar.gz for a bug report (never uploaded).

Owns ``write_bundle``: ``report.json`` (the doctor report), ``versions.json`` (air, Python,
SQLite, the platform, each tool the doctor found), ``environment.json`` (variable NAMES only,
never values), ``config/`` (user and project configuration files: models.yaml, config.yaml,
permissions.yaml, project.json; a project's file is read only where it is, never through a
symbolic link, which a cloned repository could point at any file the user can read, and
none over ``MAX_CONFIG_BYTES``: what is left out is named in ``config/left-out.txt``) and
``logs/`` (the newest ``air.log`` files and the encrypted
``air.developer.log``, which only the developer key opens). Every text member passes through
the SecretRedactor first; values of secret-looking keys in the configuration and of
secret-looking environment variables are registered with it before anything is written
(IMPL-DOC-4). The archive is written whole, mode 0600, through no link (``air.whole_file``).
"""

from __future__ import annotations

import errno
import io
import json
import os
import platform
import stat
import sys
import tarfile
import time
from collections.abc import Mapping
from typing import Protocol

from air.doctor.logs import AIR_LOG, DEVELOPER_LOG, air_home, log_dir
from air.doctor.service import DoctorReport
from air.whole_file import whole_file

__all__ = ["MAX_CONFIG_BYTES", "MAX_LOG_BYTES", "write_bundle"]

MAX_LOG_BYTES = 2 * 1024 * 1024
"""At most this much of the newest log lines goes into the bundle per log."""
MAX_CONFIG_BYTES = 1 << 20
"""A configuration file larger than this is left out (air's YAML loader refuses it unread)."""

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


def _config_files(project_root: str | None, home: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(archive name, text) of every configuration file there is, and a line for each one
    left out."""
    found: list[tuple[str, str]] = []
    left_out: list[str] = []
    user = air_home(home)
    names = ("models.yaml", "config.yaml", "permissions.yaml")
    places = [(f"user/{name}", user, [name]) for name in names]
    if project_root is not None:
        for name in (*names, "project.json"):
            places.append((f"project/{name}", project_root, [".air", "shared", name]))
    for label, top, parts in places:
        # the user's own files are theirs to link (a dotfiles manager); a project's are not
        data, why = _read_config(top, parts, follow=label.startswith("user/"))
        if why is not None:
            left_out.append(f"{label}: {why}")
        elif data is not None:
            found.append((f"config/{label}", data.decode("utf-8", "replace")))
    return found, left_out


def _read_config(top: str, parts: list[str], *, follow: bool) -> tuple[bytes | None, str | None]:
    """The bytes of ``top/parts...`` (None: there is none) or why they are left out. Unless
    ``follow``, every name below ``top`` is opened without following a link (a cloned
    repository's ``.air/shared/config.yaml -> ~/.netrc`` would carry that file into a bundle
    meant for a bug report)."""
    nofollow = 0 if follow else os.O_NOFOLLOW
    link = "a symbolic link (air never follows a project's links into a bundle)"
    opened: list[int] = []
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        opened.append(fd)
        for part in parts[:-1]:
            fd = os.open(part, os.O_PATH | os.O_CLOEXEC | nofollow, dir_fd=fd)
            opened.append(fd)
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                return None, link
            if not stat.S_ISDIR(mode):
                return None, None
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | nofollow
        fd = os.open(parts[-1], flags, dir_fd=fd)
        opened.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > MAX_CONFIG_BYTES:
            return None, f"larger than {MAX_CONFIG_BYTES} bytes"
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_CONFIG_BYTES), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, link if exc.errno == errno.ELOOP and not follow else exc.strerror
    finally:
        for fd in opened:
            os.close(fd)


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
    configs, left_out = _config_files(project_root, home)
    for _, text in configs:
        _register_config_secrets(text, redactor)

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
    if left_out:
        members.append(("config/left-out.txt", clean("\n".join(left_out) + "\n")))
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
    with whole_file(path, 0o600) as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in members:
            _add(tar, f"air-doctor/{name}", data)
    return [f"air-doctor/{name}" for name, _ in members]
