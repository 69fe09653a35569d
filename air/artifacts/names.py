"""The artifact file-name scheme: ``<timestamp>-<artifact-id>-<slug><extension>`` in the
session's artifact directory.

Owns the name's parts (``artifact_filename``, ``slug``, ``NAME``: the pattern that tells an
artifact's file from any other) and ``artifact_file``: where a recorded artifact is now. The
``artifacts`` table keeps the absolute path each file was written at; a project moved or
renamed since keeps its session directories, so a reader finds the file by its name (which
holds its id) in the session's artifact directory, never outside it. Standard library only:
the report and the doctor read artifact rows as text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["NAME", "artifact_file", "artifact_filename", "slug"]

_SLUG_BAD = re.compile(r"[^a-z0-9._-]+")
NAME = re.compile(r"^(\d{8}T\d{12}Z)-([A-Za-z0-9_]+)-(.+)$")
"""An artifact's file name: its timestamp, its id, its slug and extension."""


def _compact_ts(iso: str) -> str:
    digits = re.sub(r"[^0-9T]", "", iso)
    date, _, time = digits.partition("T")
    return f"{date[:8]}T{(time + '000000000000')[:12]}Z"


def slug(text: str) -> str:
    """``text`` as a filesystem-safe slug (``artifact`` when nothing is left)."""
    found = _SLUG_BAD.sub("-", text.lower()).strip("-.")[:60]
    return found or "artifact"


def artifact_filename(timestamp_iso: str, artifact_id: str, text: str, extension: str) -> str:
    """``<timestamp>-<artifact-id>-<slug><extension>`` with a filesystem-safe slug."""
    return f"{_compact_ts(timestamp_iso)}-{artifact_id}-{slug(text)}{extension}"


def artifact_file(recorded: str, root: Path) -> Path:
    """The file of an artifact recorded at ``recorded``, in ``root`` (its session's artifact
    directory) by its name; a recorded name that is no artifact's stays as it was recorded."""
    name = os.path.basename(recorded)
    return root / name if NAME.match(name) else Path(recorded)
