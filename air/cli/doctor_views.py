"""The doctor's word on a session's stored views: the console view and the report fold.

Owns ``StoredViewsCheck`` (``stored_views``): for every session database not running now, the
stored console view (``air.projection.view_snapshot.check_view``) and the stored report fold
(``air.cli.report_snapshot.check_report``) each plus the events after it must equal a fold of
the whole log (issue 28 item 1); a difference is a reported defect, never a silent one. Both are
caches of durable events, so the repair deletes the stored row and the next reader folds the log
(and the runtime stores a fresh one). Built here because ``air.doctor`` may import neither the
projection nor the CLI's report.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from air.doctor.service import Problem

__all__ = ["StoredViewsCheck"]


class StoredViewsCheck:
    """Each stored console view and report fold against a fold of its whole log."""

    name = "stored_views"
    reads_state = True

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root
        self.sessions = os.path.join(project_root, ".air", "local", "sessions")
        self.counted = (0, 0)
        """Sessions looked at and sessions skipped because they run now."""

    async def run(self) -> list[Problem]:
        import trio

        return await trio.to_thread.run_sync(self.check_all)

    def check_all(self) -> list[Problem]:
        from air.doctor.database_check import session_lock_held

        try:
            names = sorted(os.listdir(self.sessions))
        except OSError:
            names = []
        problems: list[Problem] = []
        looked = running = 0
        for sid in names:
            path = os.path.join(self.sessions, sid, "session.db")
            if not os.path.isfile(path):
                continue
            if session_lock_held(self.project_root, sid):
                running += 1
                continue
            looked += 1
            problems += self._check_session(sid, path)
        self.counted = (looked, running)
        return problems

    def found(self) -> str:
        looked, running = self.counted
        text = f"{looked} session(s): stored console view and report fold against a full fold"
        return text + (f" ({running} running now, not opened)" if running else "")

    def _check_session(self, sid: str, path: str) -> list[Problem]:
        from air.cli.report_snapshot import KIND as REPORT_KIND
        from air.cli.report_snapshot import check_report
        from air.contracts.error import AirException
        from air.events.store import EventStore
        from air.projection.view_snapshot import KIND as VIEW_KIND
        from air.projection.view_snapshot import check_view
        from air.store.session_db import open_session_database

        try:
            db = open_session_database(path, must_exist=True)
        except AirException:
            return []  # the databases check reports a database that cannot be opened
        checks: list[tuple[str, Callable[[], str | None]]] = [
            (f"{VIEW_KIND}:{sid}", lambda: check_view(EventStore(db), sid)),
            (f"{REPORT_KIND}:{sid}", lambda: check_report(db, sid)),
        ]
        try:
            found = [(kind, defect) for kind, check in checks if (defect := check()) is not None]
        finally:
            db.close()
        return [self._problem(sid, path, kind, defect) for kind, defect in found]

    def _problem(self, sid: str, path: str, kind: str, defect: str) -> Problem:
        from air.doctor.service import Fix, Problem, issue

        return Problem(
            issue(
                f"{self.name}.{sid}",
                "warning",
                f"{path}: {defect}",
                "Run `air doctor --fix` to drop the stored copy (a cache of the log: the next "
                "reader folds the log), and report the bug with `air doctor --bundle`.",
                fix="drop the stored copy",
            ),
            Fix(f"drop {kind} from {path}", (path,), _drop(path, kind)),
        )


def _drop(path: str, kind: str) -> Callable[[], Any]:
    async def apply() -> str:
        from air.store.session_db import open_session_database

        db = open_session_database(path, must_exist=True)
        try:
            with db.transaction() as conn:
                conn.execute("DELETE FROM fold_snapshots WHERE kind = ?", (kind,))
        finally:
            db.close()
        return f"dropped {kind}"

    return apply
