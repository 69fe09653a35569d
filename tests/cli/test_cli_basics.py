"""`air --version` / `air --help` work and stay light; bad arguments exit 2."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import air


def _air(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "air.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_version() -> None:
    proc = _air("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"air {air.__version__}"


def test_help_lists_only_commands_with_routes() -> None:
    proc = _air("--help")
    assert proc.returncode == 0
    assert "Usage:" in proc.stdout
    assert "air init" in proc.stdout


def test_a_terminal_that_cannot_show_a_character_gets_it_escaped() -> None:
    """A non-UTF-8 locale's terminal (here ``PYTHONIOENCODING=ascii``): the help's dash, as any
    character the terminal lacks, is written escaped, never a traceback."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run(
        [sys.executable, "-m", "air.cli", "--help"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.startswith(b"air \\u2014 a local AI coding-agent runtime.")
    assert proc.stderr == b""


def test_a_command_started_with_its_output_closed_writes_nowhere_and_succeeds() -> None:
    """``air ... >&-`` (a job with no output): the stream was ``None`` and the first write a
    traceback (exit 1); the closed descriptors are ``/dev/null`` now."""
    air = f"{shlex.quote(sys.executable)} -m air.cli completion bash"
    for closed in (">&-", ">&- 2>&- <&-"):
        proc = subprocess.run(
            ["sh", "-c", f"( {air} {closed} ); echo rc=$?"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.stdout == "rc=0\n", (closed, proc.stderr)
        assert proc.stderr == ""


def test_bad_arguments_exit_2_with_usage() -> None:
    proc = _air("frobnicate")
    assert proc.returncode == 2
    assert "Usage:" in proc.stderr


def test_help_and_bare_import_do_not_load_heavy_modules() -> None:
    code = (
        "import sys, json, io, contextlib\n"
        "import air\n"
        "bare = set(sys.modules)\n"
        "from air.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "print(json.dumps({'bare': sorted(bare), 'help': sorted(sys.modules)}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(proc.stdout)
    heavy = ("trio", "pydantic", "httpx", "anthropic", "urwid", "sqlite3")
    for phase in ("bare", "help"):
        offenders = [m for m in loaded[phase] if m.split(".")[0] in heavy]
        assert offenders == [], f"{phase}: {offenders[:5]}"
