"""How the C++ toolchain runs a command: the ``CommandRunner`` seam and its plain local form.

Owns ``CommandResult``, ``CommandRunner`` (the protocol every runner implements: the tools
layer's sandboxed runner records ``command_runs``; ``LocalCommandRunner`` runs the command
directly for benchmarks and for code that has no session), ``read_workspace_file``, the one
way the toolchain reads a file a command wrote (no symlinks, inside the workspace, bounded;
``remove_written_file`` removes one), both through the read-only view of the call in progress
when there is one (``air.cpp.view``), and ``parse_tool_xml``, the one way it parses XML a tool
wrote (no DTD, no entities).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

import trio

from air.contracts.error import AirException, ErrorKind
from air.cpp.view import active_view
from air.small_file import NotRegular, open_regular

__all__ = [
    "KEPT_BYTES",
    "Child",
    "CommandResult",
    "CommandRunner",
    "LocalCommandRunner",
    "OutputSink",
    "Spawn",
    "is_plain_file",
    "parse_tool_xml",
    "read_workspace_file",
    "remove_written_file",
]

Spawn = Callable[..., "subprocess.Popen[bytes]"]
"""Starts the process itself (``stdin=``, ``stdout=``, ``stderr=`` keyword arguments, as for
``subprocess.Popen``), e.g. inside the tools layer's sandbox; it must start a new session."""

OutputSink = Callable[[str, str], Awaitable[None]]
"""``(stream name "stdout"|"stderr", decoded chunk)``, called as output arrives; an empty chunk
says the stream ended (before the runner records the command's end)."""


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int = 0
    command_run_id: str | None = None
    """The ``command_runs`` row that recorded it (None when nothing recorded it)."""
    timed_out: bool = False


class CommandRunner(Protocol):
    """Runs one argv in the workspace and reports its output as it arrives."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        timeout_s: float,
        on_output: OutputSink | None = None,
    ) -> CommandResult: ...


KEPT_BYTES = 64 << 20
"""The most of each stream ``run_argv`` keeps: a build's diagnostics come first, and a runaway
step's output past this is counted, not held (the parent's memory stays bounded)."""


async def _pump(
    stream: trio.abc.ReceiveStream,
    name: str,
    sink: list[bytes],
    cb: OutputSink | None,
    keep: int = KEPT_BYTES,
) -> None:
    decoder = _Decoder()
    kept = dropped = 0
    async for chunk in stream:
        take = min(keep - kept, len(chunk))
        if take:
            sink.append(bytes(chunk[:take]))
            kept += take
        dropped += len(chunk) - take
        if cb is not None:
            text = decoder.feed(bytes(chunk))
            if text:
                await cb(name, text)
    if dropped:
        sink.append(
            f"\n[air kept the first {keep:,} bytes: {dropped:,} more were not kept]\n".encode()
        )
    if cb is not None:
        rest = decoder.flush()
        if rest:
            await cb(name, rest)
        await cb(name, "")


class _Decoder:
    """UTF-8 across chunk boundaries (a character split between two reads is kept whole)."""

    def __init__(self) -> None:
        import codecs

        self._d = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> str:
        return str(self._d.decode(data))

    def flush(self) -> str:
        return str(self._d.decode(b"", final=True))


class Child:
    """A child process started from the Trio thread itself, with Trio streams on its pipes.

    ``trio.lowlevel.open_process`` forks from a worker thread of Trio's thread cache; that
    thread exits after 10 idle seconds, and bubblewrap's ``--die-with-parent`` (a parent-death
    signal, which Linux ties to the forking *thread*) then SIGKILLs the sandbox: every
    sandboxed command longer than ~10 s died with -9. Forking from the thread that runs Trio
    ties the parent-death signal to the process's lifetime instead. Exit is observed by
    polling (no thread): 1 ms, doubling up to 50 ms.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: dict[str, str] | None,
        stdin: bool = False,
        stderr: bool = True,
        spawn: Spawn | None = None,
    ) -> None:
        stdin_pipe = subprocess.PIPE if stdin else subprocess.DEVNULL
        stderr_pipe = subprocess.PIPE if stderr else subprocess.DEVNULL
        if spawn is not None:
            self._popen = spawn(stdin=stdin_pipe, stdout=subprocess.PIPE, stderr=stderr_pipe)
        else:
            self._popen = subprocess.Popen(
                list(argv),
                stdin=stdin_pipe,
                stdout=subprocess.PIPE,
                stderr=stderr_pipe,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        self.pid = self._popen.pid
        self.stdin = self._stream(self._popen.stdin)
        self.stdout = self._stream(self._popen.stdout)
        self.stderr = self._stream(self._popen.stderr)

    @staticmethod
    def _stream(f: IO[bytes] | None) -> trio.lowlevel.FdStream | None:
        if f is None:
            return None
        stream = trio.lowlevel.FdStream(os.dup(f.fileno()))
        f.close()
        return stream

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        delay = 0.001
        while (code := self._popen.poll()) is None:
            await trio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return code

    async def aclose(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                await stream.aclose()


def _kill(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run_argv(
    argv: Sequence[str],
    *,
    cwd: str,
    timeout_s: float,
    env: dict[str, str] | None = None,
    on_output: OutputSink | None = None,
    spawn: Spawn | None = None,
    keep: int = KEPT_BYTES,
) -> tuple[int | None, bytes, bytes, bool]:
    """Run ``argv`` in its own process group; TERM → KILL on timeout or cancellation.

    Returns:
        (exit code or None when killed, stdout, stderr, timed out): of each stream its first
        ``keep`` bytes, and a line saying how many more there were (``on_output`` sees all).
    """
    out: list[bytes] = []
    err: list[bytes] = []
    proc = Child(argv, cwd=cwd, env=env, spawn=spawn)
    timed_out = False
    try:
        with trio.move_on_after(timeout_s) as scope:
            assert proc.stdout is not None
            assert proc.stderr is not None
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, proc.stdout, "stdout", out, on_output, keep)
                nursery.start_soon(_pump, proc.stderr, "stderr", err, on_output, keep)
            await proc.wait()
        timed_out = scope.cancelled_caught
    finally:
        if proc.returncode is None:
            # Shielded and bounded: the group must die even when the caller was cancelled.
            with trio.move_on_after(3, shield=True):
                _kill(proc.pid, signal.SIGTERM)
                with trio.move_on_after(1):
                    await proc.wait()
                _kill(proc.pid, signal.SIGKILL)
                await proc.wait()
        _kill(proc.pid, signal.SIGKILL)
        with trio.move_on_after(1, shield=True):
            # why shielded: the pipes are ours to close even when the caller was cancelled
            await proc.aclose()
    code = None if timed_out else proc.returncode
    return code, b"".join(out), b"".join(err), timed_out


@dataclass
class LocalCommandRunner:
    """Runs commands directly, unsandboxed and unrecorded (benchmarks, tests of air/cpp)."""

    env: dict[str, str] | None = None

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        timeout_s: float,
        on_output: OutputSink | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        code, out, err, timed_out = await run_argv(
            argv, cwd=cwd, timeout_s=timeout_s, env=self.env, on_output=on_output
        )
        return CommandResult(
            exit_code=-1 if code is None else code,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            duration_ms=int((time.monotonic() - started) * 1000),
            timed_out=timed_out,
        )


def is_plain_file(*parts: str) -> bool:
    """True when the joined path is a regular file and not a symlink (cheap, synchronous),
    as the read-only view of the call in progress shows it, if there is one."""
    path = os.path.join(*parts)
    view = active_view()
    if view is not None:
        located = view.locate(path)
        if located is None:
            return False
        path = located
    return os.path.isfile(path) and not os.path.islink(path)


def remove_written_file(workspace: str, path: str) -> None:
    """Remove ``path`` (relative to ``workspace``), a file a command wrote; in a read-only view
    only the view's copy is removed, never a file of the project."""
    full = os.path.join(os.path.realpath(workspace), path)
    view = active_view()
    if view is not None:
        located = view.locate(full)
        if located is None or not view.in_upper(located):
            return
        full = located
    os.unlink(full)


def read_workspace_file(workspace: str, path: str, *, limit: int = 16 << 20) -> bytes | None:
    """Read a file a command wrote inside ``workspace``: None when it does not exist.

    Raises:
        AirException(policy_error): the path is a symlink, not a regular file, outside the
            workspace or larger than ``limit`` (a command in the workspace may plant any of
            them to make the parent read something else).
    """
    ws = os.path.realpath(workspace)
    full = os.path.join(ws, path)
    view = active_view()
    if view is not None:
        located = view.locate(full)
        if located is None:
            return None
        if view.in_upper(located):
            ws, full = view.upper, located
    parent = os.path.realpath(os.path.dirname(full))
    if parent != ws and not parent.startswith(ws + os.sep):
        raise _refuse(f"{path} is outside the workspace")
    target = os.path.join(parent, os.path.basename(full))
    try:
        fd = open_regular(target, exact=True)  # the file checked, not a link put there since
    except FileNotFoundError:
        return None
    except NotRegular as exc:
        raise _refuse(f"{path} is not a regular file") from exc
    except OSError as exc:
        raise _refuse(f"{path} cannot be opened safely ({exc.strerror})") from exc
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise _refuse(f"{path} is larger than {limit} bytes")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > limit:
                raise _refuse(f"{path} grew past {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_tool_xml(
    xml: str | bytes, *, report: str, writer: str, dtd_action: str, parse_action: str
) -> ET.Element:
    """The root element of XML a tool wrote (``report`` names it in messages).

    A tool under a workspace command's control may write anything: a DTD or an entity
    declaration is refused before any entity is expanded (``writer`` never writes one).

    Raises:
        AirException(tool_error): the XML declares a DTD or entities, or does not parse.
    """
    if _declares_dtd(xml):
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message=f"{report} declares a DTD or entities; {writer} never writes one",
            user_action=dtd_action,
        )
    try:
        return ET.fromstring(xml)
    except (ET.ParseError, ValueError) as exc:  # ValueError: a multi-byte codec expat lacks
        raise AirException.of(
            kind=ErrorKind.TOOL_ERROR,
            message=f"{report} does not parse: {exc}",
            user_action=parse_action,
        ) from exc


class _Declared(Exception):
    pass


def _declares_dtd(xml: str | bytes) -> bool:
    """Whether expat meets a document type declaration (where entities are declared) in
    ``xml``, stopping there: in any encoding the XML declares (a byte search for
    ``<!DOCTYPE`` missed one in UTF-16). A document that does not parse says False here and
    fails the real parse after."""
    from xml.parsers import expat

    def declared(*_: object) -> None:
        raise _Declared

    scan = expat.ParserCreate()
    scan.StartDoctypeDeclHandler = declared
    scan.EntityDeclHandler = declared
    try:
        scan.Parse(xml, True)
    except _Declared:
        return True
    except (expat.ExpatError, ValueError):  # ValueError: an encoding pyexpat cannot read
        return False
    return False


def _refuse(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.POLICY_ERROR,
        message=f"refused to read a tool's output file: {message}",
        user_action="Remove the file the build or test left in its place and run again.",
    )
