"""``air restore TARGET`` and ``air restore --list``: bring back what air's merges changed.

Owns: telling a session id, a time and a file path apart (IMPL-REL-4: a known session id or
``ses_…`` is a session; an existing path is a file; an ISO 8601 time is a time; anything else
is a file path, for a file that no longer exists), and printing what was restored and the
rescue snapshot (paths as exact text, ``shown``: a task chose the names). The work is
``air.workspace.backups.BackupRepository``'s, under the project's ``TREE`` lock: a merge of
another air process in the project and a restore take turns.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from typing import Any

import trio

from air.cli.history import find_project, session_ids
from air.contracts.display import shown
from air.contracts.error import CliExit
from air.session.local_owner import claim_local_state
from air.workspace.backups import BackupRepository, Snapshot
from air.workspace.tree_lock import TREE, hold


def _is_time(text: str) -> bool:
    if not text[:4].isdigit():
        return False
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _waiting() -> None:
    print(
        "air: another air process is changing the project's files (a merge or a restore); "
        "waiting for it",
        file=sys.stderr,
        flush=True,
    )


def _line(snap: Snapshot) -> str:
    where = " ".join(
        part
        for part in (
            f"session {snap.session_id}" if snap.session_id else "",
            f"task {snap.task_id}" if snap.task_id else "",
        )
        if part
    )
    return f"{snap.commit[:12]}  {snap.at}  {snap.reason}" + (f"  ({where})" if where else "")


def run_restore(args: dict[str, Any]) -> int:
    project = find_project(args["--project"])
    backups = BackupRepository(project.project_root)
    if args["--list"]:
        snaps = trio.run(backups.snapshots)
        if not snaps:
            print(f"air: no snapshots yet in {backups.git_dir}", file=sys.stderr)
        for snap in snaps:
            if args["--json"]:
                print(json.dumps(snap.__dict__))
            else:
                print(_line(snap))
        return CliExit.OK
    target: str = args["TARGET"]
    claim_local_state(project.project_root)  # never write another's backups into the tree
    sessions = set(session_ids(project))
    if target in sessions or target.startswith("ses_"):
        kind = "session"
    elif os.path.lexists(target):
        kind = "file"
    elif _is_time(target):
        kind = "time"
    else:
        kind = "file"
    if kind == "file":
        rel = backups.relative(target)

        async def restore_file() -> tuple[Snapshot, Snapshot]:
            snap = await backups.pick_for_file(rel)
            async with hold(backups.project_root, TREE, waiting=_waiting):  # never mid-merge
                return snap, await backups.restore_file(rel, snap)

        snap, rescue = trio.run(restore_file)
        print(f"air: restored {shown(rel)} as it was at {snap.at} (snapshot {snap.commit[:12]})")
    else:

        async def restore_tree() -> tuple[Snapshot, Snapshot, list[str]]:
            if kind == "session":
                snap = await backups.pick_for_session(target)
            else:
                snap = await backups.pick_for_time(target)
            async with hold(backups.project_root, TREE, waiting=_waiting):
                rescue, changed = await backups.restore_tree(snap)
            return snap, rescue, changed

        snap, rescue, changed = trio.run(restore_tree)
        what = f"before session {target}" if kind == "session" else f"at {target}"
        print(
            f"air: restored the tree as it was {what} (snapshot {snap.commit[:12]} of {snap.at}): "
            f"{len(changed)} file(s) changed"
        )
        for rel in changed:
            print(f"  {shown(rel)}")
    print(
        f"air: rescue snapshot {rescue.commit[:12]} holds the files as they were before this "
        "restore (`air restore --list`); your git branch and index are untouched"
    )
    return CliExit.OK
