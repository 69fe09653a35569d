"""Shared by the tests that run ``air run --headless batch.yaml --json`` as a real subprocess
against a local provider server: the run itself and the JSON event lines it prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_batch_json(
    root: Path, env: dict[str, str], *, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``air run --headless batch.yaml --json`` in ``root`` with exactly ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def json_events(stdout: str) -> list[dict[str, Any]]:
    """The events of a ``--json`` run's stdout (its JSON lines; anything else is skipped)."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
