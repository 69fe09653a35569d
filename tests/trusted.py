"""The one way the tests give a project the user's trust: the real recording code
(``air.session.trust.record_trust``) writing ``HOME/.air/trust.json`` of the HOME the run uses
(the test's HOME, or the process's own when the test runs air in-process without one)."""

from __future__ import annotations

from pathlib import Path

from air.session.trust import record_trust, trust_scan


def trust_project(root: str | Path, home: str | Path | None = None) -> None:
    """Record that the user trusts ``root``'s configuration exactly as it is now. Call it after
    the test wrote the project's files (a later change makes the project untrusted again)."""
    record_trust(trust_scan(str(root)), home=None if home is None else str(home))
