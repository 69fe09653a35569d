"""ClangdClient: clangd over stdio (LSP) for one file's diagnostics, definition, references, hover.

Owns the sans-IO ``LspFraming`` (``Content-Length`` framed JSON-RPC, bounded message size),
``ClangdQueryInput`` / ``ClangdQueryOutput``, ``ClangdClient`` and ``open_clangd``, the async
context manager that starts one clangd for one workspace, owns the nursery of its reader and
reaps it on the way out — also when the caller is cancelled: ``shutdown``/``exit`` politely
(bounded), then SIGTERM to its process group, a grace period, then SIGKILL (a clangd that
ignores SIGTERM is still gone). Time is bounded per request; memory by an address-space limit
(``ulimit -v``) applied by the shell that starts clangd. ``ClangdPool`` keeps at most one
server per workspace for front ends that query repeatedly.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from air.contracts.error import AirException, ErrorKind
from air.cpp.process import Child, Spawn
from air.small_file import open_regular

__all__ = [
    "ClangdClient",
    "ClangdPool",
    "ClangdQueryInput",
    "ClangdQueryOutput",
    "LspFraming",
    "clangd_command",
    "open_clangd",
]

MAX_MESSAGE = 16 << 20
_GRACE_S = 1.0


class LspFraming:
    """Feed bytes, get decoded JSON-RPC messages (``Content-Length`` framing, sans-IO)."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self._buf = bytearray()
        self._limit = limit

    @staticmethod
    def encode(message: dict[str, Any]) -> bytes:
        body = json.dumps(message, separators=(",", ":")).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Messages completed by ``data``.

        Raises:
            AirException(protocol_error): a header without a length, a message over the
                limit or a body that is not a JSON object.
        """
        self._buf += data
        out: list[dict[str, Any]] = []
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > 8192:
                    raise _protocol("an LSP header longer than 8 KiB")
                return out
            length = None
            for line in bytes(self._buf[:end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        raise _protocol("a bad Content-Length") from None
            if length is None or length < 0:
                raise _protocol("an LSP message without Content-Length")
            if length > self._limit:
                raise _protocol(f"an LSP message of {length} bytes (limit {self._limit})")
            start = end + 4
            if len(self._buf) < start + length:
                return out
            body = bytes(self._buf[start : start + length])
            del self._buf[: start + length]
            try:
                message = json.loads(body)
            except (ValueError, RecursionError):
                raise _protocol("an LSP body that is not JSON") from None
            if not isinstance(message, dict):
                raise _protocol("an LSP body that is not an object")
            out.append(message)


def _gone_error() -> AirException:
    return AirException.of(
        kind=ErrorKind.TOOL_ERROR,
        message="clangd exited before it answered",
        user_action="Check the clangd installation, the compile database and the memory limit.",
    )


def _protocol(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.PROTOCOL_ERROR,
        message=f"clangd sent {message}",
        user_action="Check the clangd installation (clangd --version).",
    )


@dataclass(frozen=True)
class ClangdQueryInput:
    file: str
    """Workspace-relative path of the file to ask about."""
    line: int | None = None
    """1-based position for definition, references and hover (None: diagnostics only)."""
    column: int | None = None
    timeout_s: float = 30.0


@dataclass(frozen=True)
class ClangdQueryOutput:
    file: str
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    definition: list[dict[str, Any]] = field(default_factory=list)
    references: list[dict[str, Any]] = field(default_factory=list)
    hover: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "diagnostics": self.diagnostics[:100],
            "definition": self.definition[:20],
            "references": self.references[:200],
            "hover": (self.hover or "")[:4000] or None,
        }


def clangd_command(
    compile_commands_dir: str | None, *, memory_mb: int = 4096, program: str = "clangd"
) -> str:
    """The shell command that starts clangd with its address space bounded."""
    args = [program, "--log=error", "--background-index=false", "--pch-storage=disk", "-j=1"]
    if compile_commands_dir:
        args.append(f"--compile-commands-dir={compile_commands_dir}")
    return f"ulimit -v {int(memory_mb) * 1024}; exec {shlex.join(args)}"


class ClangdClient:
    """Requests to one running clangd (built by ``open_clangd``)."""

    def __init__(self, workspace: str, send: trio.abc.SendStream) -> None:
        self.workspace = os.path.realpath(workspace)
        self._send = send
        self._lock = trio.Lock()
        self._next = 0
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._diagnostics: dict[str, list[dict[str, Any]]] = {}
        self._diag_events: dict[str, trio.Event] = {}
        self._opened: dict[str, int] = {}
        self.initialized = False
        self.failure: AirException | None = None
        self.closed = False
        """clangd's output ended (it exited or was killed)."""

    # -- wire ---------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise _gone_error()
        try:
            async with self._lock:
                await self._send.send_all(LspFraming.encode({"jsonrpc": "2.0", **message}))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise _gone_error() from exc

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._write({"method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """Send a request and wait (bounded) for its response's result.

        Raises:
            AirException(timeout | tool_error): no answer in time, or an error answer.
        """
        self._next += 1
        rid = self._next
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[rid] = send
        try:
            await self._write({"id": rid, "method": method, "params": params})
            if self.closed:
                raise _gone_error()
            with trio.move_on_after(timeout_s) as scope:
                reply = await receive.receive()
            if scope.cancelled_caught:
                raise AirException.of(
                    kind=ErrorKind.TIMEOUT,
                    message=f"clangd did not answer {method} within {timeout_s:g}s",
                    user_action="Raise timeout_s, or check that compile_commands.json exists.",
                )
        finally:
            self._waiting.pop(rid, None)
        if "error" in reply and self.closed:
            raise _gone_error()
        if "error" in reply:
            raise AirException.of(
                kind=ErrorKind.TOOL_ERROR,
                message=f"clangd refused {method}: {reply['error'].get('message', reply['error'])}",
                user_action="Check the file and position.",
            )
        return reply.get("result")

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Route one message from clangd (called by the reader)."""
        if "id" in message and "method" in message:
            # a server request (workDoneProgress/create, ...): acknowledge with null
            await self._write({"id": message["id"], "result": None})
            return
        if "id" in message:
            waiter = self._waiting.get(message["id"])
            if waiter is not None:
                waiter.send_nowait(message)
            return
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message.get("params") or {}
            uri = str(params.get("uri", ""))
            self._diagnostics[uri] = list(params.get("diagnostics") or [])
            self._diag_events.setdefault(uri, trio.Event()).set()

    # -- LSP ----------------------------------------------------------------------------

    async def initialize(self, timeout_s: float) -> None:
        await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": Path(self.workspace).as_uri(),
                "capabilities": {
                    "textDocument": {
                        "publishDiagnostics": {"relatedInformation": True},
                        "hover": {"contentFormat": ["plaintext"]},
                    }
                },
            },
            timeout_s,
        )
        await self.notify("initialized", {})
        self.initialized = True

    def _path(self, file: str) -> str:
        full = os.path.realpath(os.path.join(self.workspace, file))
        if not full.startswith(self.workspace + os.sep) or not os.path.isfile(full):
            raise _not_a_file(file)
        return full

    async def query(self, input: ClangdQueryInput) -> ClangdQueryOutput:
        """Open ``input.file`` and ask what was requested (SDD §15 ``ClangdClient.query``)."""
        full = self._path(input.file)
        uri = Path(full).as_uri()
        text = _read_text(full)
        event = trio.Event()
        self._diag_events[uri] = event
        version = self._opened.get(uri, 0) + 1
        if uri in self._opened:
            await self.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": text}],
                },
            )
        else:
            await self.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "cpp",
                        "version": version,
                        "text": text,
                    }
                },
            )
        self._opened[uri] = version
        with trio.move_on_after(input.timeout_s) as scope:
            await event.wait()
        if scope.cancelled_caught:
            raise AirException.of(
                kind=ErrorKind.TIMEOUT,
                message=f"clangd published no diagnostics for {input.file} in {input.timeout_s:g}s",
                user_action="Raise timeout_s or check the compile database.",
            )
        out_diags = [self._diag(d) for d in self._diagnostics.get(uri, [])]
        definition: list[dict[str, Any]] = []
        references: list[dict[str, Any]] = []
        hover = None
        if input.line is not None:
            pos = {
                "textDocument": {"uri": uri},
                "position": {"line": input.line - 1, "character": max(0, (input.column or 1) - 1)},
            }
            found = await self.request("textDocument/definition", pos, input.timeout_s)
            definition = [self._loc(x) for x in _as_list(found)]
            refs = await self.request(
                "textDocument/references",
                {**pos, "context": {"includeDeclaration": True}},
                input.timeout_s,
            )
            references = [self._loc(x) for x in _as_list(refs)]
            shown = await self.request("textDocument/hover", pos, input.timeout_s)
            if isinstance(shown, dict):
                contents = shown.get("contents")
                hover = contents.get("value") if isinstance(contents, dict) else str(contents)
        return ClangdQueryOutput(input.file, out_diags, definition, references, hover)

    def _rel(self, uri: str) -> str:
        path = uri.removeprefix("file://")
        return os.path.relpath(path, self.workspace) if path.startswith(self.workspace) else path

    def _diag(self, d: dict[str, Any]) -> dict[str, Any]:
        start = (d.get("range") or {}).get("start") or {}
        severity = {1: "error", 2: "warning", 3: "note", 4: "note"}.get(
            d.get("severity", 1), "error"
        )
        return {
            "severity": severity,
            "line": int(start.get("line", 0)) + 1,
            "column": int(start.get("character", 0)) + 1,
            "message": str(d.get("message", "")),
            "code": d.get("code"),
            "source": d.get("source"),
        }

    def _loc(self, loc: dict[str, Any]) -> dict[str, Any]:
        uri = str(loc.get("uri") or loc.get("targetUri") or "")
        rng = loc.get("range") or loc.get("targetSelectionRange") or {}
        start = rng.get("start") or {}
        return {
            "file": self._rel(uri),
            "line": int(start.get("line", 0)) + 1,
            "column": int(start.get("character", 0)) + 1,
        }


def _read_text(path: str, limit: int = 4 << 20) -> str:
    """The text of ``path`` (a real path, checked inside the workspace), as opened: a file
    swapped for a link, or moved behind a linked directory, since the check (a command running
    beside the call) is refused, never followed to what it names now."""
    try:
        fd = open_regular(path, exact=True)
    except OSError as exc:
        raise _not_a_file(path) from exc
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def _not_a_file(file: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.VALIDATION_ERROR,
        message=f"{file} is not a file inside the workspace",
        user_action="Pass a workspace-relative path of an existing source file.",
    )


def _as_list(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [x for x in value if isinstance(x, dict)]
    return []


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _reader(
    stream: trio.abc.ReceiveStream, client: ClangdClient, framing: LspFraming
) -> None:
    try:
        async for chunk in stream:
            for message in framing.feed(bytes(chunk)):
                await client.dispatch(message)
    except AirException as exc:
        client.failure = exc
    # clangd is gone or spoke garbage: wake every waiter with an error answer
    client.closed = True
    for waiter in list(client._waiting.values()):
        waiter.send_nowait({"error": {"message": "clangd exited"}})


@asynccontextmanager
async def open_clangd(
    workspace: str,
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    init_timeout_s: float = 30.0,
    on_pid: Callable[[int], None] | None = None,
    spawn: Spawn | None = None,
) -> AsyncIterator[ClangdClient]:
    """Start clangd (``argv``, e.g. a sandbox argv around ``clangd_command``) for one workspace.

    The process and its group never outlive the block: on exit, error or cancellation it is
    asked to shut down (bounded), then sent SIGTERM, then SIGKILL after a grace period.
    """
    proc = Child(argv, cwd=workspace, env=env, stdin=True, stderr=False, spawn=spawn)
    if on_pid is not None:
        on_pid(proc.pid)
    assert proc.stdin is not None
    assert proc.stdout is not None
    client = ClangdClient(workspace, proc.stdin)
    try:
        async with _unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(_reader, proc.stdout, client, LspFraming())
            try:
                await client.initialize(init_timeout_s)
                yield client
            finally:
                with trio.move_on_after(_GRACE_S * 3, shield=True):
                    # why shielded: the server must be reaped even when the caller is cancelled
                    await _reap(proc, client)
                nursery.cancel_scope.cancel(reason="clangd closed")
    finally:
        if proc.returncode is None:
            _killpg(proc.pid, signal.SIGKILL)
        with trio.move_on_after(1, shield=True):
            # why shielded: wait (bounded) for the kill to land so no zombie is left
            await proc.wait()
            await proc.aclose()


@asynccontextmanager
async def _unwrapped() -> AsyncIterator[None]:
    """Re-raise a lone AirException out of the reader's nursery group (callers expect it)."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], AirException):
            raise group.exceptions[0] from None
        raise


async def _reap(proc: Child, client: ClangdClient) -> None:
    if proc.returncode is None and client.initialized and client.failure is None:
        with trio.move_on_after(_GRACE_S / 2):
            try:
                await client.request("shutdown", {}, _GRACE_S / 2)
                await client.notify("exit", {})
            except (AirException, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            await proc.wait()
    if proc.returncode is None:
        _killpg(proc.pid, signal.SIGTERM)
        with trio.move_on_after(_GRACE_S):
            await proc.wait()
    _killpg(proc.pid, signal.SIGKILL)  # the group: anything clangd (or a wrapper) left
    if proc.returncode is None:
        await proc.wait()


class ClangdPool:
    """At most one clangd per workspace at a time: queries on one workspace take turns."""

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}

    def lock(self, workspace: str) -> trio.Lock:
        return self._locks.setdefault(os.path.realpath(workspace), trio.Lock())
