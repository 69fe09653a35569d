"""``air memory list|show ID|promote ID|reject ID``: learned memory and its candidates.

Owns the command bodies over ``air.session.knowledge_memory.MemoryBook`` (IMPL-LEARN-6). Every
stored text is shown through ``air.contracts.display.shown``: a statement a model proposed
cannot rewrite the terminal.
"""

from __future__ import annotations

from typing import Any

from air.cli.provider import find_project_root
from air.contracts.display import shown
from air.contracts.error import AirException, CliExit, ErrorKind

__all__ = ["run_memory"]

_LISTED = 100
"""A listed memory's text is cut to this many characters (``show`` prints all of it)."""


def run_memory(args: dict[str, Any]) -> int:
    """``air memory``.

    Raises:
        AirException: ``not_found`` (no project, an unknown id), ``validation_error`` (an id
            that is no candidate).
    """
    from air.session.knowledge_memory import MemoryBook
    from air.session.local_owner import claim_local_state
    from air.session.local_state import check_local_state
    from air.workspace.tracked_state import refuse_tracked_state

    root = find_project_root(args["--project"])
    if root is None:
        raise AirException.of(
            kind=ErrorKind.NOT_FOUND,
            message="no air project here (no .air/shared above this directory)",
            user_action="Run it inside a project or pass --project PATH.",
            metadata={"field": "--project"},
        )
    check_local_state(str(root))  # its knowledge is air's own, not a link's
    refuse_tracked_state(str(root))  # nor a clone's
    claim_local_state(str(root))  # nor a tarball's or a copy's
    book = MemoryBook(root)
    try:
        if args["list"]:
            memories = book.all()
            if not memories:
                print("nothing learned yet (an experience_miner task proposes candidates)")
            for m in memories:
                text = m.content if len(m.content) <= _LISTED else m.content[: _LISTED - 1] + "…"
                print(
                    f"{m.memory_id}  {m.status.value:<9}  {m.memory_type.value:<10}  {shown(text)}"
                )
            return CliExit.OK
        if args["show"]:
            m = book.get(args["ID"])
            print(f"id:       {m.memory_id}")
            print(f"status:   {m.status.value}")
            print(f"type:     {m.memory_type.value}")
            print(f"session:  {m.source_session_id or '-'}")
            print(f"created:  {m.created_at}")
            print(f"file:     {m.target_ref or '-'}")
            print(f"text:     {shown(m.content)}")
            return CliExit.OK
        if args["promote"]:
            m = book.promote(args["ID"])
            where = f" ({m.target_ref}: in every worker's prompt)" if m.target_ref else ""
            print(f"air: promoted {m.memory_id}{where}")
            return CliExit.OK
        m = book.reject(args["ID"])
        print(f"air: rejected {m.memory_id} (archived; it is not proposed again)")
        return CliExit.OK
    finally:
        book.close()
