"""Air's own imports before the first model request, against the dependency floor's, same run.

Run: ``.venv/bin/python bench/own_imports.py [--runs N]``. Issue #28 item 6 asks that air's own
module imports before the first model request cost at most 60 ms of CPU. Which modules those
are is read from a real run: ``air run --headless`` of one review task against a local server
(``tests/llm/servers.py``), with an audit hook (a ``sitecustomize`` on ``PYTHONPATH``) that
writes ``sys.modules`` at the parent's first connection to that server. Then, N times, a fresh
interpreter runs the dependency floor of ``bench/startup.py`` (``FLOOR``: trio, pydantic,
yaml, sqlite3, h11, ssl and one validated model) and imports those ``air.*`` modules in the
order the run first imported them, the cyclic collector off as air's start-up has it
(``air.ipc.startup.hold_gc``); each phase's CPU time (``time.process_time``) is printed, as
medians, with their ratio: this machine's speed drifts, so the ratio is the figure that
travels.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.startup import FLOOR, _models_yaml  # noqa: E402
from tests.headless import REVIEW_BATCH, review_verdict  # noqa: E402
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse  # noqa: E402
from tests.trusted import trust_project  # noqa: E402

GOAL_MS = 60.0
_HOOK = """\
import os, sys
if os.environ.get("AIR_BENCH_MODULES") and "run" in sys.argv:
    def _first_request(event, args):
        if event != "socket.connect" or os.path.exists(os.environ["AIR_BENCH_MODULES"]):
            return
        address = args[1]
        if isinstance(address, tuple) and str(address[1]) == os.environ["AIR_BENCH_PORT"]:
            with open(os.environ["AIR_BENCH_MODULES"], "w") as handle:
                handle.write("\\n".join(name for name in list(sys.modules)))
    sys.addaudithook(_first_request)
"""
_MEASURE = """\
import gc, json, sys, time
start = time.process_time()
exec(sys.argv[1])
floor = time.process_time() - start
gc.disable()
names = [n for n in open(sys.argv[2]).read().split("\\n") if n == "air" or n.startswith("air.")]
start = time.process_time()
for name in names:
    if name not in sys.modules:
        __import__(name)
own = time.process_time() - start
print(json.dumps({"floor": floor * 1000, "own": own * 1000, "modules": len(names)}))
"""


def first_request_modules(tmp: Path) -> Path:
    """The file listing the parent's modules at its first model request (one real run)."""
    root, home, hook = tmp / "proj", tmp / "home", tmp / "hook"
    for made in (root / ".air" / "shared", home, hook):
        made.mkdir(parents=True)
    (root / "notes.txt").write_text("ship it\n")
    (root / "batch.yaml").write_text(REVIEW_BATCH)
    (hook / "sitecustomize.py").write_text(_HOOK)
    listing = tmp / "modules.txt"
    with LocalServer() as server:
        (root / ".air" / "shared" / "models.yaml").write_text(_models_yaml("anthropic", server.url))
        trust_project(root, home)
        server.push(Reply(chunks=anthropic_sse(Turn(text=[review_verdict()]))))
        env = {
            **os.environ,
            "HOME": str(home),
            "AIR_BENCH_KEY": "k",
            "PYTHONPATH": str(hook),
            "AIR_BENCH_MODULES": str(listing),
            "AIR_BENCH_PORT": server.url.rsplit(":", 1)[1].strip("/"),
        }
        air = str(Path(sys.executable).with_name("air"))
        done = subprocess.run(
            [air, "run", "--headless", "batch.yaml", "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    if done.returncode != 0 or not listing.exists():
        raise SystemExit(f"the run did not reach its first request: {done.stderr[-2000:]}")
    return listing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    runs = max(3, parser.parse_args().runs)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmpdir:
        listing = first_request_modules(Path(tmpdir))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmpdir) / "pycache")  # warm: as an install has
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        argv = [sys.executable, "-P", "-c", _MEASURE, FLOOR, str(listing)]
        subprocess.run(argv, env=env, cwd=REPO, check=True, capture_output=True)  # warm-up
        rows = [
            json.loads(
                subprocess.run(
                    argv, env=env, cwd=REPO, check=True, capture_output=True, text=True
                ).stdout
            )
            for _ in range(runs)
        ]
    floor = statistics.median(r["floor"] for r in rows)
    own = statistics.median(r["own"] for r in rows)
    verdict = "met" if own <= GOAL_MS else "MISSED"
    print(f"air's own imports before the first model request ({runs} runs, medians, CPU)")
    print(f"  load average: {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"  modules at the first request: {rows[0]['modules']} of air")
    print(f"  dependency floor's imports: {floor:6.1f} ms")
    print(f"  air's own imports after it: {own:6.1f} ms  ({own / floor:.2f}x the floor's)")
    print(f"  goal <= {GOAL_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
