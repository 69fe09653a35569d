"""CommandOutput: a sandboxed command's stdout and stderr, redacted as they stream.

Owns the output path of ``shell.run`` (IMPL-REDACT-2): the pipes are read in chunks; a batch of
the chunks that arrived (at most ``BATCH_BYTES``) is redacted, one ``RedactingStream`` per
stream, in a worker thread, or on the Trio thread while the whole output is under
``INLINE_BYTES`` (a small output costs less than the hand-offs: IMPL-OUT-1), so redaction is
linear in the output and the Trio thread never redacts more than a small output; the redacted
text is appended to the stream's log artifact as it comes (disk speed, memory bounded whatever
the output's size; a log is a file the command writes, so past its file size limit, ``cap``,
the command is ended as over it: a runaway ``yes`` never fills the disk the session is on),
kept as a tail of ``TAIL_CHARS`` for the result the model sees, and streamed live
(``command.*.delta`` events and ToolEvents, in the order the chunks arrived) up to
``LIVE_CHARS`` per stream, then one note of what only the artifact holds. At the streams' end
one worker-thread call redacts what is left and closes (fsyncs) every log artifact.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from air.contracts.artifact import ArtifactType

if TYPE_CHECKING:
    from air.security.redact import RedactingStream
    from air.tools.run import ArtifactWriting, ToolRun

__all__ = [
    "BATCH_BYTES",
    "INLINE_BYTES",
    "LIVE_CHARS",
    "TAIL_CHARS",
    "CommandOutput",
    "LiveBudget",
    "pump",
    "send_live",
    "widen_pipe",
]

TAIL_CHARS = 20_000
"""The end of each stream the result carries (redacted); all of it is in the log artifact."""
LIVE_CHARS = 1 << 20
"""Characters of each stream sent live; the rest is only in the log artifact."""
BATCH_BYTES = 1 << 20
"""At most this much output is redacted in one worker-thread call."""
INLINE_BYTES = 64 << 10
"""While a command's output is under this, its batches are redacted on the Trio thread: at most
~0.5 ms of work in all, less than the thread hand-offs it saves; past it, every batch goes to a
worker thread, where the chunks that arrive meanwhile make the next batch large (IMPL-OUT-1)."""
PIPE_BYTES = 1 << 20
"""The pipes are widened to this (``F_SETPIPE_SZ``): fewer, larger reads."""
_STREAMS = ("stdout", "stderr")


def widen_pipe(stream: trio.lowlevel.FdStream) -> None:
    """Ask for a ``PIPE_BYTES`` pipe buffer (the kernel may refuse: the default stays)."""
    try:
        fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass


async def pump(
    stream: trio.abc.ReceiveStream, kind: str, sink: trio.MemorySendChannel[tuple[str, bytes]]
) -> None:
    """Send every chunk read from ``stream`` to ``sink`` as ``(kind, chunk)``."""
    async with sink:
        while chunk := await stream.receive_some(PIPE_BYTES):
            await sink.send((kind, bytes(chunk)))


async def send_live(run: ToolRun, command_run_id: str, kind: str, text: str) -> None:
    """Stream ``text`` of stream ``kind`` of a command run (a ``command.*.delta`` event and a
    tool event), which a ``RedactingStream`` of the run's redactor produced."""
    payload = {"command_run_id": command_run_id, "data": text}
    await run.emit(f"command.{kind}.delta", payload, redacted=True)
    await run.stream("stdout" if kind == "stdout" else "stderr", text, redacted=True)


@dataclass(eq=False)
class LiveBudget:
    """How much more of one stream is sent live (``LIVE_CHARS`` in all), and how much was not."""

    left: int = LIVE_CHARS
    held_back: int = 0
    """Characters not sent live."""

    def take(self, text: str) -> str:
        """The part of ``text`` still sent live; the rest is counted as held back."""
        live = text[: max(self.left, 0)]
        self.left -= len(live)
        self.held_back += len(text) - len(live)
        return live

    def note(self, name: str) -> str:
        """What the stream ``name`` ends with live: how much of it was not sent, if any was."""
        if not self.held_back:
            return ""
        sent = "were not streamed: see its log artifact"
        return f"\n[{self.held_back} more characters of {name} {sent}]\n"


@dataclass(eq=False)
class _Stream:
    """One stream's redactor, log artifact, tail and live budget."""

    redacting: RedactingStream
    writer: ArtifactWriting | None = None
    tail: str = ""
    live: LiveBudget = field(default_factory=LiveBudget)
    size: int = 0
    """Characters of redacted output."""
    cap: int | None = None
    """The most bytes its log artifact holds (the command's file size limit)."""
    stored: int = 0
    """Bytes in its log artifact."""
    over: bool = False
    """Whether the output went past ``cap`` (what came after is not in the artifact)."""

    def keep(self, text: str) -> None:
        """Append redacted ``text`` to the artifact (up to ``cap``) and the tail (a worker
        thread)."""
        if not text:
            return
        if self.writer is not None and not self.over:
            data = text.encode("utf-8")
            if self.cap is not None and self.stored + len(data) > self.cap:
                # cut on a character's boundary
                data = data[: self.cap - self.stored].decode("utf-8", "ignore").encode("utf-8")
                self.over = True
            self.writer.write(data)
            self.stored += len(data)
        self.size += len(text)
        self.tail = (self.tail + text[-TAIL_CHARS:])[-TAIL_CHARS:]


@dataclass(eq=False)
class CommandOutput:
    """The output of one command run of ``run``; see the module docstring."""

    run: ToolRun
    command_run_id: str
    cap: int | None = None
    """The most bytes each stream's log artifact holds (``_Stream.cap``)."""
    on_over: Callable[[], object] | None = None
    """Called once, on the Trio thread, when a stream went past ``cap``: ends the command."""
    streams: dict[str, _Stream] = field(default_factory=dict)
    ended: bool = False
    """Whether ``forward`` saw both streams end (a timeout cancels it before)."""
    received: int = 0
    """Bytes read from both streams so far."""

    def __post_init__(self) -> None:
        for name in _STREAMS:
            self.streams[name] = _Stream(self.run.redactor.stream(), cap=self.cap)

    async def forward(self, receive: trio.MemoryReceiveChannel[tuple[str, bytes]]) -> None:
        """Redact, store and stream every chunk ``receive`` yields, then the streams' ends."""
        async with receive:
            while True:
                try:
                    batch = [await receive.receive()]
                except trio.EndOfChannel:
                    break
                size = len(batch[0][1])
                while size < BATCH_BYTES:
                    try:
                        item = receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    batch.append(item)
                    size += len(item[1])
                for kind, _ in batch:
                    self._open(kind)
                self.received += size
                if self.received < INLINE_BYTES:  # a small output: all of it is under this
                    await self._publish(self._take(batch))
                else:
                    await self._publish(await trio.to_thread.run_sync(self._take, batch))
                if self.on_over is not None and self.over_cap() is not None:
                    self.on_over()
                    self.on_over = None
        if any(stream.writer is not None for stream in self.streams.values()):
            await self._publish(await trio.to_thread.run_sync(self._finish))
        else:  # no output at all: nothing to redact or fsync
            await self._publish(self._finish())
        self.ended = True
        for name, stream in self.streams.items():
            if note := stream.live.note(name):
                await self._send(name, note)

    def _open(self, kind: str) -> None:
        """Open the log artifact of ``kind`` at its first output (on the Trio thread)."""
        stream = self.streams[kind]
        if stream.writer is None:
            stream.writer = self.run.open_artifact(
                ArtifactType.LOG, kind, extension=".log", command_run_id=self.command_run_id
            )

    def _take(self, batch: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
        """Redact and store ``batch`` (a worker thread; the Trio thread for a small batch); the
        texts to stream, in order."""
        out: list[tuple[str, str]] = []
        for kind, data in batch:
            text = self.streams[kind].redacting.feed_bytes(data)
            self.streams[kind].keep(text)
            if not text:
                continue
            if out and out[-1][0] == kind:
                out[-1] = (kind, out[-1][1] + text)
            else:
                out.append((kind, text))
        return out

    def _end(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for kind, stream in self.streams.items():
            text = stream.redacting.finish()
            stream.keep(text)
            if text:
                out.append((kind, text))
        return out

    def _finish(self) -> list[tuple[str, str]]:
        """The streams' ends (``_end``), then every log artifact closed (fsynced): one
        worker-thread call at the end of the output (a worker thread)."""
        out = self._end()
        for stream in self.streams.values():
            if stream.writer is not None:
                stream.writer.close()
        return out

    async def _publish(self, texts: list[tuple[str, str]]) -> None:
        for kind, text in texts:
            if live := self.streams[kind].live.take(text):
                await self._send(kind, live)

    async def _send(self, kind: str, text: str) -> None:
        await send_live(self.run, self.command_run_id, kind, text)

    async def store(self) -> dict[str, str]:
        """Store each stream that wrote anything as its log artifact; stream name -> id. After
        a timeout, the unfinished last line of each stream is stored too."""
        if not self.ended:
            await trio.to_thread.run_sync(self._finish)
            self.ended = True
        refs: dict[str, str] = {}
        for name, stream in self.streams.items():
            writer, stream.writer = stream.writer, None
            if writer is None:
                continue
            if writer.size == 0:
                writer.discard()
                continue
            ref = writer.commit()  # closed by ``_finish``: commit only renames and records
            self.run.attach(ref)
            refs[name] = ref.artifact_id
        return refs

    def discard(self) -> None:
        """Drop the log artifacts (the command failed before its output was complete)."""
        for stream in self.streams.values():
            writer, stream.writer = stream.writer, None
            if writer is not None:
                writer.discard()

    def over_cap(self) -> str | None:
        """The stream whose output went past ``cap`` (first in order), if one did."""
        return next((name for name, stream in self.streams.items() if stream.over), None)

    def result(self, name: str) -> str:
        """The end of stream ``name``, redacted (the whole of it when it is short)."""
        return self.streams[name].tail

    def truncated(self, name: str) -> bool:
        """Whether stream ``name`` was longer than its ``result``."""
        stream = self.streams[name]
        return stream.size > len(stream.tail)
