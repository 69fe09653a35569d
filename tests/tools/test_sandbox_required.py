"""No silent unsandboxed mode, and workers hold no credentials (issue 9 items 10 and 4).

Without bubblewrap, or where bubblewrap cannot create a user namespace, ``air run --headless``
and ``air resume`` stop before any task with exit 2 and say so (shell.run refusing is in
test_shell_and_secrets.py). Worker subprocesses start with an allowlisted environment: the
planted keys, tokens and agent sockets of air's own environment never reach them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.ipc.process import WorkerProcess
from tests.tools.sandbox_probe import REPO

BATCH = "version: 1\ntasks:\n  - id: a\n    title: Say hello\n"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "batch.yaml").write_text(BATCH)
    return root


def _assert_refused(proc: subprocess.CompletedProcess[str], root: Path, words: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "environment_error" in proc.stderr
    assert words in proc.stderr
    assert "what to do:" in proc.stderr
    assert not (root / ".air" / "local" / "sessions").exists()


@pytest.mark.parametrize("command", [["run", "--headless", "batch.yaml"], ["resume"]])
def test_run_and_resume_without_bubblewrap_exit_2_before_any_task(
    tmp_path: Path, command: list[str]
) -> None:
    root = _project(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    git = shutil.which("git")
    assert git is not None, "git is needed (scripts/setup.sh installs it)"
    (empty / "git").symlink_to(git)  # everything but bubblewrap: that is what is missing
    proc = subprocess.run(
        [sys.executable, "-m", "air.cli", *command],
        cwd=root,
        env={**os.environ, "PATH": str(empty)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    _assert_refused(proc, root, "bubblewrap (bwrap) is not installed")


def test_headless_run_without_user_namespaces_exits_2_before_any_task(tmp_path: Path) -> None:
    root = _project(tmp_path)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    # air itself runs inside a user namespace that forbids creating another one.
    jail = [bwrap, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/", "--dev", "/dev"]
    jail += ["--proc", "/proc", "--tmpfs", "/tmp", "--bind", str(tmp_path), str(tmp_path)]
    # the checkout and its venv stay visible even when they live under /tmp (a CI clone may)
    for keep in sorted({str(REPO), sys.prefix, os.path.realpath(sys.prefix)}):
        jail += ["--ro-bind", keep, keep]
    jail += ["--chdir", str(root), "--"]
    proc = subprocess.run(
        [*jail, sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    _assert_refused(proc, root, "bubblewrap cannot build the sandbox here")


PRINT_ENV = "import json, os, sys; sys.stdout.write(json.dumps(dict(os.environ)) + '\\n')"

PLANTED = {
    "FOO_API_KEY": "AIRSBXWORKERFOO",
    "OPENAI_API_KEY": "sk-AIRSBXWORKEROPENAI00000000",
    "GH_TOKEN": "AIRSBXWORKERGH",
    "GITHUB_TOKEN": "AIRSBXWORKERGITHUB",
    "AWS_SECRET_ACCESS_KEY": "AIRSBXWORKERAWS",
    "AWS_ACCESS_KEY_ID": "AIRSBXWORKERAWSID",
    "SSH_AUTH_SOCK": "/tmp/AIRSBXWORKERSOCK",
    "DATABASE_PASSWORD": "AIRSBXWORKERDB",
}


async def test_workers_start_with_the_allowlisted_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    proc = await WorkerProcess.spawn(
        agent_id="agent_env", marker="m-env", command=[sys.executable, "-c", PRINT_ENV]
    )
    assert proc.process.stdout is not None
    data = b""
    with trio.fail_after(30):
        while not data.endswith(b"\n"):
            chunk = await proc.process.stdout.receive_some()
            if not chunk:
                break
            data += chunk
        await proc.wait()
    seen = json.loads(data)
    for name, value in PLANTED.items():
        assert name not in seen
        assert value not in json.dumps(seen)
    assert seen["PYTHONPATH"] == str(REPO)
    assert seen["AIR_WORKER_RUN"] == "m-env"
    assert seen["PATH"] == os.environ["PATH"]
    assert set(seen) <= {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TZ",
        "TMPDIR",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONNOUSERSITE",
        "PYTHONSAFEPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONFAULTHANDLER",
        "PYTHONDEVMODE",
        "PYTHONWARNINGS",
        "COVERAGE_PROCESS_START",
        "PYTHONUNBUFFERED",
        "AIR_WORKER_RUN",
    }, set(seen)
