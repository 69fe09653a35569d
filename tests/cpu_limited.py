"""Python code run in a child whose CPU time is limited: how a test shows that work a task
chose ends (a parse of hostile output), without timing it. The limit is generous (the work
takes a second or so); work that is quadratic in what it reads meets it and the child dies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cpu_limited(script: str, *args: str, seconds: int = 60) -> subprocess.CompletedProcess[str]:
    """``python -c script args`` from the checkout's root, at most ``seconds`` of CPU."""
    limited = f"import resource\nresource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {seconds}))\n"
    return subprocess.run(
        [sys.executable, "-c", limited + script, *args],
        capture_output=True,
        text=True,
        timeout=seconds * 5,
        cwd=ROOT,
        check=False,
    )
