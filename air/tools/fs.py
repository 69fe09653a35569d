"""Filesystem tools: fs.read, fs.list, fs.search, fs.write, fs.edit, fs.patch (SDD §9.4).

Owns the tool definitions and executors (fs.search's matching: ``air.tools.fs_search``; no
file over ``READ_MAX`` is loaded, IMPL-FS-2), read-before-edit bookkeeping, fs.patch's checks and
write-back (the patch is read by ``air.tools.unified_diff`` and applied by ``git apply`` itself,
hardened, on a private copy: ``air.tools.git_apply``; the results are written back through the
safe write path) and the diff artifacts every write, edit and patch produces. Writes go through
``air.tools.safefs.write_beneath`` so a swapped symlink cannot escape the workspace; reads and
listings open the checked path once through ``air.tools.safefs.open_beneath`` (no link is
followed) and read from that descriptor.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.contracts.permission import PathPolicy
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec
from air.security.paths import is_within
from air.tools.build_dirs import refuse_build_dir_write
from air.tools.registry import ToolRegistry
from air.tools.run import ToolRun
from air.tools.safefs import (
    READ_MAX,
    list_fd,
    open_beneath,
    read_beneath,
    read_bounded,
    write_beneath,
)
from air.tools.text_form import file_text, form_of, replace_in, written

if TYPE_CHECKING:
    from air.tools.fs_search import Search

__all__ = ["register_fs_tools"]

_MAX_READ = 256_000


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _bad(message: str, action: str) -> AirException:
    return AirException.of(kind=ErrorKind.TOOL_ERROR, message=message, user_action=action)


def _resolve(run: ToolRun, path: str) -> str:
    root = os.path.realpath(run.context.workspace_root)
    absolute = path if os.path.isabs(path) else os.path.join(root, path)
    return os.path.realpath(absolute)


def _writable(run: ToolRun, path: str) -> str:
    """``_resolve`` of a path fs.write/edit/patch will write: never in a cpp tool's build dir
    (IMPL-CPP-5)."""
    resolved = _resolve(run, path)
    refuse_build_dir_write(run.context.workspace_root, resolved)
    return resolved


def _observer_key(run: ToolRun) -> str:
    return run.context.task_id or run.context.session_id


def _relative(run: ToolRun, path: str) -> str:
    return os.path.relpath(_resolve(run, path), os.path.realpath(run.context.workspace_root))


async def _diff_artifact(run: ToolRun, path: str, before: bytes | None, after: bytes) -> str:
    # at the first edit, not before the first request (IMPL-BOOT-8)
    from air.workspace.file_diff import unified_diff

    rel = _relative(run, path)
    old = None if before is None else file_text(before)
    diff = await unified_diff(old, file_text(after), rel)
    ref = run.add_artifact(
        ArtifactType.DIFF,
        "diff-" + re.sub(r"[^A-Za-z0-9]+", "-", rel)[-40:],
        diff.encode(),
        extension=".diff",
    )
    return ref.artifact_id


def _open_checked(run: ToolRun, path: str, *, directory: bool) -> int:
    """Open the lexical path the permission engine judged, once, following no link.

    Inside the workspace the walk starts at the workspace root; elsewhere at ``/``. Either way
    every component is opened with ``O_NOFOLLOW`` relative to its parent, so a symlink swapped
    in after the check makes the open fail instead of reading another file.
    """
    workspace = run.workspace_realpath
    absolute = os.path.normpath(path if os.path.isabs(path) else os.path.join(workspace, path))
    root = workspace if is_within(absolute, workspace) else "/"
    try:
        return open_beneath(root, absolute, directory=directory)
    except FileNotFoundError as exc:
        raise _bad(f"{path} does not exist", "Check the path with fs.list.") from exc
    except NotADirectoryError as exc:
        raise _bad(f"{path}: a component is not a directory", "Check the path.") from exc
    except PermissionError as exc:
        raise _bad(f"{path} cannot be opened: {exc.strerror}", "Check the path.") from exc


def _read_checked(run: ToolRun, path: str) -> bytes:
    return read_bounded(_open_checked(run, path, directory=False), path)


async def _fs_read(input: JsonObject, run: ToolRun) -> Any:
    path = _resolve(run, input["path"])
    data = await trio.to_thread.run_sync(_read_checked, run, input["path"])
    run.registry.read_observations[(_observer_key(run), path)] = _sha(data)
    text = file_text(data)
    lines = text.splitlines(keepends=True)
    offset = int(input.get("offset", 0))
    limit = int(input.get("limit", len(lines)))
    start = sum(map(len, lines[:offset]))
    end = start + sum(map(len, lines[offset : offset + limit]))
    truncated = end - start > _MAX_READ
    found: JsonObject = {
        "path": input["path"],
        # as the lines read within the file: from inside a key block, its lines are redacted
        "content": run.redactor.redact_cut(text, _MAX_READ, start=start, end=end),
        "sha256": _sha(data),
        "lines": len(lines),
        "truncated": truncated,
    }
    return found | _form_notes(data)


def _form_notes(data: bytes) -> JsonObject:
    """What the model should know of a file's form (IMPL-FS-5): only what is not plain UTF-8
    with LF line breaks, so an ordinary file's result is unchanged."""
    form = form_of(data)
    notes: JsonObject = {}
    if form.line_breaks in ("crlf", "mixed"):
        notes["line_breaks"] = form.line_breaks
    if form.utf16 is not None:
        notes["encoding"] = form.utf16.upper().replace("-LE", "LE").replace("-BE", "BE")
    if form.undecodable is not None:
        notes["not_utf8"] = (
            f"byte 0x{data[form.undecodable]:02x} at offset {form.undecodable} and maybe others "
            "are no UTF-8: shown as U+FFFD; fs.edit keeps them and adds only ASCII beside them"
        )
    return notes


LIST_MAX = 2000
"""The most entries fs.list shows (the first by name); it says how many there are."""


def _list_entries(run: ToolRun, path: str) -> JsonObject:
    listed, total = list_fd(_open_checked(run, path, directory=True), LIST_MAX)
    entries = [{"name": name, "type": kind} for name, kind in listed]
    return {"entries": entries} | ({"total": total, "truncated": True} if total > LIST_MAX else {})


async def _fs_list(input: JsonObject, run: ToolRun) -> Any:
    listed = await trio.to_thread.run_sync(_list_entries, run, input.get("path", "."))
    return {"path": input.get("path", ".")} | listed


PATTERN_MAX = 1000
"""The longest fs.search pattern (characters)."""


async def _fs_search(input: JsonObject, run: ToolRun) -> Any:
    from air.tools.fs_search import compile_search  # regex: at the first search

    search = compile_search(str(input["pattern"]), int(input.get("max_results", 200)))
    try:  # a cancelled call returns at once; its thread stops at its next line or file
        return await trio.to_thread.run_sync(
            _search, search, run, input.get("path", "."), abandon_on_cancel=True
        )
    finally:
        search.stop.set()


def _search(search: Search, run: ToolRun, path: str) -> JsonObject:
    from air.tools.fs_search import search_tree

    workspace = run.workspace_realpath
    start = os.path.normpath(path if os.path.isabs(path) else os.path.join(workspace, path))
    if not is_within(start, workspace):
        return {"matches": [], "truncated": False}
    top = _open_checked(run, path, directory=True)
    return search_tree(search, top, start, workspace, run.redactor, denied=run.denied)


def _check_expected(before: bytes | None, expected: str | None, path: str) -> None:
    if expected is not None and (before is None or _sha(before) != expected):
        raise _bad(
            f"{path} changed: expected_existing_sha256 does not match",
            "Read the file again, then retry.",
        )


async def _fs_write(input: JsonObject, run: ToolRun) -> Any:
    root = run.context.workspace_root
    path = input["path"]
    before = read_beneath(root, _writable(run, path))
    _check_expected(before, input.get("expected_existing_sha256"), path)
    data = written(before, input["content"])
    write_beneath(root, _resolve(run, path), data)
    run.registry.read_observations[(_observer_key(run), _resolve(run, path))] = _sha(data)
    return {
        "path": path,
        "sha256": _sha(data),
        "diff_artifact_id": await _diff_artifact(run, path, before, data),
    } | _form_notes(data)


def edit_file(
    root: str,
    path: str,
    old: str,
    new: str,
    *,
    replace_all: bool = False,
    observed_sha: str | None = None,
) -> tuple[bytes, bytes]:
    """The edit core used by fs.edit: read beneath ``root``, replace, write beneath ``root``.

    Returns:
        (before, after) bytes.
    """
    before = read_beneath(root, path)
    if before is None:
        raise _bad(f"{path} does not exist", "Create it with fs.write.")
    if observed_sha is not None and _sha(before) != observed_sha:
        raise _bad(f"{path} changed since it was read", "Read the file again, then edit.")
    after = replace_in(path, before, old, new, replace_all=replace_all)
    write_beneath(root, path, after, create_parents=False)
    return before, after


async def _fs_edit(input: JsonObject, run: ToolRun) -> Any:
    path = _writable(run, input["path"])
    expected = input.get("expected_existing_sha256")
    observed = run.registry.read_observations.get((_observer_key(run), path))
    if expected is None and observed is None:
        raise _bad(
            f"{input['path']} was not read in this task", "Call fs.read on the file before fs.edit."
        )
    before, after = edit_file(
        run.context.workspace_root,
        path,
        input["old_string"],
        input["new_string"],
        replace_all=bool(input.get("replace_all", False)),
        observed_sha=expected or observed,
    )
    run.registry.read_observations[(_observer_key(run), path)] = _sha(after)
    return {
        "path": input["path"],
        "sha256": _sha(after),
        "diff_artifact_id": await _diff_artifact(run, input["path"], before, after),
    }


# Refused before git runs: git itself would make the link in the copy (never written back).
_LINK_MODE = re.compile(r"^(?:new file |new |old )?mode 120000\s*$", re.MULTILINE)


def _patch_paths(input: JsonObject) -> tuple[list[str], list[str], str | None]:
    from air.tools.unified_diff import parse_patch  # IMPL-BOOT-16: at the first fs.patch

    writes: list[str] = []
    for old, new, _ in parse_patch(input.get("patch", "")):
        for p in (old, new):
            if p and p not in writes:
                writes.append(p)
    return [], writes, None


def _patch_targets(files: list[tuple[str | None, str | None, list[list[str]]]]) -> list[str]:
    paths: list[str] = []
    for old, new, _ in files:
        for p in (old, new):
            if p is None:
                continue
            rel = os.path.normpath(p)
            if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
                raise _bad(f"{p} is not inside the workspace", "Patch files in the workspace.")
            if rel not in paths:
                paths.append(rel)
    return paths


async def _fs_patch(input: JsonObject, run: ToolRun) -> Any:
    from air.tools.git_apply import apply_in_copy  # IMPL-BOOT-16: at the first fs.patch
    from air.tools.unified_diff import parse_patch

    root = run.context.workspace_root
    files = parse_patch(input["patch"])
    if not files:
        raise _bad("the patch holds no file sections", "Send a unified diff with ---/+++ headers.")
    paths = _patch_targets(files)
    for rel in paths:
        _writable(run, rel)
    if _LINK_MODE.search(input["patch"]):
        raise _bad(
            "the patch makes a symlink; fs.patch writes file contents only",
            "Create links with shell.run (ln -s), which is checked like any command.",
        )
    allow_partial = bool(input.get("allow_partial", False))
    changed, rejects = await trio.to_thread.run_sync(
        apply_in_copy, root, input["patch"], paths, allow_partial
    )
    reject_id = None
    if rejects:
        body = (
            "".join(f"--- a/{p}\n+++ b/{p}\n# git apply: {why}\n" for p, why in rejects.items())
            + "\n"
            + input["patch"]
        )
        reject_id = run.add_artifact(
            ArtifactType.DIFF,
            "rejected-hunks",
            run.redactor.redact(body).encode(),
            extension=".rej",
        ).artifact_id
        if not allow_partial:
            first = next(iter(rejects.values()))
            raise AirException.of(
                kind=ErrorKind.TOOL_ERROR,
                message=(
                    f"git apply rejects the patch ({len(rejects)} file(s)); nothing was written: "
                    + run.redactor.redact(first)[:400]
                ),
                user_action="Read the files again and regenerate the patch.",
                metadata={"rejected_paths": sorted(rejects), "rejects_artifact_id": reject_id},
            )
    for rel, (before, _after) in changed.items():
        if read_beneath(root, rel) != before:
            raise _bad(f"{rel} changed while the patch was applied", "Re-run the patch.")
    applied = []
    for rel, (before, after) in changed.items():
        write_beneath(root, rel, after)
        run.registry.read_observations[(_observer_key(run), _resolve(run, rel))] = _sha(after)
        applied.append(
            {"path": rel, "diff_artifact_id": await _diff_artifact(run, rel, before, after)}
        )
    return {"applied": applied, "rejected_paths": sorted(rejects), "rejects_artifact_id": reject_id}


def _def(name: str, description: str, schema: JsonObject, *, write: bool) -> ToolDefinition:
    perms = ToolPermissionSpec(
        read_paths=PathPolicy(from_input=["path"]),
        write_paths=PathPolicy(from_input=["path"]) if write else None,
    )
    return ToolDefinition(
        name=name,
        description=description,
        input_schema=schema,
        category=ToolCategory.FILESYSTEM,
        permissions=perms,
    )


def _obj(props: JsonObject, required: list[str]) -> JsonObject:
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


_S = {"type": "string"}
_SP = {"type": "string", "minLength": 1}


def register_fs_tools(registry: ToolRegistry) -> None:
    """Register the six filesystem tools on ``registry``."""
    registry.register(
        _def(
            "fs.read",
            f"Read a text file (of at most {READ_MAX >> 20} MiB: parts of a larger one with "
            "shell.run).",
            _obj(
                {
                    "path": _SP,
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
            write=False,
        ),
        _fs_read,
    )
    registry.register(
        _def("fs.list", "List a directory.", _obj({"path": _S}, []), write=False), _fs_list
    )
    registry.register(
        _def(
            "fs.search",
            "Search files, line by line, for a regular expression (Python re syntax).",
            _obj(
                {
                    "pattern": {**_SP, "maxLength": PATTERN_MAX},
                    "path": _S,
                    "max_results": {"type": "integer", "minimum": 1},
                },
                ["pattern"],
            ),
            write=False,
        ),
        _fs_search,
    )
    registry.register(
        _def(
            "fs.write",
            "Create or replace a file (an existing one keeps its CRLF line breaks and its byte "
            "order mark; change those with shell.run).",
            _obj({"path": _SP, "content": _S, "expected_existing_sha256": _S}, ["path", "content"]),
            write=True,
        ),
        _fs_write,
    )
    registry.register(
        _def(
            "fs.edit",
            "Replace exact text in a file read earlier (in a CRLF file, line breaks in "
            "old_string and new_string may be LF).",
            _obj(
                {
                    "path": _SP,
                    "old_string": _S,
                    "new_string": _S,
                    "replace_all": {"type": "boolean"},
                    "expected_existing_sha256": _S,
                },
                ["path", "old_string", "new_string"],
            ),
            write=True,
        ),
        _fs_edit,
    )
    patch_def = ToolDefinition(
        name="fs.patch",
        description="Apply a unified diff.",
        category=ToolCategory.FILESYSTEM,
        input_schema=_obj({"patch": _SP, "allow_partial": {"type": "boolean"}}, ["patch"]),
        permissions=ToolPermissionSpec(write_paths=PathPolicy(from_input=["patch"])),
    )
    registry.register(patch_def, _fs_patch, paths=_patch_paths)
