"""``air e2e``: run the shipped examples end to end in a temporary directory and check them.

Owns: finding the examples (``examples/*/batch.yaml`` of the checkout this air runs from),
and, per example, in a fresh temporary copy made a git repository: run
``air run --headless batch.yaml --cassette cassettes --json`` as a real subprocess in a new
session, then check (IMPL-REL-5) that it exited 0 with every task completed, that every
completed task has evidence, that the project's own tests pass (``python -m unittest`` for a
Python example, CMake + CTest for a C++ one) and that no process is left (none in the run's
session, none with its working directory in the copy). The exit code says which failed:
0 all passed, else 32 + the sum of 2**i over the failed examples' indexes i (in the order
``air e2e --help`` lists them: sorted by name).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from air.contracts.error import AirException, CliExit

GIT = ["git", "-c", "user.name=air-e2e", "-c", "user.email=air@localhost"]
GIT += ["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
EXIT_BASE = CliExit.E2E_BASE


@dataclass
class ExampleResult:
    name: str
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    session_id: str | None = None

    def fail(self, problem: str) -> None:
        self.ok = False
        self.problems.append(problem)


def examples_dir() -> Path:
    """``examples/`` of the checkout this air package lives in.

    Raises:
        AirException: ``not_found`` when air runs from an installed wheel (no examples).
    """
    candidate = Path(__file__).resolve().parents[2] / "examples"
    if not candidate.is_dir():
        raise AirException.of(
            kind="not_found",
            message=f"no shipped examples at {candidate}",
            user_action="Run `air e2e` from a checkout or an unpacked sdist of air "
            "(pip install -e .), where examples/ exists.",
        )
    return candidate


def shipped_examples() -> list[str]:
    return sorted(p.parent.name for p in examples_dir().glob("*/batch.yaml"))


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _project_tests(root: Path) -> list[list[str]]:
    if (root / "CMakeLists.txt").is_file():
        return [
            ["cmake", "-S", ".", "-B", "build", "-G", "Ninja"],
            ["cmake", "--build", "build"],
            ["ctest", "--test-dir", "build", "--output-on-failure"],
        ]
    return [[sys.executable, "-m", "unittest", "-q"]]


def _leftovers(sid: int, root: Path) -> list[str]:
    """Processes of the run's session, or working in the copy, still alive."""
    found = []
    real = str(root.resolve())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            state, session = fields[0], int(fields[3])
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except (OSError, IndexError, ValueError):
            continue
        if state == "Z":
            continue
        if session == sid or cwd == real or cwd.startswith(real + os.sep):
            found.append(f"pid {entry} (cwd {cwd})")
    return found


def run_example(name: str, base: Path, source: Path | None = None) -> ExampleResult:
    """Copy ``source`` (default: the shipped example ``name``) under ``base``, run it, check."""
    result = ExampleResult(name)
    started = time.monotonic()
    root = base / name
    shutil.copytree(
        source or examples_dir() / name,
        root,
        ignore=shutil.ignore_patterns("__pycache__", ".air", "build"),
    )
    (root / ".gitignore").write_text(".air/local/\nbuild/\n__pycache__/\n", encoding="utf-8")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", f"example {name}"]):
        _run([*GIT, *argv], root)
    argv = [sys.executable, "-m", "air", "run", "--headless", "batch.yaml", "--json"]
    if (root / "cassettes").is_dir():
        argv += ["--cassette", "cassettes"]
    process = subprocess.Popen(
        argv,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        result.fail("the run took longer than 900 s (killed)")
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    summary = records[-1] if records and records[-1].get("type") == "air.summary" else None
    if process.returncode != 0:
        last = err.strip().splitlines()[-1:] or ["(no output)"]
        result.fail(f"`air run` exited {process.returncode}: {last[0]}")
    if summary is None:
        result.fail("the --json stream has no final summary record")
    else:
        result.session_id = summary["session_id"]
        counts = summary["counts"]
        if counts["completed"] != counts["tasks"] or counts["tasks"] == 0:
            result.fail(f"tasks completed: {counts['completed']}/{counts['tasks']}")
    completed = {r["payload"]["task_id"] for r in records if r.get("type") == "task.completed"}
    evidenced = {
        r["payload"].get("entity_id") for r in records if r.get("type") == "evidence.created"
    }
    for task in sorted(completed - evidenced):
        result.fail(f"task {task} completed without evidence")
    deadline = time.monotonic() + 5.0
    left = _leftovers(process.pid, root)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _leftovers(process.pid, root)
    for item in left:
        result.fail(f"a process was left: {item}")
    for test in _project_tests(root):
        proc = _run(test, root)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            result.fail(f"the project's tests fail: `{' '.join(test)}`: {tail[0]}")
            break
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def run_e2e(args: dict[str, Any]) -> int:
    known = shipped_examples()
    wanted = args["--example"] or known
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise AirException.of(
            kind="validation_error",
            message=f"--example {unknown[0]}: no such example (shipped: {', '.join(known)})",
            user_action="Pick one of the shipped examples, or omit --example for all.",
        )
    base = Path(tempfile.mkdtemp(prefix="air-e2e-"))
    code = 0
    try:
        for name in wanted:
            print(f"air e2e: {name} ...", file=sys.stderr, flush=True)
            result = run_example(name, base)
            verdict = "passed" if result.ok else "FAILED"
            print(f"air e2e: {name} {verdict} in {result.duration_s:.1f}s", file=sys.stderr)
            for problem in result.problems:
                print(f"  {problem}", file=sys.stderr)
            if args["--json"]:
                print(json.dumps(result.__dict__), flush=True)
            if not result.ok:
                code |= 1 << known.index(name)
    finally:
        if args["--keep"]:
            print(f"air e2e: kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    return EXIT_BASE + code if code else CliExit.OK
