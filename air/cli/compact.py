"""``air compact [--session SID]``: run one compaction task on a session (SDD §10.3, §19.3).

Owns the command: it finds the session (the most recent one by default), builds the
ProviderManager from models.yaml and opens the session through ``open_runtime()`` like every
other front end — so it claims the session (a session another live air process is running is
refused) and recovers it first — then runs the session's compactor once: the older messages
become one summary row (``summary.created``), the originals stay in the history. Prints the
summary id and what it covers, or that nothing was old enough.
"""

from __future__ import annotations

from typing import Any

import trio

from air.cli.history import find_project, resolve_session
from air.contracts.error import AirException, CliExit, ErrorKind
from air.contracts.project import OpenSessionOptions

__all__ = ["run_compact"]


def run_compact(args: dict[str, Any]) -> int:
    """Compact one session; exit 0 (compacted, or nothing to compact), 2 for bad input (also
    when another air process is running the session)."""
    from air.cli.prepare import load_models_checked
    from air.llm.manager import ProviderManager
    from air.nursery.runtime import RuntimeConfig, RuntimeServices, open_runtime
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
    runtime_config = RuntimeConfig(
        project=project,
        session=OpenSessionOptions(session_id=session_id),
        new_session=False,
        services=lambda: RuntimeServices(provider=models),
    )

    async def main() -> Any:
        async with open_runtime(runtime_config) as runtime:
            return await runtime.compactor(models).compact("air compact")

    outcome = trio.run(main)
    if outcome is None:
        print(f"session {session_id}: nothing to compact (only the newest messages are left)")
        return CliExit.OK
    print(
        f"session {session_id}: {len(outcome.replaced_message_ids)} messages summarised in "
        f"{outcome.chunks} chunks as {outcome.summary_id} (up to {outcome.covers_until_message_id}"
        f"; {len(outcome.pinned)} pinned facts kept verbatim; the originals stay in history)"
    )
    return CliExit.OK
