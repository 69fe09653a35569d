"""File-backed stand-ins for the session store's EventIngestor and ArtifactStore.

Owns ``RecordingEvents`` (every event kept in order and appended to a JSONL file) and
``DirArtifacts`` (one real file per artifact, whole or written in pieces: ``DirWriter``). Both
satisfy the protocols ``WorkerManager`` and ``ToolRegistry`` are injected with, for tests,
benchmarks and demos without a session DB.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, BinaryIO

from air.contracts.artifact_records import (
    ArtifactContext,
    ArtifactCreateInput,
    ArtifactReadResult,
    ArtifactRef,
)
from air.contracts.error import AirException, ErrorKind
from air.contracts.event import RuntimeEvent
from air.contracts.ids import new_id

__all__ = ["DirArtifacts", "DirWriter", "RecordingEvents"]


class RecordingEvents:
    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.events: list[tuple[bool, RuntimeEvent]] = []

    def _keep(self, durable: bool, event: RuntimeEvent) -> None:
        self.events.append((durable, event))
        if self.path:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"durable": durable, **event.model_dump(mode="json")}) + "\n")

    async def ingest(self, event: RuntimeEvent) -> None:
        self._keep(True, event)

    async def ingest_ephemeral(self, event: RuntimeEvent) -> None:
        self._keep(False, event)

    def durable(self, agent_id: str | None = None) -> list[RuntimeEvent]:
        return [
            e
            for d, e in self.events
            if d and (agent_id is None or e.payload.get("agent_id") == agent_id)
        ]

    def types(self, agent_id: str | None = None) -> list[str]:
        return [e.type for e in self.durable(agent_id)]

    def of_type(self, type: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        return [e.payload for e in self.durable(agent_id) if e.type == type]


class DirArtifacts:
    def __init__(self, root: str) -> None:
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.refs: dict[str, ArtifactRef] = {}
        self.contexts: dict[str, ArtifactContext] = {}

    def create(self, input: ArtifactCreateInput, context: ArtifactContext) -> ArtifactRef:
        art_id = new_id("art")
        path = os.path.join(self.root, f"{art_id}-{input.slug}{input.extension}")
        with open(path, "wb") as fh:
            fh.write(input.content)
        ref = ArtifactRef(
            artifact_id=art_id,
            uri=f"artifact://local/{art_id}",
            path=path,
            type=input.type,
            sha256=hashlib.sha256(input.content).hexdigest(),
            size_bytes=len(input.content),
        )
        self.refs[art_id] = ref
        self.contexts[art_id] = context
        return ref

    def open_writer(self, input: ArtifactCreateInput, context: ArtifactContext) -> DirWriter:
        return DirWriter(self, input, context)

    def read(self, artifact_id: str, *, max_bytes: int | None = None) -> ArtifactReadResult:
        ref = self.refs.get(artifact_id)
        if ref is None:
            raise AirException.of(
                kind=ErrorKind.NOT_FOUND,
                message=f"no artifact {artifact_id}",
                user_action="Use an artifact id of this session.",
            )
        with open(ref.path, "rb") as fh:
            content = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        truncated = max_bytes is not None and len(content) > max_bytes
        return ArtifactReadResult(
            ref=ref, content=content[:max_bytes] if truncated else content, truncated=truncated
        )


class DirWriter:
    """``DirArtifacts.open_writer``: the artifact's file written in pieces, hashed as it goes."""

    def __init__(self, owner: DirArtifacts, input: ArtifactCreateInput, context: ArtifactContext):
        self.owner = owner
        self.input = input
        self.context = context
        self.artifact_id = new_id("art")
        self.path = os.path.join(owner.root, f"{self.artifact_id}-{input.slug}{input.extension}")
        self.fh: BinaryIO | None = open(self.path, "wb")
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.write(input.content)

    def write(self, content: bytes) -> None:
        if self.fh is None:
            raise ValueError("written after close")
        self.fh.write(content)
        self.sha256.update(content)
        self.size += len(content)

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None

    def commit(self) -> ArtifactRef:
        self.close()
        ref = ArtifactRef(
            artifact_id=self.artifact_id,
            uri=f"artifact://local/{self.artifact_id}",
            path=self.path,
            type=self.input.type,
            sha256=self.sha256.hexdigest(),
            size_bytes=self.size,
        )
        self.owner.refs[self.artifact_id] = ref
        self.owner.contexts[self.artifact_id] = self.context
        return ref

    def discard(self) -> None:
        self.close()
        os.unlink(self.path)
