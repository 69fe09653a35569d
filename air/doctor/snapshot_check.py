"""The doctor's word on a session's fold snapshot: a difference from the log is a defect.

Owns ``snapshot_problems``: one warning per defect ``air.events.fold_snapshot.check_snapshots``
found in a session database (a snapshot that cannot be read, claims an event past the log's
end, or folds with the events after it to another state than a full replay), each repaired by
rebuilding the database from its event log (the snapshot is a cache; the log is the truth).
"""

from __future__ import annotations

from air.doctor.service import Fix, Problem, issue
from air.events.fold_snapshot import check_snapshots
from air.store.db import DatabaseManager

__all__ = ["snapshot_problems"]


def snapshot_problems(
    check: str, path: str, db: DatabaseManager, rebuild: Fix | None
) -> list[Problem]:
    """A ``{check}.snapshot`` warning per defect of ``db``'s snapshots, the rebuild its fix."""
    return [
        Problem(
            issue(
                f"{check}.snapshot",
                "warning",
                f"{path}: {defect}",
                "Run `air doctor --fix` to rebuild it from its event log (the snapshot is a "
                "cache: the log is the truth), and report the bug with `air doctor --bundle`.",
                fix="rebuild from the event log",
            ),
            rebuild,
        )
        for defect in check_snapshots(db)
    ]
