"""What ``/proc`` says of a process, for tests of stops and kills."""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` (``S``, ``R``, ``T`` stopped, ``Z``); None: gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]  # after the command's name, which may hold ")"


def states_of(argv: str) -> list[str]:
    """The states of the live processes whose command line is ``argv``."""
    states = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        state = process_state(int(entry.name))
        if cmdline == argv and state is not None:
            states.append(state)
    return states
