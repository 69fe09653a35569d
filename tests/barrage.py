"""A terminal's Ctrl-C, again and again, at a child air runs in its own session: what the
tests of air's own process groups (its git, its host commands) run their code under."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BARRAGE = textwrap.dedent(
    """
    import os, signal, trio

    async def barrage():  # SIGINT to this process's group every 5 ms
        while True:
            os.killpg(os.getpgrp(), signal.SIGINT)
            await trio.sleep(0.005)

    signal.signal(signal.SIGINT, lambda *_: None)  # air itself ends its work cooperatively
    """
)
"""Code a test's child runs first: ``barrage`` to start in its nursery, SIGINT ignored."""


def under_barrage(code: str, *args: str) -> str:
    """Run ``BARRAGE`` then ``code`` (given ``args``) in a child in its own session, so that the
    barrage stays in its group; its stdout, once it exited 0.

    Raises:
        AssertionError: the child failed (its stderr's end in the message).
    """
    done = subprocess.run(
        [sys.executable, "-c", BARRAGE + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()
