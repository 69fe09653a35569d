"""Fork server for the crash-safety test (run as a script, never imported by pytest).

Usage: ``python crash_child.py PROJECT_ROOT SESSION_ID``. Imports air once, then for each
``run <seed>`` line on stdin forks a writer and prints ``pid <pid>``; the writer reopens the
session, writes ``go`` and appends events and artifacts forever, writing one ack line per
committed event (``ev <seq> <event_id> <type>``, ``art <artifact_id> <sha256>``) to
``acks.log`` with a raw ``os.write`` AFTER the call returned. The parent SIGKILLs the writer;
the server reaps it and prints ``dead``.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput
from air.contracts.event import RuntimeEvent
from air.contracts.project import OpenSessionOptions
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.testing.sequences import SessionSimulator


def writer(root: str, session_id: str, seed: int) -> None:
    project = ProjectStore().open(root)
    opened = SessionManager().open_session(project, OpenSessionOptions(session_id=session_id))
    ack_fd = os.open(os.path.join(root, "acks.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    rnd = random.Random(seed)
    sim = SessionSimulator(session_id, project.project_id, prefix=f"{seed:04d}")
    sim.started = True
    os.write(1, b"go\n")

    def ack(seqs: list[int], events: list[RuntimeEvent]) -> None:
        lines = "".join(f"ev {s} {e.id} {e.type}\n" for s, e in zip(seqs, events, strict=True))
        os.write(ack_fd, lines.encode())

    while True:
        events = sim.step(rnd.choice, rnd)
        events = [e for e in events if e.type != "artifact.created"]
        if not events:
            ref = opened.artifacts.create(
                ArtifactCreateInput(
                    type="log", slug="out", content=os.urandom(rnd.randint(0, 4096))
                ),
                ArtifactContext(session_id=session_id),
            )
            sim.artifacts[-1] = ref.artifact_id  # later diagnostics point at the real one
            os.write(ack_fd, f"art {ref.artifact_id} {ref.sha256}\n".encode())
            continue
        if len(events) > 1 and rnd.random() < 0.5:
            ack(opened.events.append_many(events), events)
        else:
            for event in events:
                ack([opened.events.append(event)], [event])


def main() -> None:
    root, session_id = sys.argv[1], sys.argv[2]
    os.write(1, b"ready\n")
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd != "run":
            break
        pid = os.fork()
        if pid == 0:
            try:
                writer(root, session_id, int(arg))
            finally:
                os._exit(3)
        os.write(1, f"pid {pid}\n".encode())
        os.waitpid(pid, 0)
        os.write(1, b"dead\n")


if __name__ == "__main__":
    main()
