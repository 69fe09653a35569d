"""The must-show test of issue #12: the REAL ``air`` console in tmux, on a real project.

``air run PROJECT`` opens the console on ``open_runtime()``: the real MainAgent, Scheduler,
WorkerManager (sandboxed worker processes), ToolRegistry and PermissionEngine, the
ProjectionStore over the session DB and the TuiApp on urwid's TrioEventLoop. The model is the
strict local server (real anthropic SDK over HTTP on 127.0.0.1) playing a script: the Main
Agent's turns from a queue (one answer stalls mid-stream so Esc can interrupt it), each
worker's turns from ``<task id>.jsonl`` (``CassetteModel``). Driven with send-keys and read
with capture-pane: chat, Esc, a change that becomes tasks, a permission prompt answered, one
task of two cancelled, Ctrl-C, quit — no process of the session survives — then
``air --session SID`` shows the same conversation and tasks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from air.contracts.provider import TextBlock, ToolUseBlock
from air.llm.cassette import CassetteTurn
from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from tests.gitrepo import git
from tests.trusted import trust_project
from tests.ui.tmux import Tmux, processes_with

KEY = "zq81-console-key-4b2d8c6a1e0f9b7d5c3a7d0c1b5a9e3f"
MODELS = (
    "default: anthropic/claude-sonnet-4-5\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_CONSOLE_KEY\n"
    "    models:\n"
    "      claude-sonnet-4-5: {{context_window: 200000, max_output_tokens: 64000}}\n"
)

_TASK_LINE = re.compile(r"^(?:# )?Task (\S+?)(?::| \()", re.MULTILINE)
STALL_S = 8.0
"""How long the interrupted answer stalls (the server thread; Esc ends the turn at once)."""


def _text(*pieces: str, stall_after: int | None = None) -> Reply:
    chunks = blocks_sse("anthropic", [("text", list(pieces))], "end_turn", model="claude")
    if stall_after is None:
        return Reply(chunks=chunks)
    return Reply(chunks=chunks, stall_after=stall_after, stall_s=STALL_S)


def _spec(task_id: str, title: str, area: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "type": "execute",
        "title": title,
        "description": f"{title}.",
        "scope": {"write_area": [area]},
    }


PLAN = {
    "summary": "Three tasks: one asks before it fetches, two slow ones run in parallel.",
    "needs_plan": False,
    "tasks": [
        _spec("ask", "Fetch the page", "a.txt"),
        _spec("slow-a", "Slow one A", "b.txt"),
        _spec("slow-b", "Slow one B", "c.txt"),
    ],
}


class ConsoleModel:
    """The Main Agent's replies in order; a worker's request goes to its task's cassette."""

    def __init__(self, scripts: Path) -> None:
        self.workers = CassetteModel(scripts)
        self.main = [
            _text('{"intent": "chat"}'),
            _text("Hello! ", "I am the Main Agent."),
            _text('{"intent": "chat"}'),
            # message_start, content_block_start, ping, the first delta: then a stall
            _text("Once upon a time", " there was a story too long to wait for.", stall_after=4),
            _text('{"intent": "task"}'),
            _text(json.dumps(PLAN)),
        ]
        self._lock = threading.Lock()

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        if _TASK_LINE.search(text):
            return self.workers(wire, body)
        with self._lock:
            return self.main.pop(0) if self.main else _text("Nothing more is scripted.")


def _worker_scripts(scripts: Path) -> None:
    scripts.mkdir()

    def done(summary: str) -> CassetteTurn:
        result = {"status": "completed", "summary": summary, "result": {"changes_made": False}}
        text = f"{summary}\n```json:result\n{json.dumps(result)}\n```\n"
        return CassetteTurn(content=[TextBlock(text=text)], stop_reason="end_turn")

    def run(command: str) -> CassetteTurn:
        block = ToolUseBlock(id="toolu_1", name="shell.run", input={"command": command})
        return CassetteTurn(content=[block], stop_reason="tool_use")

    turns = {
        "ask": [run("curl -s https://example.com/x"), done("Asked, then fetched.")],
        "slow-a": [run("sleep 30"), done("Slept.")],
        "slow-b": [run("sleep 30"), done("Slept.")],
    }
    for task_id, each in turns.items():
        lines = "".join(t.model_dump_json(exclude_none=True) + "\n" for t in each)
        (scripts / f"{task_id}.jsonl").write_text(lines)


def _project(root: Path, url: str) -> None:
    root.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (root / name).write_text(f"{name}\n")
    for args in (
        ["init", "-q"],
        ["config", "user.email", "t@example.com"],
        ["config", "user.name", "T"],
        ["add", "-A"],
        ["commit", "-qm", "start"],
    ):
        git(root, *args)
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "models.yaml").write_text(MODELS.format(url=url))
    trust_project(root, root.parent / "home")  # every caller's HOME


def _air(*args: str) -> list[str]:
    return [sys.executable, "-m", "air", *args]


def _task_line(screen: str, title: str) -> str:
    return next((line for line in screen.splitlines() if title in line and "#" in line), "")


def _wait_task(tmux: Tmux, title: str, *status: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if any(f"{title}  {each}" in _task_line(screen, title) for each in status):
            return screen
        time.sleep(0.05)
    raise AssertionError(f"task {title!r} never {status}:\n{screen}")


def test_the_real_console_in_tmux_then_the_session_reopened(tmp_path: Path) -> None:
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    home.mkdir()
    _worker_scripts(scripts)
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    model = ConsoleModel(scripts)
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            tmux.start(_air("run", str(root), "--max-workers", "3"), env)
            tmux.wait_for("IDLE", timeout=30)

            # a chat message: the streamed answer
            tmux.type("hello there")
            tmux.keys("Enter")
            tmux.wait_for("air> Hello! I am the Main Agent.")

            # Esc during the Main Agent's turn ends that turn, nothing else
            tmux.type("tell me a long story")
            tmux.keys("Enter")
            tmux.wait_for("Once upon a time")
            tmux.keys("Escape")
            tmux.wait_for("interrupting the Main Agent's current turn")
            tmux.wait_for("· IDLE ·")
            assert "too long to wait for" not in tmux.screen()

            # a change: three tasks appear and run; one asks permission
            tmux.type("change the project")
            tmux.keys("Enter")
            screen = tmux.wait_for("permission needed", timeout=30)
            assert "curl" in screen
            time.sleep(0.5)  # past the prompt's guard: a key typed at once would be ignored
            tmux.keys("1")
            tmux.wait_for("permission needed", gone=True)
            _wait_task(tmux, "Fetch the page", "completed")
            _wait_task(tmux, "Slow one A", "running")
            _wait_task(tmux, "Slow one B", "running")

            # cancel exactly one task of the two
            tmux.type("/cancel slow-a")
            tmux.keys("Enter")
            screen = _wait_task(tmux, "Slow one A", "cancelled")
            assert "Slow one B  running" in _task_line(screen, "Slow one B")

            # quit asks while work runs; "n" keeps it running
            tmux.keys("C-d")
            tmux.wait_for("1 task(s) running: quit and cancel them? (y/n)")
            tmux.keys("n")
            tmux.wait_for("quit cancelled")
            assert "Slow one B  running" in _task_line(tmux.screen(), "Slow one B")

            # Ctrl-C: the running work is cancelled cooperatively (the task is resumable)
            tmux.keys("C-c")
            screen = _wait_task(tmux, "Slow one B", "interrupted", "cancelled")
            assert "Fetch the page  completed" in _task_line(screen, "Fetch the page")

            # quit: nothing of the session survives
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()

        sessions = os.listdir(root / ".air" / "local" / "sessions")
        assert len(sessions) == 1
        again = Tmux(tmp_path)
        try:
            again.start(_air("--session", sessions[0], "--project", str(root)), env)
            screen = again.wait_for("Slow one B", timeout=30)
            # the interrupted answer is shown as such, with the draft it had streamed (its
            # deltas were never durable: the draft was kept as an artifact)
            said_before = ("you> hello there", "air> Hello! I am the Main Agent.")
            for said in (*said_before, "you> tell me a long story", "interrupted (Esc)"):
                assert said in screen, screen
            assert "air> Once upon a time" in screen, screen
            assert "too long to wait for" not in screen
            assert "you> change the project" in screen
            assert "Fetch the page  completed" in _task_line(screen, "Fetch the page")
            assert "Slow one A  cancelled" in _task_line(screen, "Slow one A")
            slow_b = _task_line(screen, "Slow one B")
            assert re.search(r"Slow one B  (interrupted|cancelled)", slow_b)
            again.keys("C-d")
            assert again.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            again.close()

        # the read-only replay of the same session
        replay = Tmux(tmp_path)
        try:
            replay.start(_air("--session", sessions[0], "--project", str(root), "--replay"), env)
            screen = replay.wait_for("Slow one B", timeout=30)
            assert "replay (read-only)" in screen
            replay.wait_for("you> change the project", timeout=30)
            replay.keys("q")
            assert replay.wait_exit(timeout=30) == 0
        finally:
            replay.close()
    assert server.rejected == [], [r.problem for r in server.rejected]


def _air_pids(marker: str) -> list[int]:
    """The ``air`` console processes (not their workers) whose command line has ``marker``."""
    return [
        int(line.split()[0])
        for line in processes_with(marker)
        if re.search(r"^\s*\d+\s+\S+\s+\S*python\S* -m air ", line)
    ]


def _wait_gone(marker: str, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    left = processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = processes_with(marker)
    return left


def _wait_gone_command(command: str, marker: str, timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    left = [line for line in processes_with(marker) if command in line]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [line for line in processes_with(marker) if command in line]
    return left


def _wait_sleeping(marker: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not any("sleep 30" in line for line in processes_with(marker)):
        if time.monotonic() > deadline:
            raise AssertionError(f"no worker command running: {processes_with(marker)}")
        time.sleep(0.1)


def _run_the_slow_one(tmux: Tmux, root: Path, env: dict[str, str], marker: str) -> None:
    """Open the console on ``root``, ask for the slow task and wait until its command sleeps."""
    tmux.start(_air("run", str(root)), env)
    tmux.wait_for("IDLE", timeout=30)
    tmux.type("run the slow one")
    tmux.keys("Enter")
    _wait_task(tmux, "Slow one A", "running")
    _wait_sleeping(marker)


@pytest.mark.slow
def test_sighup_and_kill_9_leave_no_process_of_the_session(tmp_path: Path) -> None:
    """Closing the terminal (SIGHUP) ends the console and every worker; after a kill -9 of
    air the next start reaps what the dead one left, and quitting then leaves nothing."""
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    home.mkdir()
    _worker_scripts(scripts)
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    model = ConsoleModel(scripts)
    one = {**PLAN, "tasks": [_spec("slow-a", "Slow one A", "b.txt")]}
    two = {**PLAN, "tasks": [_spec("slow-b", "Slow one B", "c.txt")]}
    model.main = [_text('{"intent": "task"}'), _text(json.dumps(one))]
    model.main += [_text('{"intent": "task"}'), _text(json.dumps(two))]
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            _run_the_slow_one(tmux, root, env, str(tmp_path))
        finally:
            tmux.close()  # the terminal goes away: SIGHUP
        assert _wait_gone(str(tmp_path)) == []

        sessions = os.listdir(root / ".air" / "local" / "sessions")
        killed = Tmux(tmp_path)
        try:
            killed.start(_air("--session", sessions[0], "--project", str(root)), env)
            killed.wait_for("IDLE", timeout=30)
            killed.type("run the other slow one")
            killed.keys("Enter")
            _wait_task(killed, "Slow one B", "running")
            _wait_sleeping(str(tmp_path))
            pids = _air_pids(str(root))
            assert len(pids) == 1, processes_with(str(tmp_path))
            os.kill(pids[0], 9)
            killed.wait_exit(timeout=30)
        finally:
            killed.close()

        after = Tmux(tmp_path)
        try:
            after.start(_air("--session", sessions[0], "--project", str(root)), env)
            after.wait_for("Slow one B", timeout=30)
            screen = after.wait_for("· IDLE ·")  # the dead process's state is not the agent's
            assert "Slow one B  running" not in _task_line(screen, "Slow one B")
            # reaped: the workers are gone; their sandboxed commands die with them (bwrap
            # --die-with-parent), a few ms later under load — far sooner than `sleep 30` ends
            assert _wait_gone_command("sleep 30", str(tmp_path), timeout=5) == []
            after.keys("C-d")
            assert after.wait_exit(timeout=30) == 0
        finally:
            after.close()
        assert _wait_gone(str(tmp_path), timeout=5) == []


@pytest.mark.slow
def test_the_second_ctrl_c_kills_at_once_and_the_reopened_session_lost_nothing(
    tmp_path: Path,
) -> None:
    """Ctrl-C twice while a task's command runs: the first press starts the cooperative
    cancel, the second (pressed before the first has ended anything) kills the workers and
    ends air at once, with no process of the session left; the next ``air --session SID``
    shows the conversation and the task ended, resumable."""
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    home.mkdir()
    _worker_scripts(scripts)
    model = ConsoleModel(scripts)
    plan = {**PLAN, "tasks": [_spec("slow-a", "Slow one A", "b.txt")]}
    model.main = [_text('{"intent": "task"}'), _text(json.dumps(plan))]
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        tmux = Tmux(tmp_path)
        try:
            _run_the_slow_one(tmux, root, env, str(tmp_path))
            # both presses reach the console in one read: the second finds the work running
            tmux.keys("C-c", "C-c")
            assert tmux.wait_exit(timeout=20) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            tmux.close()
        stderr = (tmp_path / "stderr").read_text()
        assert "a second Ctrl-C killed the session's workers" in stderr, stderr

        sessions = os.listdir(root / ".air" / "local" / "sessions")
        again = Tmux(tmp_path)
        try:
            again.start(_air("--session", sessions[0], "--project", str(root)), env)
            screen = again.wait_for("· IDLE ·", timeout=30)
            assert "you> run the slow one" in screen
            slow = _task_line(screen, "Slow one A")
            assert re.search(r"Slow one A  (interrupted|cancelled)", slow), screen
            again.keys("C-d")
            assert again.wait_exit(timeout=30) == 0
            assert processes_with(str(tmp_path)) == []
        finally:
            again.close()
    assert server.rejected == [], [r.problem for r in server.rejected]


STORM_RATE = 10_000
STORM_SECONDS = 3
"""The test's storm (lines/s of command output, seconds); ``bench/console.py`` runs 10 s."""
STORM = f"""\
import sys, time
start = time.monotonic()
for i in range({STORM_RATE * STORM_SECONDS}):
    sys.stdout.write("storm line %d\\n" % i)
    sys.stdout.flush()
    if i % 50 == 49:
        time.sleep(max(0.0, start + (i + 1) / {STORM_RATE} - time.monotonic()))
"""


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.mark.slow
def test_an_output_storm_through_the_real_console(tmp_path: Path) -> None:
    """A task's command writes 10,000 flushed lines/s for 3 s: each read is a
    ``command.stdout.delta`` on the bus to the console. Bounds only: the console redraws at
    most once per frame interval, its RSS grows at most 32 MiB after the storm's first second,
    and it stays usable (a key typed during the storm shows). Figures are printed."""
    root, home, scripts = tmp_path / "proj", tmp_path / "home", tmp_path / "scripts"
    home.mkdir()
    scripts.mkdir()
    run = ToolUseBlock(id="toolu_1", name="shell.run", input={"command": "python3 storm.py"})
    result = {"status": "completed", "summary": "Stormed.", "result": {"changes_made": False}}
    done = TextBlock(text=f"Stormed.\n```json:result\n{json.dumps(result)}\n```\n")
    turns = [
        CassetteTurn(content=[run], stop_reason="tool_use"),
        CassetteTurn(content=[done], stop_reason="end_turn"),
    ]
    (scripts / "storm.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in turns))
    model = ConsoleModel(scripts)
    plan = {**PLAN, "tasks": [_spec("storm", "Storm of output", "a.txt")]}
    model.main = [_text('{"intent": "task"}'), _text(json.dumps(plan))]
    env = {"HOME": str(home), "AIR_CONSOLE_KEY": KEY}
    with StrictServer(api_key=KEY, model=model) as server:
        _project(root, server.url)
        (root / "storm.py").write_text(STORM)
        git(root, "add", "storm.py")
        git(root, "commit", "-qm", "storm")
        tmux = Tmux(tmp_path)
        try:
            opened = time.monotonic()
            tmux.start(_air("run", str(root)), env)
            tmux.wait_for("IDLE", timeout=30)
            (pid,) = _air_pids(str(root))
            tmux.type("make a storm")
            tmux.keys("Enter")
            tmux.wait_for("storm line", timeout=30)
            storm_started = time.monotonic()
            samples: list[tuple[float, int]] = []
            typed = False
            while "Storm of output  completed" not in _task_line(tmux.screen(), "Storm"):
                samples.append((time.monotonic() - storm_started, _rss_kib(pid)))
                if not typed and samples[-1][0] > 1.0:
                    tmux.type("typed during the storm")
                    typed = True
                assert time.monotonic() - storm_started < 120, tmux.screen()
                time.sleep(0.1)
            tmux.wait_for("typed during the storm")
            tmux.keys("C-u")
            tmux.keys("C-d")
            assert tmux.wait_exit(timeout=30) == 0
            seconds = time.monotonic() - opened
        finally:
            tmux.close()
    report = (tmp_path / "stderr").read_text()
    line = [x for x in report.splitlines() if "console closed:" in x][-1]
    assert "Reopen it with `air --session ses_" in report
    figures = dict(re.findall(r"(\w+)=([\d.]+)", line.split("console closed:", 1)[1]))
    after_first = [kib for t, kib in samples if t >= 1.0]
    growth = max(after_first) - after_first[0] if after_first else 0
    print(
        f"storm through air: {STORM_RATE * STORM_SECONDS} lines in "
        f"{samples[-1][0] if samples else 0:.1f} s; {figures}; RSS growth after the first "
        f"second {growth / 1024:.1f} MiB"
    )
    assert int(figures["frames"]) <= seconds * 30 + 5
    assert growth <= 32 * 1024


EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"


def test_the_shipped_offline_session_in_the_plain_console(tmp_path: Path) -> None:
    """README's offline console: `air run COPY --cassette COPY/cassettes` (here `--plain`):
    the question is answered, the change runs three tasks with real workers, the tests pass."""
    import shutil

    root, home = tmp_path / "calc", tmp_path / "home"
    home.mkdir()
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen(
        _air("run", str(root), "--plain", "--cassette", str(root / "cassettes")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "HOME": str(home)},
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    seen: list[str] = []

    def wait_line(text: str) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                return
        raise AssertionError(f"never printed {text!r}: {''.join(seen)}")

    try:
        proc.stdin.write("what does calc do?\n")
        proc.stdin.flush()
        wait_line("air> calc is a small calculator")
        proc.stdin.write("fix both bugs\n")
        proc.stdin.flush()
        wait_line("air> Run completed.")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    out = "".join(seen)
    assert "[fix-tokenizer] Keep the trailing number" in out
    tests = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=root, capture_output=True, timeout=60
    )
    assert tests.returncode == 0, tests.stderr


def test_nothing_configured_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    home, bare = tmp_path / "home", tmp_path / "bare"
    home.mkdir()
    bare.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["HOME"] = str(home)
    outside = subprocess.run(_air(), cwd=bare, env=env, capture_output=True, text=True, timeout=60)
    assert outside.returncode == 2
    assert outside.stderr.startswith(f"air: not_found: {bare} is not inside a git repository")
    assert "Traceback" not in outside.stderr
    unconfigured = subprocess.run(
        _air("run", str(bare)), env=env, capture_output=True, text=True, timeout=60
    )
    assert unconfigured.returncode == 2
    assert unconfigured.stderr.startswith("air: config_error: no model provider"), (
        unconfigured.stderr
    )
    assert "what to do:" in unconfigured.stderr
    assert not (bare / ".air").exists()
    no_main = subprocess.run(
        _air("run", str(bare), "--cassette", str(bare)),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_main.returncode == 2
    assert "no main.jsonl" in no_main.stderr
