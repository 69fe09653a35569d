"""What ``air resume`` continues: the run as its session recorded it (IMPL-RESUME-2).

Owns ``recorded_run`` (one read-only read of the session's ``session.created`` and
``task.created`` rows: the run's options and each task's host) and ``keep_run_options``: a
resumed run keeps the run's ``--isolation``, ``--permission-mode``, ``--branch`` and
``--review`` unless its own command line gives them. Before, ``air resume`` after a Ctrl-C or
a crash fell back to the defaults: the rest of a ``--branch`` run landed on whatever branch was
checked out, a ``--review`` run's remaining changes went unreviewed. The hosts are
``air.cli.hosts_plan.resumed_plan``'s (IMPL-REMOTE-6).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from air.store.stored_payloads import stored_payload

__all__ = ["RecordedRun", "keep_run_options", "recorded_run"]


@dataclass(eq=False)
class RecordedRun:
    """A session's ``session.created`` payload and its tasks' ``(id, host)``."""

    created: dict[str, Any] = field(default_factory=dict)
    specs: list[Any] = field(default_factory=list)


def recorded_run(project: Any, session_id: str) -> RecordedRun:
    """What the session ``air resume`` continues recorded (empty when it cannot be read:
    opening the session then reports what is wrong with it).

    Args:
        project: the session's ``ProjectContext`` (``local_root``).
    """
    path = os.path.join(project.local_root, "sessions", session_id, "session.db")
    run = RecordedRun()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return run
    try:
        rows = conn.execute(
            "SELECT type, payload_json, seq FROM events WHERE session_id = ?"
            " AND type IN ('session.created', 'task.created') ORDER BY seq",
            (session_id,),
        ).fetchall()
    except sqlite3.Error:
        return run
    finally:
        conn.close()
    for kind, payload, seq in rows:
        data = stored_payload(payload, seq)
        if kind == "session.created":
            run.created = dict(data)
        else:
            spec = data.get("task_spec") or {}
            run.specs.append(SimpleNamespace(id=spec.get("id"), host=spec.get("host")))
    return run


def keep_run_options(options: Any, created: Mapping[str, Any]) -> None:
    """Give ``options`` (``HeadlessOptions`` of ``air resume``) the run's recorded options
    (``air.cli.options.KEPT_OPTIONS``) where its own command line (``options.given``) did not
    name them; ``options.kept`` says which, as options, for the resume to say."""
    given = options.given
    kept: list[str] = []
    if "--isolation" not in given:
        options.isolation = created.get("isolation") or "auto"
        kept += ["--isolation", options.isolation] if options.isolation != "auto" else []
    if "--permission-mode" not in given:
        options.permission_mode = created.get("permission_mode") or "default"
        allow = options.permission_mode != "default"
        kept += ["--permission-mode", options.permission_mode] if allow else []
    if "--branch" not in given:
        options.branch = created.get("branch")
        kept += ["--branch", options.branch] if options.branch else []
    if "--review" not in given:
        options.review = bool(created.get("review"))
        kept += ["--review"] if options.review else []
    options.kept = tuple(kept)
