"""An air parent process running one long ``shell.run``, for the kill -9 test.

``python -m tests.tools.sandbox_driver DIR TOKEN`` builds the tool test ``Env`` (real session,
registry, PermissionEngine, SandboxRunner) under DIR and runs a command whose processes (one in
the background, one in the foreground) carry TOKEN on their command line, then waits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from tests.tools.conftest import Env


def long_command(token: str) -> str:
    sleeper = f"python3 -c 'import time; time.sleep(600)' {token}"
    return f"({sleeper} &); {sleeper}"


async def main(base: str, token: str) -> None:
    env = Env(Path(base))
    env.engine.headless_allow_ask = True
    await env.registry.call(
        "shell.run", {"command": long_command(token), "timeout_s": 900}, env.ctx(headless=True)
    )


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
