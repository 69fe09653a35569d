"""The running worker's deadlines, as cancel scopes and deadlines (IMPL-LAUNCH-2).

Owns: ``watch`` — the running phase of one attempt under its scopes: ``run.hard_scope`` (the
hard timeout; ``extend`` moves its deadline), ``run.grace_scope`` (after ``agent.cancel`` the
worker has ``exit_grace_s`` to end), and inside them the reader, the stderr pump, the tool
servers, ``soft_timer`` (``agent.wrap_up`` when ``run.soft_scope``'s deadline passes; an
extension re-arms it), ``stall_watch`` (no message for ``stall_after_s`` → an
``agent.get_state`` probe; still silent ``stall_kill_after_s`` later → the attempt ends as
``stalled``, transient) and ``exit_watch`` (the worker's process ends while the parent serves
its call → the call is cancelled at once; IMPL-DEADCALL-1). Nothing here polls: each waits on a
deadline or on the process.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import trio

from air.contracts.error import ErrorKind
from air.supervision.deadline import deadline_error
from air.supervision.worker_run import End, Supervisor, WorkerRun, control, err
from air.supervision.worker_start import timeout_of

__all__ = ["exit_watch", "soft_timer", "stall_watch", "watch"]

Body = Callable[[], Awaitable[None]]


async def watch(sup: Supervisor, run: WorkerRun, body: Body) -> None:
    """Run ``body()`` (the read loop) with the watchers beside it, under the hard and
    cancel-grace scopes; set ``run.end`` from whichever deadline ended it."""
    assert run.proc is not None
    with run.hard_scope, run.grace_scope:
        async with trio.open_nursery() as nursery:
            run.tasks_scope = nursery.cancel_scope
            nursery.start_soon(run.proc.pump_stderr)
            nursery.start_soon(soft_timer, run)
            nursery.start_soon(stall_watch, sup, run)
            nursery.start_soon(exit_watch, run)
            await body()
            nursery.cancel_scope.cancel()
    if run.end is None and run.hard_scope.cancelled_caught:
        whole = run.request.deadline_at
        if whole is not None and run.hard_at >= whole + run.held_s:
            # the whole-task deadline, not an attempt's own limit (IMPL-DEADLINE-1)
            run.end = End("hard_timeout", deadline_error("running", timeout_of(run.request)))
        else:
            run.end = End(
                "hard_timeout",
                err(ErrorKind.TIMEOUT, "the task reached its hard timeout", transient=False),
            )
    elif run.end is None and run.grace_scope.cancelled_caught:
        run.end = End("cancelled", None)


async def exit_watch(run: WorkerRun) -> None:
    """Wait for the worker's process to end (a pidfd, no polling); if the parent is serving its
    call then, cancel the call: nobody is left to answer, and the read loop ends the attempt as
    a crash at once instead of when the call returns (IMPL-DEADCALL-1). Outside a call the read
    loop reads what the worker wrote before it ended, up to its end of stream."""
    assert run.proc is not None
    run.exit_code = await run.proc.wait()
    if run.call_scope is not None:
        run.call_scope.cancel()


async def soft_timer(run: WorkerRun) -> None:
    """Ask for a wrap-up each time the soft deadline passes (``extend`` re-arms it)."""
    while True:
        with run.soft_scope:
            await trio.sleep_forever()
        await control(run, {"type": "agent.wrap_up", "reason": "soft_timeout"})
        run.soft_scope = trio.CancelScope(deadline=math.inf)


async def stall_watch(sup: Supervisor, run: WorkerRun) -> None:
    """Probe a silent worker, then end it as stalled if the probe gets no answer.

    The read loop only stamps ``run.last_seen``; this task sleeps until the deadline that
    stamp implies and checks it then, so a busy pipe costs no timer work per message."""
    cfg = sup.config
    if cfg.stall_after_s <= 0:
        return
    next_probe = run.last_seen + cfg.stall_after_s
    while True:
        await trio.sleep_until(next_probe)
        seen = run.last_seen
        next_probe = seen + cfg.stall_after_s
        if run.serving:  # the worker waits on a tool call the parent is serving
            next_probe = trio.current_time() + cfg.stall_after_s
            continue
        if trio.current_time() < next_probe:
            continue  # a message came in meanwhile: the deadline moved
        await control(run, {"type": "agent.get_state"})
        if cfg.stall_kill_after_s <= 0:  # never kill: probe again after each further silence
            next_probe = trio.current_time() + cfg.stall_after_s
            continue
        await trio.sleep_until(seen + cfg.stall_after_s + cfg.stall_kill_after_s)
        if run.last_seen == seen and not run.serving:
            silence = trio.current_time() - seen
            run.stop(
                End(
                    "stalled",
                    err(
                        ErrorKind.WORKER_STALLED,
                        f"the worker was silent for {silence:.1f}s and did not answer a probe",
                        transient=True,
                    ),
                    True,
                )
            )
            return
        next_probe = run.last_seen + cfg.stall_after_s
