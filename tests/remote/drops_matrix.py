"""The drops × launchers × worker states matrix, the test's side (issue #27 item 6, Must show).

``run_matrix`` starts the parent side (tests/remote/drops_parent.py) in its own PID namespace
(``unshare --pid --fork --mount-proc``: root here; unprivileged, ``unshare --user
--map-root-user`` in front does the same), one process for every scenario but the parent
SIGKILLs and one for each of those (killing one must not end the others). This process, root in
the outer namespace, sees everything: it waits for each scenario's worker to reach its state, drops
it (SIGKILL of the local ssh/srun client found through the parent's namespace, an RST or a
black hole on the scenario's own ``FaultProxy`` between the ssh client and sshd, SIGKILL of the
parent, a cancel asked on the parent's stdin; a hard timeout and a completion drop themselves),
then samples /proc every 50 ms for the task's processes: those whose environment carries one of
its attempts' markers (the remote executor's ``exec_<tool run>_`` ones included) and the
scenario's own ``sleep`` of ``shell.run``. It records when the parent noticed
(cancelled the worker's call in progress or began tearing the worker down), when the last
process went, and how many attempts of the task were ever alive at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from air.testing.fault_proxy import FaultProxy
from tests.remote.conftest import CHECKOUT

RETRIED = {"client_kill", "reset", "black_hole", "hard_timeout"}
"""Drops after which the parent retries the task once (a drop → sweep → retry)."""
STATES = ("turn", "tree", "shell")
HARD_TIMEOUT_MS = {"turn": 9000, "tree": 9000, "shell": 20000}
"""A hard-timeout scenario's limit, counted from ``agent.started``: it must end the attempt in its
state, so it must outlast the way there. Reaching ``shell`` waits for the remote executor to start
beside twenty other scenarios' processes: 4-6 s here alone, over 9 s under the slow lane's load."""


@dataclass
class Scenario:
    id: str
    drop: str
    state: str
    index: int
    facts: list[dict[str, Any]] = field(default_factory=list)
    proxy: FaultProxy | None = None
    drop_t: float | None = None
    detect_t: float | None = None
    gone_since: float | None = None
    """The first sample of the current run of samples without the dropped attempt's processes
    (a completion's or hard timeout's drop time is only known once the outcome came)."""
    unreached: bool = False
    """Its attempt ended before its state, so its drop was never made (``NotReached``)."""
    max_live_attempts: int = 0
    ever_seen: int = 0
    peak: dict[str, int] = field(default_factory=dict)
    """The most processes the sampler saw at once, per marker (or ``exec`` / ``shell``)."""

    @property
    def zero_t(self) -> float | None:
        """When the last process of the dropped attempt was gone (the drop, if before it)."""
        if self.drop_t is None or self.gone_since is None:
            return None
        return max(self.drop_t, self.gone_since)

    def fact(self, ev: str, **match: Any) -> dict[str, Any] | None:
        for f in self.facts:
            if f["ev"] == ev and all(f.get(k) == v for k, v in match.items()):
                return f
        return None

    @property
    def markers(self) -> list[str]:
        return [f["marker"] for f in self.facts if f["ev"] == "launch"]

    @property
    def exec_prefixes(self) -> list[str]:
        return [f"exec_{f['tool_run_id']}_" for f in self.facts if f.get("tool_run_id")]

    @property
    def sleep_argv(self) -> bytes:
        return f"sleep\0{self.sleep_arg}\0".encode()

    @property
    def sleep_arg(self) -> str:
        """Its own among every matrix running on this machine: the ssh and srun matrices run at
        once under xdist, and a scenario counts every ``sleep`` of its argument as its own."""
        return f"600.{os.getpid()}{self.index:03d}"


def _environ(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _cmdline(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def task_processes(scenarios: list[Scenario]) -> dict[str, dict[str, int]]:
    """Per scenario: marker (or ``shell``) → live processes, from one /proc scan."""
    found: dict[str, dict[str, int]] = {s.id: {} for s in scenarios}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        env = _environ(name)
        cmd = _cmdline(name)
        for s in scenarios:
            counts = found[s.id]
            for marker in s.markers:
                if f"AIR_WORKER_RUN={marker}\0".encode() in env:
                    counts[marker] = counts.get(marker, 0) + 1
            for prefix in s.exec_prefixes:
                if f"AIR_WORKER_RUN={prefix}".encode() in env:
                    counts["exec"] = counts.get("exec", 0) + 1
            if s.state == "shell" and cmd == s.sleep_argv:
                counts["shell"] = counts.get("shell", 0) + 1
    return found


def outer_pid(pid_ns: str, inner: int) -> int | None:
    """The PID in this namespace of process ``inner`` of namespace ``pid_ns``."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{name}/ns/pid") != pid_ns:
                continue
            status = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                return int(name)
    return None


class Parent:
    """One parent side in its own PID namespace."""

    def __init__(self, name: str, scenarios: list[Scenario]) -> None:
        self.name = name
        self.scenarios = {s.id: s for s in scenarios}
        self.process: trio.Process | None = None
        self.pid_ns = ""
        self.done = False
        self.stderr = b""
        self.stdin_lock = trio.Lock()
        """Scenarios cancel at once: one write to the parent's stdin at a time."""

    async def start(self, spec: dict[str, Any], where: Path, nursery: trio.Nursery) -> None:
        path = where / f"spec-{self.name}.json"
        spec = {**spec, "scenarios": [
            {"id": s.id, "state": s.state, "drop": s.drop, "retry": s.drop in RETRIED,
             "hard_timeout_ms": HARD_TIMEOUT_MS[s.state], "sleep_arg": s.sleep_arg}
            for s in self.scenarios.values()
        ]}  # fmt: skip
        path.write_text(json.dumps(spec))
        argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m",
                "tests.remote.drops_parent", str(path)]  # fmt: skip
        self.process = await trio.lowlevel.open_process(
            argv,
            cwd=str(CHECKOUT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        nursery.start_soon(self._read)
        nursery.start_soon(self._drain)

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                fact = json.loads(raw)
                if fact["ev"] == "parent":
                    self.pid_ns = fact["pid_ns"]
                elif fact["ev"] == "done":
                    self.done = True
                else:
                    self.scenarios[fact["sc"]].facts.append(fact)
        self.done = True

    async def _drain(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.stderr = (self.stderr + chunk)[-20000:]

    async def cancel(self, scenario: str) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        async with self.stdin_lock:
            await self.process.stdin.send_all(f"cancel {scenario}\n".encode())

    def client_pid(self, scenario: Scenario) -> int | None:
        launched = scenario.fact("launched")
        assert launched is not None
        return outer_pid(self.pid_ns, launched["client_pid"])

    def init_pid(self) -> int | None:
        """The parent itself: PID 1 of its namespace."""
        return outer_pid(self.pid_ns, 1)


async def reached(scenario: Scenario) -> bool:
    """The scenario's worker is in its state."""
    if scenario.fact("probe") is None:
        return False
    if scenario.state == "turn":
        return scenario.fact("model_call") is not None
    if scenario.state == "shell":
        if scenario.fact("tool_call") is None:
            return False
        if scenario.fact("event", type="command.started") is not None:
            return True
        return scenario.proxy is None  # srun: the call is in progress in the parent
    # guard, worker, child, setsid grandchild, as the sampler saw them (one /proc scan for all)
    return scenario.peak.get(scenario.markers[0], 0) >= 4


class NotReached(AssertionError):
    """A scenario's attempt ended before its state, so its drop was never made: the connection
    itself failed first (a loaded machine: ssh's handshake through the proxy past its
    timeout). Nothing under test happened to it."""


REACH_RUNS = 3
"""How many times a scenario that never reached its state (``NotReached``) runs: a clean-clone CI
run with mypy beside the slow lane had scenarios' ssh fail to connect twice in a row (2 cores, 24
handshakes at once, a 1 s keepalive); the last time's is a failure. Only those run again, in a
fresh directory: fewer handshakes at once, the others' measurements kept."""


async def run_matrix_reaching(
    launcher: str, hosts_file: Path, drops: list[str], where: Path, **kwargs: Any
) -> list[Scenario]:
    """``run_matrix``, then the scenarios that never reached their state again, at most
    ``REACH_RUNS`` times in all; every scenario, as measured in the run where it was reached.

    Raises:
        NotReached: one never reached its state in ``REACH_RUNS`` runs.
    """
    kept: dict[str, Scenario] = {}
    pending: set[str] | None = None
    for run in range(1, REACH_RUNS + 1):
        here = where / f"run{run}"
        here.mkdir()
        ran = await run_matrix(launcher, hosts_file, drops, here, only=pending, **kwargs)
        kept.update({s.id: s for s in ran if not s.unreached})
        missed = [s for s in ran if s.unreached]
        if not missed:
            return sorted(kept.values(), key=lambda s: s.index)
        pending = {s.id for s in missed}
        sys.stderr.write(f"run {run}: never reached their state: {sorted(pending)}\n")
    raise NotReached(f"{missed[0].id} ended before its state: {missed[0].facts}")


async def run_matrix(
    launcher: str,
    hosts_file: Path,
    drops: list[str],
    where: Path,
    *,
    host_overrides: dict[str, Any],
    remote_worktree: str,
    sshd_port: int | None,
    known_hosts: str | None,
    zero_within_s: float,
    sweep: Any = None,
    only: set[str] | None = None,
) -> list[Scenario]:
    """Run every drop × state (``only``: those scenario ids) at once; return the scenarios with
    what was measured (one that never reached its state: ``unreached``)."""
    scenarios = [
        Scenario(f"{drop}-{state}", drop, state, i)
        for i, (drop, state) in enumerate((d, s) for d in drops for s in STATES)
        if only is None or f"{drop}-{state}" in only
    ]
    # one parent of its own for each scenario whose parent is killed: it dies in its own state
    # (a Slurm node may run fewer workers at once than there are such scenarios)
    doomed = {s.id: Parent(s.id, [s]) for s in scenarios if s.drop == "parent_kill"}
    main = Parent("main", [s for s in scenarios if s.drop != "parent_kill"])
    parents = [p for p in (main, *doomed.values()) if p.scenarios]
    async with trio.open_nursery() as nursery:
        overrides = dict(host_overrides)
        proxies: dict[str, int] = {}
        if sshd_port is not None:
            assert known_hosts is not None
            key = Path(known_hosts).read_text().split(" ", 1)[1]  # noqa: ASYNC240 (processes and files of this test)
            for s in scenarios:
                s.proxy = await nursery.start(_proxy, sshd_port)
                proxies[s.id] = s.proxy.port
            pinned = where / "known_hosts"
            pinned.write_text("".join(f"[127.0.0.1]:{p} {key}" for p in proxies.values()))
            overrides["known_hosts"] = str(pinned)
        spec = {"launcher": launcher, "hosts_file": str(hosts_file), "root": str(where),
                "host_overrides": overrides, "proxy_ports": proxies,
                "remote_worktree": remote_worktree}  # fmt: skip
        for parent in parents:
            await parent.start(spec, where, nursery)
        sampler = trio.CancelScope()

        async def sample() -> None:
            with sampler:
                while True:
                    now = time.monotonic()
                    found = task_processes(scenarios)
                    for s in scenarios:
                        counts = found[s.id]
                        dropped = {k: n for k, n in counts.items() if k not in s.markers[1:]}
                        live = [m for m in s.markers if counts.get(m)]
                        s.max_live_attempts = max(s.max_live_attempts, len(live))
                        s.ever_seen = max(s.ever_seen, sum(counts.values()))
                        for key, n in counts.items():
                            s.peak[key] = max(s.peak.get(key, 0), n)
                        if dropped:
                            s.gone_since = None
                        elif s.gone_since is None:
                            s.gone_since = now
                    await trio.sleep(0.05)

        nursery.start_soon(sample)
        with trio.move_on_after(150) as bounded:
            async with trio.open_nursery() as drivers:
                for s in scenarios:
                    parent = doomed.get(s.id, main)
                    drivers.start_soon(_drive, s, parent, sweep)
            for parent in parents:
                assert parent.process is not None
                await parent.process.wait()
            await trio.sleep(0.2)
        if bounded.cancelled_caught:
            left = task_processes(scenarios)
            stuck = [
                (
                    s.id,
                    s.drop_t is not None,
                    left[s.id],
                    [f["ev"] + ":" + str(f.get("kind") or f.get("type") or "") for f in s.facts],
                )
                for s in scenarios
                if s.zero_t is None
            ]
            sys.stderr.write(json.dumps(stuck, indent=0) + "\n")
            for parent in parents:
                sys.stderr.write(parent.stderr.decode(errors="replace")[-3000:])
            raise AssertionError(f"{len(stuck)} scenarios never ended: see stderr")
        sampler.cancel()
        nursery.cancel_scope.cancel()
    return scenarios


async def _proxy(port: int, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    async with FaultProxy(port) as proxy:
        task_status.started(proxy)
        await trio.sleep_forever()


async def _drive(scenario: Scenario, parent: Parent, sweep: Any) -> None:
    """Wait for the state, drop, wait for the parent to notice and the processes to go."""
    while not await reached(scenario):
        if scenario.fact("outcome") is not None:
            scenario.unreached = True  # never dropped: run again (``run_matrix_reaching``)
            return
        await trio.sleep(0.05)
    drop = scenario.drop
    if drop == "client_kill":
        pid = parent.client_pid(scenario)
        assert pid is not None
        scenario.drop_t = time.monotonic()
        os.kill(pid, signal.SIGKILL)
    elif drop == "reset":
        assert scenario.proxy is not None
        scenario.drop_t = time.monotonic()
        scenario.proxy.reset()
    elif drop == "black_hole":
        assert scenario.proxy is not None
        scenario.drop_t = time.monotonic()
        scenario.proxy.black_hole()
    elif drop == "cancel":
        scenario.drop_t = time.monotonic()
        await parent.cancel(scenario.id)
    elif drop == "parent_kill":
        pid = parent.init_pid()
        assert pid is not None
        scenario.drop_t = time.monotonic()
        os.kill(pid, signal.SIGKILL)
    while scenario.fact("outcome", attempt=0) is None:
        if drop == "parent_kill" and parent.done:
            break
        await trio.sleep(0.05)
    outcome = scenario.fact("outcome", attempt=0)
    # noticed: the parent cancelled the worker's call in progress or began tearing it down
    noticed = [f["t"] for f in scenario.facts if f["ev"] == "call_cancelled"][:1]
    noticed += [f["t"] for f in scenario.facts if f["ev"] == "teardown"][:1]
    if drop == "black_hole":  # the link comes back once the parent gave the attempt up
        assert scenario.proxy is not None
        scenario.proxy.restore()
    if outcome is not None:
        scenario.detect_t = min(noticed or [outcome["t"]])
        if drop in ("hard_timeout", "completion"):
            scenario.drop_t = scenario.detect_t
    if drop == "parent_kill" and sweep is not None:
        await trio.sleep(0.5)  # (as the recovering parent would, once it starts)
        await sweep(scenario)
    while scenario.drop_t is None or scenario.zero_t is None:  # noqa: ASYNC110 (processes and files of this test)
        await trio.sleep(0.05)
