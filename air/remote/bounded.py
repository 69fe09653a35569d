"""A host's command with bounded output, the parent's side (IMPL-REMOTE-4).

Owns ``run_bounded``: a command, in a process group of its own (a terminal's Ctrl-C never ends
it halfway), its stdout read into memory up to ``max_stdout`` bytes, or written
to a file up to that many, and its stderr up to ``STDERR_MAX``. A stream over its bound kills the
command, which then ends as exit -9 with a stderr line naming the bound: what a host prints (a
result bundle it made, a listing, a sweep's report) costs the parent bounded memory and disk,
whatever the host chose to send.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence

import trio

__all__ = ["STDERR_MAX", "STDOUT_MAX", "run_bounded"]

STDOUT_MAX = 16 << 20
"""What a host command's stdout may hold in memory (a listing of commits, a path, JSON)."""
STDERR_MAX = 1 << 20
"""What a host command's stderr may hold (quoted in errors: the last 2,000 characters)."""


_NEVER_RAN = (-signal.SIGINT, -signal.SIGQUIT)
"""Exit statuses of a command a terminal's signal ended before its exec (see ``run_bounded``)."""
_STARTS = 8


async def run_bounded(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    timeout_s: float,
    stdin: bytes = b"",
    cwd: str | None = None,
    max_stdout: int = STDOUT_MAX,
    stdout_path: str | None = None,
) -> subprocess.CompletedProcess[bytes] | None:
    """Run ``argv``; its stdout (empty when written to ``stdout_path``), stderr and exit code,
    or ``None`` when it did not end within ``timeout_s`` (it is killed).

    The command runs in a process group of its own: a Ctrl-C at the terminal (SIGINT to the
    foreground group) reaches air, which ends its work itself, never a host command halfway
    (a result's transfer, a ``scancel``). One the signal ended in the instant before it could
    leave air's group (before its exec: nothing printed) never ran, and is started again."""
    for _ in range(_STARTS - 1):
        done = await _run_once(argv, env, timeout_s, stdin, cwd, max_stdout, stdout_path)
        if done is None or done.returncode not in _NEVER_RAN or done.stdout or done.stderr:
            return done
    return await _run_once(argv, env, timeout_s, stdin, cwd, max_stdout, stdout_path)


async def _run_once(
    argv: Sequence[str],
    env: dict[str, str],
    timeout_s: float,
    stdin: bytes,
    cwd: str | None,
    max_stdout: int,
    stdout_path: str | None,
) -> subprocess.CompletedProcess[bytes] | None:
    sink = None if stdout_path is None else await trio.open_file(stdout_path, "wb")
    try:
        process = await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            process_group=0,
        )
    except BaseException:
        if sink is not None:
            with trio.CancelScope(shield=True):
                await sink.aclose()
        raise
    out: list[bytes] = []
    err: list[bytes] = []
    over: list[str] = []

    async def keep_out(chunk: bytes) -> None:
        if sink is None:
            out.append(chunk)
        else:
            await sink.write(chunk)

    async def keep_err(chunk: bytes) -> None:
        err.append(chunk)

    async def read(
        stream: trio.abc.ReceiveStream | None,
        keep: Callable[[bytes], Awaitable[None]],
        limit: int,
        name: str,
    ) -> None:
        assert stream is not None
        size = 0
        while chunk := await stream.receive_some(1 << 16):
            size += len(chunk)
            if size > limit:
                over.append(f"air: the host's command wrote more than {limit:,} bytes on {name}")
                process.kill()
                return
            await keep(bytes(chunk))

    async def feed() -> None:
        assert process.stdin is not None
        try:
            await process.stdin.send_all(stdin)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # it ended without reading all of it: its exit code says how it went
        finally:
            await process.stdin.aclose()

    try:
        with trio.move_on_after(timeout_s) as bounded:
            async with trio.open_nursery() as nursery:
                if stdin:
                    nursery.start_soon(feed)
                nursery.start_soon(read, process.stdout, keep_out, max_stdout, "stdout")
                nursery.start_soon(read, process.stderr, keep_err, STDERR_MAX, "stderr")
            await process.wait()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
            if sink is not None:
                await sink.aclose()
    if bounded.cancelled_caught:
        return None
    stderr = b"".join(err) + "".join(f"\n{line}" for line in over).encode()
    code = -9 if over or process.returncode is None else process.returncode
    return subprocess.CompletedProcess(list(argv), code, b"".join(out), stderr)
