"""The architecture declaration's path globs: which paths they match, which files they name.

Owns ``matches`` (``air.path_glob``'s globs; a match covers whatever lies below it) and
``doc_files`` (the files of a documents pattern that really lie inside the project). The files
are found by ``air.tree_walk``, never by ``Path.glob``: its ``**`` recursed a frame a level, and
a tree a task made 1,500 directories deep under the documents ended the architecture review in
``RecursionError``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from air.path_glob import glob_match
from air.tree_walk import walk_files

__all__ = ["doc_files", "matches"]


def matches(path: str, pattern: str) -> bool:
    """Whether the project-relative ``path`` is (or lies below) what ``pattern`` names (``a/**``
    and ``a`` both name the directory ``a`` and its files)."""
    path = path.strip().lstrip("./")
    named = pattern.removesuffix("/**")
    return glob_match(named, path) or glob_match(named + "/**", path)


def doc_files(root: Path, pattern: str) -> list[Path]:
    """The files of a documents pattern that really lie inside the project (no link out of
    it): a file, the ``.md`` files below a directory, or every file a glob matches."""
    target = root / pattern
    if "*" not in pattern and "?" not in pattern:
        found = [target] if target.is_file() else []
        if target.is_dir():
            found = [p for p in map(Path, walk_files(str(target), ".md")) if p.is_file()]
    else:  # walked from the pattern's directory up to its first wildcard
        base = root / re.split(r"[*?]", pattern, maxsplit=1)[0].rpartition("/")[0]
        found = [
            Path(p)
            for p in walk_files(str(base), "")
            if matches(os.path.relpath(p, root), pattern) and os.path.isfile(p)
        ]
    real_root = root.resolve()
    return [p for p in found if p.resolve().is_relative_to(real_root)]
