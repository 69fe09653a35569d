"""A host's artifacts as they arrive, the parent's half (IMPL-REMOTE-5).

Owns ``RemoteArtifacts``: the artifact lines of one remote call — ``artifact.open`` (type, slug,
extension, command run), ``artifact.part`` (base64 of at most ``PART_BYTES``), ``artifact.commit``
/ ``artifact.discard``, as ``air.remote.executor`` sends them, and the whole ``artifact`` line of
an executor from before the pieces — written through the parent's store as they come: decoded,
redacted by a ``RedactingStream`` (what it writes equals redacting the whole, however the pieces
were cut), a piece of over ``OFF_LOOP_BYTES`` in a worker thread. A command's log of 200 MB came
as one line of 267 MB, parsed, decoded and redacted whole on the Trio thread (the parent's loop
held ~0.6 s, several copies of it in memory at once); now the parent holds one piece at a time.

A line no executor sends — a piece of an artifact never opened, content that is no base64,
more open artifacts than any tool makes — raises ``ValueError`` / ``KeyError`` / ``TypeError``
for ``execute_remote``, which ends the call and its session; ``discard_open`` drops what a call
left open.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.artifact import ArtifactType
from air.security.redact import RedactingStream

if TYPE_CHECKING:
    from air.contracts.artifact_records import ArtifactRef
    from air.tools.run import ArtifactWriting, ToolRun

__all__ = ["OFF_LOOP_BYTES", "OPEN_MAX", "PART_BYTES", "RemoteArtifacts"]

PART_BYTES = 512 * 1024
"""The most bytes of an artifact one ``artifact.part`` line carries (before base64)."""
OFF_LOOP_BYTES = 64 * 1024
"""A piece this large is decoded, redacted and written in a worker thread (IMPL-OUT-1's line)."""
OPEN_MAX = 16
"""Artifacts one call may have open at once (a command's two logs; the rest are written whole)."""


class _Open:
    __slots__ = ("redacting", "writer")

    def __init__(self, writer: ArtifactWriting, redacting: RedactingStream) -> None:
        self.writer, self.redacting = writer, redacting


class RemoteArtifacts:
    """The artifacts of one remote call: stored ones by the host's id, open ones being written."""

    def __init__(self, run: ToolRun) -> None:
        self.run = run
        self.stored: dict[str, ArtifactRef] = {}
        self._open: dict[str, _Open] = {}

    async def line(self, kind: str, item: dict[str, Any]) -> ArtifactRef | None:
        """Take one artifact line; the stored artifact's ref once one is committed."""
        name = item["id"]
        if type(name) is not str:
            raise TypeError("an artifact's id is no text")
        if kind == "artifact.open":
            self.open(name, item)
        elif kind == "artifact.part":
            await self._write(self._open[name], _decoded(item["content"]), final=False)
        elif kind == "artifact.commit":
            return await self._commit(name)
        elif kind == "artifact.discard":
            self._open.pop(name).writer.discard()
        else:  # "artifact": one line, the whole content (an executor from before the pieces)
            self.open(name, item)
            await self._write(self._open[name], _decoded(item["content"]), final=False)
            return await self._commit(name)
        return None

    def open(self, name: str, item: dict[str, Any]) -> None:
        from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput

        if name in self._open or name in self.stored or len(self._open) >= OPEN_MAX:
            raise ValueError(f"an artifact opened twice or one too many: {name[:60]!r}")
        run = self.run
        writer = run.registry.artifacts.open_writer(
            ArtifactCreateInput(
                type=ArtifactType(item["type"]),
                slug=item["slug"],
                extension=item["extension"],
                content=b"",
            ),
            ArtifactContext(
                session_id=run.context.session_id,
                task_id=run.context.task_id,
                agent_id=run.context.agent_id,
                tool_run_id=run.tool_run_id,
                command_run_id=item.get("command_run_id"),
            ),
        )
        self._open[name] = _Open(writer, RedactingStream(run.redactor))

    async def _write(self, into: _Open, data: bytes, *, final: bool) -> None:
        def write() -> None:
            into.writer.write(into.redacting.feed_bytes(data).encode())
            if final:
                into.writer.write(into.redacting.finish().encode())
                into.writer.close()

        if len(data) < OFF_LOOP_BYTES and not final:
            write()
        else:  # the last piece's flush and fsync too
            await trio.to_thread.run_sync(write)

    async def _commit(self, name: str) -> ArtifactRef:
        into = self._open.pop(name)
        try:
            await self._write(into, b"", final=True)
        except BaseException:
            into.writer.discard()
            raise
        ref = self.stored[name] = into.writer.commit()
        return ref

    def discard_open(self) -> None:
        """Drop every artifact the call left open (it ended, or failed, before committing)."""
        while self._open:
            self._open.popitem()[1].writer.discard()


def _decoded(content: Any) -> bytes:
    if type(content) is not str:
        raise TypeError("an artifact's content is no text")
    return base64.b64decode(content, validate=True)
