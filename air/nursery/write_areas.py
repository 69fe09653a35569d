"""Write areas and gating cycles: the pure checks the TaskGraph plans with (SDD §7.2, §7.3).

Owns ``write_areas_overlap``, the conservative overlap test of ``TaskScope.write_area`` globs
(``None`` is the whole project, ``[]`` writes nothing; an uncertain pair overlaps), and
``find_cycle``, one cycle of a dependency relation (iterative, so deep chains do not recurse).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

__all__ = ["find_cycle", "write_areas_overlap"]

_GLOB_CHARS = "*?["


def _literal_prefix(pattern: str) -> str:
    cut = len(pattern)
    for ch in _GLOB_CHARS:
        pos = pattern.find(ch)
        if pos != -1:
            cut = min(cut, pos)
    return pattern[:cut]


def _dir_prefix(pattern: str) -> str:
    literal = _literal_prefix(pattern)
    return literal.rsplit("/", 1)[0] if "/" in literal else ""


def _norm(pattern: str) -> str:
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.strip("/") if text not in ("", "/") else ""


def _segment_prefix(a: str, b: str) -> bool:
    """True when path ``a`` is ``b`` or a directory above it (segment-wise)."""
    if a == "" or a == b:
        return True
    return b.startswith(a.rstrip("/") + "/")


def _glob_match(path: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(path, pattern):
        return True
    # ``dir/**`` also matches ``dir`` itself and everything below it.
    if pattern.endswith("/**") and _segment_prefix(pattern[:-3], path):
        return True
    return False


def _pair_overlaps(a: str, b: str) -> bool:
    a, b = _norm(a), _norm(b)
    a_glob = any(ch in a for ch in _GLOB_CHARS)
    b_glob = any(ch in b for ch in _GLOB_CHARS)
    if not a_glob and not b_glob:
        return _segment_prefix(a, b) or _segment_prefix(b, a)
    if not a_glob:
        if _glob_match(a, b):
            return True
        if "." in a.rsplit("/", 1)[-1]:
            return False  # a single file that the glob does not match
        # ``a`` may be a directory: uncertain unless the glob lives elsewhere.
        return _segment_prefix(a, _dir_prefix(b)) or _segment_prefix(_dir_prefix(b), a)
    if not b_glob:
        return _pair_overlaps(b, a)
    # Both globs: overlap is uncertain unless their literal directory prefixes diverge.
    pa, pb = _dir_prefix(a), _dir_prefix(b)
    return _segment_prefix(pa, pb) or _segment_prefix(pb, pa)


def write_areas_overlap(a: Sequence[str] | None, b: Sequence[str] | None) -> bool:
    """Whether two write areas may touch the same file.

    ``None`` is the whole project and overlaps every area except the empty (read-only) one.
    Globs whose literal directory prefixes diverge (``src/a/**`` vs ``src/b/**``) do not
    overlap; any uncertain pair does (an uncertain overlap is serialized, SDD §7.3).

    Args:
        a: the first task's ``TaskScope.write_area`` (or ``[]`` for read-only tasks).
        b: the second task's.

    Returns:
        True when the two tasks must not run concurrently.
    """
    if a is not None and len(a) == 0:
        return False
    if b is not None and len(b) == 0:
        return False
    if a is None or b is None:
        return True
    return any(_pair_overlaps(x, y) for x in a for y in b)


def find_cycle(edges: Iterable[tuple[str, str]]) -> list[str]:
    """Return one cycle (as a list of task ids, first repeated at the end) or ``[]``."""
    adjacency: dict[str, list[str]] = {}
    for task_id, dep in edges:
        adjacency.setdefault(task_id, []).append(dep)
        adjacency.setdefault(dep, [])
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(adjacency, white)
    for root in sorted(adjacency):
        if color[root] != white:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        color[root] = grey
        while stack:
            node, idx = stack[-1]
            nexts = adjacency[node]
            if idx < len(nexts):
                stack[-1] = (node, idx + 1)
                nxt = nexts[idx]
                if color[nxt] == grey:
                    return [*path[path.index(nxt) :], nxt]
                if color[nxt] == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = black
                stack.pop()
                path.pop()
    return []
