"""Write areas and gating cycles: the pure checks the TaskGraph plans with (SDD §7.2, §7.3),
and the one a task's merge passes (IMPL-MERGE-1).

Owns ``write_areas_overlap``, the conservative overlap test of ``TaskScope.write_area`` globs
(``None`` is the whole project, ``[]`` writes nothing; an uncertain pair overlaps),
``narrows_project`` (a writer's scope less than the whole project: it runs where a merge
checks it), ``find_cycle``, one cycle of a dependency relation (iterative, so deep chains do
not recurse), and ``merge_guard``: every path a task's workspace changed must lie in its write
area and outside its denied paths (the PermissionEngine's own rule, ``in_write_area_entry``),
and air's state, git's files and the files air reads as instructions are merged only when the
scope names them.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Callable, Iterable, Sequence

from air.contracts.task import TaskScope
from air.security.paths import (
    PathClassifier,
    in_write_area_entry,
    names_protected,
    protected_part,
)
from air.workspace.changes import GITLINK, MergeGuard, PathChange, WriteAreaViolation

__all__ = [
    "denied_in",
    "find_cycle",
    "merge_guard",
    "narrows_project",
    "write_areas_overlap",
]

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


def _norm(pattern: str, root: str | None = None) -> str:
    """An entry as the PermissionEngine takes it (``..``, ``.`` and doubled slashes folded:
    ``src/../lib`` is ``lib``); a relative one without its leading ``./`` (``""``: the whole
    project); an absolute one (``/``, ``~``) still absolute, but relative when it names a path
    inside ``root``, the project."""
    text = pattern.strip().replace("\\", "/")
    if text.startswith("~"):
        text = os.path.expanduser(text)
        if text.startswith("~"):
            return text
    if text.startswith("/"):
        text = posixpath.normpath(text)
        inside = posixpath.relpath(text, root) if root else ".."
        if inside == ".." or inside.startswith("../"):
            return text
        text = inside
    text = posixpath.normpath(text) if text else "."
    return "" if text == "." else text


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


def _glob_tokens(pattern: str) -> list[str]:
    """``pattern`` as ``fnmatch`` reads it: one token per ``*``, ``?``, ``[...]`` set or literal
    character (a ``[`` without its ``]`` is a literal)."""
    tokens: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "[":
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            end = pattern.find("]", j)
            if end >= 0:
                tokens.append(pattern[i : end + 1])
                i = end + 1
                continue
        tokens.append(ch)
        i += 1
    return tokens


def _reaches_below(pattern: str, literal: str) -> bool:
    """Whether glob ``pattern`` matches some path below ``literal`` with every wildcard kept
    within one path segment (a ``*`` standing for ``v1.2`` in ``lib/*/x.c``; ``**`` is two such
    stars). Whether a wildcard crossing a ``/`` (``fnmatch``'s ``src/*.h`` also matches
    ``src/main.c/x.h``) reaches below a dotted name is not asked: such a name is taken for a
    file, with nothing below it."""
    tokens = _glob_tokens(pattern)

    def closure(states: set[int]) -> set[int]:
        todo, seen = list(states), set(states)
        while todo:
            i = todo.pop()
            if i < len(tokens) and tokens[i] == "*" and i + 1 not in seen:
                seen.add(i + 1)
                todo.append(i + 1)
        return seen

    states = closure({0})
    for ch in literal + "/":
        moved: set[int] = set()
        for i in states:
            if i >= len(tokens):
                continue
            token = tokens[i]
            if token == "*":
                if ch != "/":
                    moved.add(i)
            elif token == "?" or len(token) > 1:
                if ch != "/" and fnmatch.fnmatchcase(ch, token):
                    moved.add(i + 1)
            elif token == ch:
                moved.add(i + 1)
        states = closure(moved)
        if not states:
            return False
    return any(i < len(tokens) for i in states)


def _pair_overlaps(a: str, b: str, root: str | None = None) -> bool:
    a, b = _norm(a, root), _norm(b, root)
    if a.startswith(("/", "~")) != b.startswith(("/", "~")):
        return True  # a path of the project by its absolute name, or one outside it: uncertain
    a_glob = any(ch in a for ch in _GLOB_CHARS)
    b_glob = any(ch in b for ch in _GLOB_CHARS)
    if not a_glob and not b_glob:
        return _segment_prefix(a, b) or _segment_prefix(b, a)
    if not a_glob:
        if _glob_match(a, b):
            return True
        if "." in a.rsplit("/", 1)[-1]:
            # most likely a file, but a directory may have a dot too (``.github``,
            # ``conf.d``, ``v1.2``): the glob overlaps when its own segments reach below it
            return _reaches_below(b, a)
        # ``a`` may be a directory: uncertain unless the glob lives elsewhere.
        return _segment_prefix(a, _dir_prefix(b)) or _segment_prefix(_dir_prefix(b), a)
    if not b_glob:
        return _pair_overlaps(b, a)  # both normalised already
    # Both globs: overlap is uncertain unless their literal directory prefixes diverge.
    pa, pb = _dir_prefix(a), _dir_prefix(b)
    return _segment_prefix(pa, pb) or _segment_prefix(pb, pa)


def narrows_project(scope: TaskScope) -> bool:
    """Whether a writer's scope is less than the whole project: a write area (or
    ``allowed_paths``) without an entry naming the whole of it, or ``denied_paths``."""
    if scope.denied_paths:
        return True
    area = scope.write_area if scope.write_area is not None else scope.allowed_paths
    return area is not None and not any(_norm(entry) == "" for entry in area)


def write_areas_overlap(
    a: Sequence[str] | None, b: Sequence[str] | None, *, root: str | None = None
) -> bool:
    """Whether two write areas may touch the same file.

    ``None`` is the whole project and overlaps every area except the empty (read-only) one.
    Globs whose literal directory prefixes diverge (``src/a/**`` vs ``src/b/**``) do not
    overlap; any uncertain pair does (an uncertain overlap is serialized, SDD §7.3).

    Args:
        a: the first task's ``TaskScope.write_area`` (or ``[]`` for read-only tasks).
        b: the second task's.
        root: the project directory: an absolute entry inside it is taken for the relative
            one (without it, an absolute entry against a relative one is uncertain).

    Returns:
        True when the two tasks must not run concurrently.
    """
    if a is not None and len(a) == 0:
        return False
    if b is not None and len(b) == 0:
        return False
    if a is None or b is None:
        return True
    return any(_pair_overlaps(x, y, root) for x in a for y in b)


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


def merge_guard(scope: TaskScope, project_root: str) -> MergeGuard:
    """The check a task's merge passes, from its scope: the write area is ``write_area``, or
    ``allowed_paths`` when that is None (as the PermissionEngine takes it; both None: the whole
    project), less ``denied_paths``.

    A changed path (either side of a rename, a deletion, a mode or type change alike) must
    lie in an area entry and in no denied one (each expanded against the project root as the
    PermissionEngine expands it, compared lexically: the path is git's, and nothing in the
    workspace is followed): what a command wrote that the PermissionEngine did not see (a
    program writing files itself) is judged here. A protected path (``protected_part``) needs
    an entry whose literal components reach the protected one: ``AGENTS.md`` or
    ``.air/shared/rules`` name it, ``.``, ``**`` or ``docs`` do not. A nested repository
    (gitlink) is never merged.
    """
    root = os.path.realpath(project_root)
    classifier = PathClassifier()
    area = scope.write_area if scope.write_area is not None else scope.allowed_paths
    entries = _entries([root] if area is None else area, root, classifier)
    denied = denied_in(scope, root)

    def judge(changes: Sequence[PathChange]) -> list[WriteAreaViolation]:
        found = []
        for change in changes:
            path = posixpath.join(root, change.path)
            parts = change.path.split("/")
            holding = [e for e in entries if in_write_area_entry(path, e)]
            if GITLINK in (change.old_mode, change.new_mode):
                found.append(WriteAreaViolation(change.path, "a nested repository (gitlink)"))
            elif denied is not None and denied(change.path):
                found.append(WriteAreaViolation(change.path, "in the task's denied paths"))
            elif not holding:
                found.append(WriteAreaViolation(change.path, "outside the write area"))
            else:
                index = protected_part(parts)
                if index is not None and not names_protected(parts, index, holding, root):
                    found.append(
                        WriteAreaViolation(
                            change.path, "protected: the task's scope does not name it"
                        )
                    )
        return found

    return judge


def denied_in(scope: TaskScope, project_root: str) -> Callable[[str], bool] | None:
    """Whether a project-relative path (``/``-separated) lies in the scope's ``denied_paths``,
    as the merge judges it; None without any."""
    if not scope.denied_paths:
        return None
    root = os.path.realpath(project_root)
    denied = _entries(scope.denied_paths, root, PathClassifier())

    def judge(rel: str) -> bool:
        path = posixpath.join(root, rel)
        return any(in_write_area_entry(path, d) for d in denied)

    return judge


def _entries(raws: Sequence[str], root: str, classifier: PathClassifier) -> list[str]:
    """Scope entries as absolute paths: a dynamic one (``$VAR``, a backquote) names nothing;
    an absolute one may name the project through a symlinked path; a relative one is taken as
    written (nothing in the workspace is followed)."""
    entries: list[str] = []
    for raw in raws:
        expanded = classifier.expand(raw, root)
        if expanded is None:
            continue
        absolute = os.path.isabs(raw) or raw.startswith("~")
        entries.append(os.path.realpath(expanded) if absolute else posixpath.normpath(expanded))
    return entries
