"""Start-up benchmark: ``air run --headless`` from process start to the first model request.

Run: ``.venv/bin/python bench/startup.py [--runs N] [--no-bytecode-cache]``. A local
OpenAI-compatible server (``tests/llm/servers.py``) runs in this process and stamps each
request's arrival on the shared monotonic clock; ``.air/shared/models.yaml`` of a fresh temporary
project points at it, and a batch of one review task is run N times (``air run --headless
batch.yaml --json``, a new session each time). Printed: the median ms from spawning ``air`` to
the first request, its ratio to a bare ``python -c pass`` start measured in the same run, and the
goal (issue #3: <= 250 ms). A per-phase breakdown (medians) comes from the ``--json`` event
timestamps: start -> ``task.created`` (parent imports, session open, recovery, planning),
-> ``agent.started`` (worker spawn and handshake), -> first request (worker runtime imports,
the first ``provider.complete`` and the parent's adapter).

Bytecode: an installed package has its ``.pyc`` files; a checkout run with
``PYTHONDONTWRITEBYTECODE`` compiles air's sources on every start. By default the children get a
private ``PYTHONPYCACHEPREFIX`` (in the temporary directory) and one unmeasured warm-up run fills
it; ``--no-bytecode-cache`` keeps the environment as it is.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.llm.servers import LocalServer, Reply, Turn, openai_sse  # noqa: E402

GOAL_MS = 250.0
BATCH = """version: 1
tasks:
  - id: review-notes
    type: review
    title: Review the notes
    description: Read notes.txt and say whether it is fit to ship.
"""
PHASES = [
    ("start -> task.created", "start", "task.created"),
    ("task.created -> agent.started", "task.created", "agent.started"),
    ("agent.started -> first request", "agent.started", "first_request"),
]


def _verdict() -> str:
    block = json.dumps(
        {
            "status": "completed",
            "summary": "notes.txt is short and clear.",
            "result": {"verdict": "approved", "findings": []},
        }
    )
    return f"Looks fine.\n```json:result\n{block}\n```\n"


def _air() -> str:
    return str(Path(sys.executable).with_name("air"))


def _env(home: Path, tmp: Path, cache: bool) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "AIR_BENCH_KEY": "k"}
    if cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def _stamp(iso: str) -> float:
    parsed = datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")
    return parsed.replace(tzinfo=datetime.UTC).timestamp()


def _one_run(server: LocalServer, root: Path, env: dict[str, str]) -> dict[str, float]:
    """One headless run; ms offsets of the phase marks from the spawn of ``air``."""
    server.push(Reply(chunks=openai_sse(Turn(text=[_verdict()]))))
    seen = len(server.requests)
    wall0, mono0 = time.time(), time.monotonic()
    proc = subprocess.run(
        [_air(), "run", "--headless", "batch.yaml", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or len(server.requests) <= seen:
        raise SystemExit(f"the headless run failed ({proc.returncode}):\n{proc.stderr}")
    marks = {"start": 0.0, "first_request": (server.requests[seen].at - mono0) * 1000}
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        if event["type"] in ("task.created", "agent.started") and event["type"] not in marks:
            marks[event["type"]] = (_stamp(event["timestamp"]) - wall0) * 1000
    return marks


def _bare_ms(runs: int) -> float:
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-bytecode-cache", action="store_true")
    args = parser.parse_args()
    runs = max(5, args.runs)
    with tempfile.TemporaryDirectory() as tmpdir, LocalServer() as server:
        tmp = Path(tmpdir)
        root, home = tmp / "proj", tmp / "home"
        (root / ".air" / "shared").mkdir(parents=True)
        home.mkdir()
        (root / "notes.txt").write_text("ship it\n")
        (root / "batch.yaml").write_text(BATCH)
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/gpt-test\nproviders:\n  local:\n    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n    auth_ref: AIR_BENCH_KEY\n    models:\n"
            "      gpt-test: {context_window: 32768, max_output_tokens: 4096}\n"
        )
        env = _env(home, tmp, cache=not args.no_bytecode_cache)
        _one_run(server, root, env)  # warm-up: page cache, bytecode cache, project init
        results = [_one_run(server, root, env) for _ in range(runs)]
        bare = _bare_ms(runs)
    first = statistics.median(r["first_request"] for r in results)
    print(f"air run --headless: start -> first model request ({runs} runs, median)")
    print(f"  bytecode cache: {'off (environment as is)' if args.no_bytecode_cache else 'on'}")
    listed = ", ".join(f"{r['first_request']:.0f}" for r in results)
    print(f"  runs (ms): {listed}")
    print(f"  median:    {first:7.1f} ms")
    print(f"  bare `python -c pass`: {bare:5.1f} ms  ratio {first / bare:5.1f}x")
    print(f"  goal: <= {GOAL_MS:.0f} ms -> {'met' if first <= GOAL_MS else 'MISSED'}")
    print("phases (median ms):")
    for name, a, b in PHASES:
        spans = [r[b] - r[a] for r in results if a in r and b in r]
        if spans:
            print(f"  {name:34s} {statistics.median(spans):7.1f}")


if __name__ == "__main__":
    main()
