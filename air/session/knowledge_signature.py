"""The failure signature of a failed verification, read from what its command printed.

Owns ``verification_signature``: an attempt's last failing run of a verification command
(``command.started`` / ``command.completed`` of that agent), the output air stored for it
(``artifact.created``: the stdout and stderr logs), its failing tests
(``air.session.knowledge_failures``) and their signature. The signature is what debug records
are filed under and looked up by (IMPL-LEARN-5), so two unrelated failing tests never share
"known fixes" because they ran under one command.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from air.contracts.event import RuntimeEvent
from air.session.knowledge_failures import parse_test_failures, signature_of_failures

__all__ = ["OUTPUT_READ_MAX", "verification_signature"]

OUTPUT_READ_MAX = 1 << 20
"""At most this many bytes of each stream's log are read (its end: the summary is there)."""


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - OUTPUT_READ_MAX))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def verification_signature(
    history: Sequence[RuntimeEvent], commands: Iterable[str], *, roots: Iterable[str] = ()
) -> str | None:
    """The signature of the failing tests of the last failed verification run in ``history``.

    Args:
        history: one agent's evidence events, oldest first (``SessionState.events_of_agent``).
        commands: the task's verification commands (any failing command when empty).
        roots: workspace directories cut from absolute paths in the output.

    Returns:
        ``<runner>:<test ids>:<digest>``, or None when no failed run printed failing tests
        that a known runner reports.
    """
    wanted = set(commands)
    started: dict[str, str] = {}
    paths: dict[str, str] = {}
    failed: list[tuple[str, list[str]]] = []
    for event in history:
        p = event.payload
        if event.type == "command.started":
            started[str(p.get("command_run_id"))] = str(p.get("command", ""))
        elif event.type == "artifact.created":
            paths[str(p.get("artifact_id"))] = str(p.get("path", ""))
        elif event.type in ("command.completed", "command.failed"):
            run = str(p.get("command_run_id"))
            command = started.get(run)
            if command is None or (wanted and command not in wanted):
                continue
            if event.type == "command.completed" and p.get("exit_code") == 0:
                continue
            logs = [str(p[k]) for k in ("stdout_artifact_id", "stderr_artifact_id") if p.get(k)]
            failed.append((run, logs))
    fixed = tuple(roots)
    for _run, logs in reversed(failed):
        text = "\n".join(_tail(paths[a]) for a in logs if paths.get(a))
        signature = signature_of_failures(parse_test_failures(text, roots=fixed))
        if signature is not None:
            return signature
    return None
