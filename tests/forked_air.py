"""The real ``air`` command (``air.cli.main``) forked from one warm interpreter, for the tests
that run the command to completion (``air_cli``; tests/cli/test_bad_inputs.py's table).

Starting ``python -m air.cli`` costs ~0.8 s of CPU per case (the interpreter, trio, pydantic
and air's modules); a table of a hundred cases spent most of its time there. The server
imports every air module once; each request is a fresh process forked from it: its own pid,
cwd, environment (replaced whole), stdin from /dev/null, stdout and stderr to files, and an
exit code from ``main`` exactly as ``python -m air.cli`` derives it (an uncaught exception
prints its traceback and exits 1). test_bad_inputs.py checks that a few cases give the same
output both ways. ``shared(user)`` is a server of its own started as that user (the trust tests'
runs as ``nobody``), whose children are that user's from their start.

Protocol (``python -m tests.forked_air``): one JSON request per stdin line,
``{"argv": [...], "cwd": ..., "env": {...}, "timeout": s}``; one JSON line back,
``{"returncode": n, "stdout": ..., "stderr": ...}`` (returncode -9 after a timeout).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import os
import pkgutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import air
import air.cli

REPO = Path(__file__).resolve().parents[1]
MAIN = str(Path(air.cli.__file__).with_name("__main__.py"))
"""``sys.argv[0]`` as ``python -m air.cli`` sets it."""


def _warm() -> None:
    """Import every module of ``air`` but its test doubles (``air.testing``: scripts, some
    run on import) and ``__main__`` modules; the forked children then import almost nothing."""
    for info in pkgutil.walk_packages(air.__path__, "air."):
        if not info.name.startswith("air.testing") and not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def _exit_code(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(argv: list[str], cwd: str, env: Mapping[str, str], out: str, err: str) -> None:
    """Become ``python -m air.cli ARGV`` in ``cwd`` with ``env``; never returns."""
    code = 1
    try:
        atexit._clear()  # the server's exit functions (its temporary files) are not the child's
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(os.open(out, os.O_WRONLY), 1)
        os.dup2(os.open(err, os.O_WRONLY), 2)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv = [MAIN, *argv]
        try:
            code = _exit_code(air.cli.main(argv))
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_forked(request: Mapping[str, Any]) -> dict[str, Any]:
    """Run one request in a forked child and wait for it (killed at its timeout)."""
    with tempfile.TemporaryDirectory(prefix="forked-air-") as scratch:
        out, err = os.path.join(scratch, "out"), os.path.join(scratch, "err")
        for path in (out, err):
            Path(path).touch()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(list(request["argv"]), request["cwd"], request["env"], out, err)
        deadline = time.monotonic() + float(request["timeout"])
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                returncode = -9
                break
            time.sleep(0.005)
        return {
            "returncode": returncode,
            "stdout": Path(out).read_text(errors="replace"),
            "stderr": Path(err).read_text(errors="replace"),
        }


def serve(lines: IO[str], replies: IO[str]) -> None:
    _warm()
    for line in lines:
        replies.write(json.dumps(run_forked(json.loads(line))) + "\n")
        replies.flush()


class ForkedAir:
    """A client of one server process (``with ForkedAir() as air: air.run(...)``); calls are
    answered one at a time."""

    def __init__(self, user: int | None = None) -> None:
        """``user``: a server running as that uid and gid, with no other group, on an
        interpreter that user may run (``unprivileged_python``); None: this process's user
        and interpreter."""
        argv = [sys.executable, "-m", "tests.forked_air"]
        as_user: dict[str, Any] = {}
        if user is not None:
            from tests.tools.sandbox_probe import unprivileged_python

            paths = [str(REPO), *site.getsitepackages()]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
            argv[0] = unprivileged_python()
            as_user = {"env": env, "user": user, "group": user, "extra_groups": []}
        self._proc = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **as_user
        )

    def run(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """``python -m air.cli ARGV`` in ``cwd`` with exactly ``env``, as a forked process."""
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "timeout": timeout}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        reply = json.loads(self._proc.stdout.readline())
        return subprocess.CompletedProcess(
            ["air", *argv], reply["returncode"], reply["stdout"], reply["stderr"]
        )

    def __enter__(self) -> ForkedAir:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


@functools.cache
def shared(user: int | None = None) -> ForkedAir:
    """This test process's server (of ``user``: ``ForkedAir``), started at its first use and
    stopped at the process's exit (one per pytest-xdist worker: its tests call it one at a
    time)."""
    server = ForkedAir(user)
    atexit.register(server.__exit__, None, None, None)
    return server


def air_cli(
    args: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m air.cli ARGS`` in ``cwd`` with exactly ``env`` (None: this process's own),
    stdin from /dev/null, forked from the shared warm air: what a test of the command's
    behaviour needs, at a fraction of a fresh interpreter's start. (Tests of the start itself,
    of signals, of a running ``air`` or of what it reads on stdin start the real command.)"""
    where = Path.cwd() if cwd is None else Path(cwd)
    environment = dict(os.environ if env is None else env)
    return shared().run(args, cwd=where, env=environment, timeout=timeout)


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
