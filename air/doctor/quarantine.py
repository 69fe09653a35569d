"""The quarantine of a project: where air moves what it cannot account for, never deleting it.

Owns ``quarantine_root`` (``.air/local/quarantine``) and ``quarantine`` (a file or directory
under ``.air/local`` moved to ``quarantine/<stamp>/``, keeping its path relative to
``.air/local``): the doctor's ``--fix`` and ``air doctor --clean`` put there what they replace.
"""

from __future__ import annotations

import os
import shutil

from air.contracts.error import AirException
from air.contracts.ids import utc_now_iso

__all__ = ["quarantine", "quarantine_root"]


def quarantine_root(project_root: str) -> str:
    """The project's quarantine directory (``.air/local/quarantine``)."""
    return os.path.join(project_root, ".air", "local", "quarantine")


def quarantine(project_root: str, path: str, stamp: str | None = None) -> str:
    """Move ``path`` (a file or directory under ``.air/local``) into the quarantine, keeping
    its path relative to ``.air/local``; returns where it went."""
    local = os.path.join(os.path.realpath(project_root), ".air", "local")
    real = os.path.realpath(path)
    rel = os.path.relpath(real, local)
    if rel.startswith(".."):
        raise AirException.of(
            kind="validation_error",
            message=f"{path} is not inside {local}",
            user_action="Only air's own files are quarantined; move it yourself.",
        )
    stamp = stamp or utc_now_iso().replace(":", "").replace(".", "")
    target = os.path.join(quarantine_root(project_root), stamp, rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.move(real, target)
    return target
