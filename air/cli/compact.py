"""``air compact [--session SID]``: run one compaction task on a session (SDD §10.3, §19.3).

Owns the command: it opens the session (the most recent one by default), builds the
ProviderManager from models.yaml and runs ``air.nursery.compaction.SessionCompactor`` once:
the older messages become one summary row (``summary.created``), the originals stay in the
history. Prints the summary id and what it covers, or that nothing was old enough.
"""

from __future__ import annotations

from typing import Any

import trio

from air.cli.history import find_project, resolve_session
from air.contracts.error import AirException, CliExit, ErrorKind
from air.contracts.project import OpenSessionOptions

__all__ = ["run_compact"]


def run_compact(args: dict[str, Any]) -> int:
    """Compact one session; exit 0 (compacted, or nothing to compact), 2 for bad input."""
    from air.cli.prepare import load_models_checked
    from air.context.compaction import load_compaction_rules
    from air.llm.manager import ProviderManager
    from air.nursery.compaction import SessionCompactor
    from air.nursery.ledger import SessionLedger
    from air.session.manager import SessionManager
    from air.session.trust import require_trust

    project = find_project(args["--project"])
    require_trust(project.project_root)  # its compaction rules reach the model (IMPL-TRUST-1)
    session_id = resolve_session(project, args["--session"])
    config = load_models_checked(project.project_root)
    if config.default is None and not config.providers:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message="no model is configured for the compactor",
            user_action="Add a provider to ~/.air/models.yaml or .air/shared/models.yaml.",
        )
    models = ProviderManager(config)
    rules = load_compaction_rules(project=project)
    session = SessionManager().open_session(
        project, OpenSessionOptions(session_id=session_id), must_exist=True
    )
    try:
        ledger = SessionLedger(session.events, session_id=session_id, project_id=project.project_id)
        compactor = SessionCompactor(
            ledger=ledger,
            store=session.store,
            models=models,
            session_id=session_id,
            rules=rules,
        )

        async def main() -> Any:
            async with session.bus.serving():
                return await compactor.compact("air compact")

        outcome = trio.run(main)
    finally:
        session.close()
    if outcome is None:
        print(f"session {session_id}: nothing to compact (only the newest messages are left)")
        return CliExit.OK
    print(
        f"session {session_id}: {len(outcome.replaced_message_ids)} messages summarised in "
        f"{outcome.chunks} chunks as {outcome.summary_id} (up to {outcome.covers_until_message_id}"
        f"; {len(outcome.pinned)} pinned facts kept verbatim; the originals stay in history)"
    )
    return CliExit.OK
