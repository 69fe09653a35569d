"""``air doctor``'s ``TrackedStateCheck``: whose ``.air/local`` it is (IMPL-TRUST-3).

Owns the check that reports a ``.air/local`` the project's ``HEAD`` holds or air did not make
here (every run refuses it, and every command that reads it), with the way out; when it finds
one, it sets ``refuses_state``, so the doctor runs none of the checks that read that state and
records nothing into it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from air.doctor.service import Problem

__all__ = ["TrackedStateCheck"]


class TrackedStateCheck:
    """``.air/local`` in ``HEAD`` or not made here (IMPL-TRUST-3): runs refuse it, said here."""

    name = "tracked_state"

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root
        self.refuses_state: str | None = None
        """Set when it is not: the state checks are not run, nothing is recorded into it."""

    async def run(self) -> list[Problem]:
        import trio

        from air.contracts.error import AirException
        from air.doctor.service import Problem, issue
        from air.session.local_owner import refuse_foreign_state
        from air.workspace.tracked_state import refuse_tracked_state

        try:  # no git to ask (OSError): the git check says so
            await trio.to_thread.run_sync(refuse_tracked_state, self.project_root)
            refuse_foreign_state(self.project_root)
        except AirException as exc:
            self.refuses_state = ".air/local is not air's own here (see tracked_state)"
            return [Problem(issue(self.name, "blocking", exc.error.message, exc.error.user_action))]
        except OSError:
            pass
        return []
