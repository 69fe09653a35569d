"""The user's capability decisions, recorded outside every project: ``~/.air/capabilities.json``.

Owns ``CapabilityDecisions``: which manifests the user approved (keyed by the sha256 of the
manifest file's exact bytes, so a changed manifest needs approval again) and, per project
realpath, which capabilities the user enabled or disabled there (IMPL-CAP-1). A project can
never approve or enable its own capability: nothing in the project is read for a decision. The
file is written whole (temp file + rename) and read leniently: a missing or unreadable file
holds no decision.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["CapabilityDecisions", "Switch", "manifest_digest"]

Switch = Literal["enabled", "disabled"]


def manifest_digest(data: bytes) -> str:
    """The approval key of a manifest: sha256 of its file's exact bytes."""
    return hashlib.sha256(data).hexdigest()


class CapabilityDecisions:
    """The decisions in one user's ``~/.air/capabilities.json``.

    Args:
        home: the user's home directory (default: ``~``).
    """

    FILENAME = "capabilities.json"

    def __init__(self, home: str | None = None) -> None:
        self.path = os.path.join(home or os.path.expanduser("~"), ".air", self.FILENAME)

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {"approved": {}, "switches": {}}
        if not isinstance(data, dict):
            return {"approved": {}, "switches": {}}
        approved = data.get("approved") if isinstance(data.get("approved"), dict) else {}
        switches = data.get("switches") if isinstance(data.get("switches"), dict) else {}
        return {"approved": approved, "switches": switches}

    def _save(self, data: dict[str, Any]) -> None:
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        temp = f"{self.path}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, self.path)

    @staticmethod
    def _key(project_root: str | None, capability_id: str) -> str:
        where = os.path.realpath(project_root) if project_root else "-"
        return f"{where}::{capability_id}"

    def approved(self, digest: str | None) -> bool:
        """Whether the user approved the manifest with this digest."""
        return digest is not None and digest in self._load()["approved"]

    def approve(self, digest: str, capability_id: str, source: str) -> None:
        """Record the user's approval of the manifest with ``digest``."""
        data = self._load()
        data["approved"][digest] = {
            "capability_id": capability_id,
            "source": source,
            "approved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._save(data)

    def switch(self, project_root: str | None, capability_id: str) -> Switch | None:
        """What the user chose for a capability in a project (None: nothing)."""
        value = self._load()["switches"].get(self._key(project_root, capability_id))
        return value if value in ("enabled", "disabled") else None

    def set_switch(self, project_root: str | None, capability_id: str, value: Switch) -> None:
        """Record ``enabled`` / ``disabled`` for a capability in a project."""
        data = self._load()
        data["switches"][self._key(project_root, capability_id)] = value
        self._save(data)
