"""A host command (ssh, ``squeue``, ``scancel``) never dies of the terminal's Ctrl-C.

The terminal sends SIGINT to its whole foreground process group: air ends its work itself
(a completed task's result is fetched and merged under a shield; a cancel's ``scancel``
must reach Slurm), but the commands ``run_bounded`` started were in that group: a result's
transfer died halfway and a second Ctrl-C during a ``scancel`` left the job to the next
start's recovery. Now each runs in a process group of its own, and one the signal ended
before its exec is started again (tests/workspace/test_git_process_group.py has air's git)."""

from __future__ import annotations

from pathlib import Path

from air.remote.bounded import run_bounded
from tests.barrage import under_barrage

CHILD = """
from air.remote.bounded import run_bounded

async def main():
    env = {"PATH": os.environ["PATH"]}
    ok = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(barrage)
        for _ in range(30):
            done = await run_bounded(["sh", "-c", "sleep 0.03; echo ok"], env=env, timeout_s=30)
            ok += done is not None and done.returncode == 0 and done.stdout == b"ok\\n"
        nursery.cancel_scope.cancel()
    print(ok)

trio.run(main)
"""


def test_a_barrage_of_sigint_at_airs_group_never_reaches_a_host_command() -> None:
    assert under_barrage(CHILD) == "30"


async def test_a_command_the_signal_ended_before_it_ran_is_started_again(tmp_path: Path) -> None:
    script = (
        "n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; "
        '[ "$n" -ge 2 ] || kill -INT $$; echo ran'
    )
    done = await run_bounded(
        ["sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, timeout_s=30, cwd=str(tmp_path)
    )
    assert done is not None
    assert done.returncode == 0
    assert done.stdout == b"ran\n"
    assert (tmp_path / "count").read_text() == "3\n"
