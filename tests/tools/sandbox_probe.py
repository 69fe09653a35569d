"""Run commands in air's sandbox as whoever runs this file, for the sandbox tests.

``python -m tests.tools.sandbox_probe WORKSPACE`` reads JSON lines ``{"command": ...}`` (and
optionally ``"workspace"``, ``"read_only"`` — a task id whose view to use —, ``"limits"`` —
``ResourceLimits`` fields, ``"network"`` — granted the host's network, ``"claim"`` — build dirs
the probe's cpp tools make first, ``"guard"`` — a non-cpp command: they are read-only,
``"cover"`` — a dir the command sees behind a scratch overlay) on stdin and answers each with
``{"exit_code", "stdout", "stderr", "limit", "thrown_away"}`` (what the overlay caught),
spawning through the same ``open_sandboxed`` (argv, memfds, environment allowlist,
``CommandSpace``) and ``LimitWatch`` that shell.run uses; ``limit`` names the resource limit
that ended the command, if one did.
The tests run it under ``setpriv`` to prove the sandbox as an unprivileged user when the suite
runs as root.

``Sandboxed`` is the test-side handle: a workspace, a HOME of planted secrets and one probe.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from air.tools.build_dirs import claim_build_dir
from air.tools.limits import LimitWatch, ResourceLimits
from air.tools.sandbox import SandboxRunner, sandbox_environment
from air.tools.sandbox_spawn import CommandSpace, open_sandboxed
from air.tools.task_view import remove_scratch_dir, scratch_dir, task_view_dir
from tests.gitrepo import git

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def main() -> int:
    workspace = sys.argv[1]
    runner = SandboxRunner()
    runner.check_available()
    for line in sys.stdin:
        request = json.loads(line)
        answer = trio.run(_answer, runner, request, request.get("workspace", workspace))
        print(json.dumps(answer), flush=True)
    return 0


async def _answer(runner: SandboxRunner, request: dict[str, Any], where: str) -> dict[str, Any]:
    limits = ResourceLimits(**request.get("limits", {}))
    view = task_view_dir(where, "probe", request["read_only"]) if request.get("read_only") else None
    for build_dir in request.get("claim", ()):
        claim_build_dir(where, build_dir)  # this process's cpp tools made it (IMPL-CPP-5)
    with CommandSpace(limits, view_dir=view) as space:
        space.guard_build_dirs = bool(request.get("guard"))
        space.hidden = tuple(os.path.join(where, rel) for rel in request.get("hide", ()))
        scratch = scratch_dir() if request.get("cover") else None
        if scratch is not None:
            space.cover(scratch, os.path.join(where, request["cover"]))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            proc = open_sandboxed(
                runner,
                request["command"],
                workspace=where,
                cwd=where,
                network=bool(request.get("network")),
                env=sandbox_environment(os.environ),
                stdout=out_w,
                stderr=err_w,
                space=space,
            )
        finally:
            os.close(out_w)
            os.close(err_w)
        watch = LimitWatch(limits, proc.pid, space.cgroup)
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}

        async def read(fd: int) -> None:
            async with trio.lowlevel.FdStream(fd) as stream:
                async for chunk in stream:
                    chunks[fd].append(bytes(chunk))

        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch.watch)
                async with trio.open_nursery() as readers:
                    readers.start_soon(read, out_r)
                    readers.start_soon(read, err_r)
                await trio.to_thread.run_sync(proc.wait)
                nursery.cancel_scope.cancel()
    thrown_away = sorted(os.listdir(os.path.join(scratch, "u"))) if scratch else []
    if scratch is not None:
        remove_scratch_dir(scratch)
    return {
        "thrown_away": thrown_away,
        "exit_code": proc.returncode,
        "stdout": b"".join(chunks[out_r]).decode("utf-8", "replace"),
        "stderr": b"".join(chunks[err_r]).decode("utf-8", "replace"),
        "limit": watch.verdict(proc.returncode),
    }


def process_table(*, environ: bool = False) -> list[tuple[int, list[bytes], list[bytes]]]:
    """Every process this user may read: its pid, argv and (with ``environ``) environment."""
    table = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            env: list[bytes] = []
            if environ:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    env = fh.read().split(b"\0")
        except OSError:
            continue
        table.append((int(name), argv, env))
    return table


def _world_executable(path: str) -> bool:
    real = os.path.realpath(path)
    parts = Path(real).parents
    return all(os.stat(p).st_mode & 0o001 for p in parts) and bool(os.stat(real).st_mode & 0o001)


def unprivileged_python() -> str:
    """An interpreter ``nobody`` may run with this interpreter's ABI (venvs may live in /root)."""
    candidates = [sys.executable, f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"]
    for candidate in candidates:
        if os.path.exists(candidate) and _world_executable(candidate):
            return candidate
    raise AssertionError(f"no Python that uid {NOBODY} can run among {candidates}")


def unprivileged_dir(parent: str = "/tmp") -> Path:
    """A fresh directory owned by ``nobody`` in a place ``nobody`` can reach, removed when the
    test process ends (outside pytest's temporary directories, which ``nobody`` cannot reach)."""
    import atexit
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="air-sbx-", dir=parent))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    path.chmod(0o755)
    os.chown(path, NOBODY, NOBODY)
    return path


def chown_tree(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)
    os.chown(root, NOBODY, NOBODY)


class Probe:
    """A running ``sandbox_probe`` process: ``run(command)`` returns its answer."""

    def __init__(
        self, workspace: Path, *, home: Path, unprivileged: bool, extra_env: dict[str, str]
    ):
        python = unprivileged_python() if unprivileged else sys.executable
        paths = [str(REPO), *site.getsitepackages()]
        env = {
            **os.environ,
            **extra_env,
            "HOME": str(home),
            "TMPDIR": str(home.parent),  # read-only views live with the test's own files
            "PYTHONPATH": os.pathsep.join(paths),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        argv = [python, "-m", "tests.tools.sandbox_probe", str(workspace)]
        if unprivileged:
            setpriv = shutil.which("setpriv")
            assert setpriv is not None, "setpriv (util-linux) is needed to test as nobody"
            argv = [
                setpriv,
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                *argv,
            ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(workspace) if unprivileged else str(REPO),
            text=True,
        )

    def run(
        self,
        command: str,
        workspace: Path | None = None,
        *,
        read_only: str | None = None,
        limits: dict[str, int] | None = None,
        network: bool = False,
        claim: tuple[str, ...] = (),
        guard: bool = False,
        cover: str | None = None,
        hide: tuple[str, ...] = (),
    ) -> dict[str, object]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        request = {
            "command": command,
            **({"workspace": str(workspace)} if workspace else {}),
            **({"read_only": read_only} if read_only else {}),
            **({"limits": limits} if limits else {}),
            **({"network": True} if network else {}),
            **({"claim": list(claim)} if claim else {}),
            **({"guard": True} if guard else {}),
            **({"cover": cover} if cover else {}),
            **({"hide": list(hide)} if hide else {}),
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            raise AssertionError(f"the probe died: {self.proc.stderr.read()}")
        answer: dict[str, object] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


_SPAWN = """
import os, sys, trio
from air.tools.limits import ResourceLimits
from air.tools.sandbox import SandboxRunner, sandbox_environment
from air.tools.sandbox_spawn import CommandSpace, start_sandboxed

async def main(command):
    here = os.getcwd()
    proc = start_sandboxed(SandboxRunner(), command, workspace=here, cwd=here,
                           network=False, env=sandbox_environment(os.environ),
                           space=CommandSpace(ResourceLimits()))
    os.write(1, b"%d\\n" % proc.pid)
    os._exit(0)  # right after the fork, before bwrap armed its parent-death signal
"""

SPAWN_AND_DIE = _SPAWN + "trio.run(main, sys.argv[1])\n"
"""``python -c SPAWN_AND_DIE COMMAND``: a runtime (air, the remote executor on its stdin's end)
killed right after it started a sandboxed command in its working directory; prints bwrap's PID."""

SPAWN_EACH_AND_DIE = (
    _SPAWN
    + """
for command in sys.argv[1:]:
    child = os.fork()
    if child == 0:
        try:
            trio.run(main, command)
        finally:
            os._exit(1)
    assert os.waitpid(child, 0)[1] == 0, command
"""
)
"""``python -c SPAWN_EACH_AND_DIE COMMAND...``: ``SPAWN_AND_DIE`` once per command, each in a
process forked from this one after the imports (a fresh runtime that dies right after its
fork of bwrap, without an interpreter start each); prints one bwrap PID a line."""


IDENTITIES = ["self", "nobody"] if os.geteuid() == 0 else ["self"]
"""Who runs air in the sandbox tests: the suite's own user, and ``nobody`` when that is root."""

SECRETS = {
    ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nAIRSBXSECRETSSH\n",
    ".aws/credentials": "[default]\naws_secret_access_key = AIRSBXSECRETAWS\n",
    ".netrc": "machine example.com login me password AIRSBXSECRETNETRC\n",
    ".bashrc": "# AIRSBXSECRETBASHRC\n",
}
"""Files planted in the HOME air runs with; no sandboxed command may read any of them."""


class Sandboxed:
    """A workspace (a git repo), a HOME full of ``SECRETS`` and a probe running as ``identity``."""

    def __init__(self, base: Path, identity: str, extra_env: dict[str, str]) -> None:
        self.unprivileged = identity == "nobody"
        self.base = unprivileged_dir() if self.unprivileged else base
        self.workspace = self.base / "ws"
        self.home = self.base / "home"
        self.workspace.mkdir()
        git(self.workspace, "init", "-q")
        for rel, text in SECRETS.items():
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if self.unprivileged:
            chown_tree(self.base)
        self.probe = Probe(
            self.workspace, home=self.home, unprivileged=self.unprivileged, extra_env=extra_env
        )

    def run(
        self,
        command: str,
        workspace: Path | None = None,
        *,
        read_only: str | None = None,
        limits: dict[str, int] | None = None,
        network: bool = False,
        claim: tuple[str, ...] = (),
        guard: bool = False,
        cover: str | None = None,
        hide: tuple[str, ...] = (),
    ) -> dict[str, object]:
        """Run ``command``; ``read_only``: in the read-only view of this task id; ``limits``:
        ``ResourceLimits`` fields; ``network``: granted the host's network; ``claim``: build dirs
        the cpp tools make first; ``guard``: as shell.run, with them read-only; ``cover``: this
        workspace dir behind a scratch overlay, as cpp.test's build dir; ``hide``: workspace
        entries the command may not see (``hidden_from_commands``)."""
        return self.probe.run(
            command,
            workspace,
            read_only=read_only,
            limits=limits,
            network=network,
            claim=claim,
            guard=guard,
            cover=cover,
            hide=hide,
        )

    def close(self) -> None:
        self.probe.close()
        if self.unprivileged:
            shutil.rmtree(self.base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
