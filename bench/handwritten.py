"""Each hand-written part of air against the library that would replace it (IMPL-DEP-3).

Run: ``.venv/bin/python bench/handwritten.py [--runs K] [--libs DIR]``. ``--libs`` is a
directory of extra packages (``pip install --target DIR tenacity junit-xml``) for the two
alternatives air does not depend on; without them those rows say "not installed".

1. Import cost: a fresh ``python -c "import BASE, M"`` per module, K runs interleaved, the
   median CPU ms (user + system) less that of ``import BASE`` (what air loads anyway): air's
   HTTP/1.1 client (``air.llm.http11``) vs ``httpx``; air's SSE decoder vs the SDK's
   (``anthropic._streaming``: the SDK must be imported); ``air.yamlload`` vs ``yaml``; air's
   retry (three lines of ``air.llm.manager`` on ``random``) vs ``tenacity``; air's JUnit
   report (``air.cli.junit``, on ``xml.etree``) vs ``junit_xml``.
2. Work: SSE — a Messages stream of 2,000 text deltas in 4 KiB reads, µs per event, air's
   ``feed_data`` vs the SDK's ``SSEDecoder.iter_bytes``; YAML — the shipped models.yaml
   reference, µs per load, ``air.yamlload.load`` vs ``yaml.safe_load``; JUnit — a report of 200
   tasks built and serialised, µs, air vs ``junit_xml``. Least of K rounds (load only adds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PAIRS = [  # (part, what air loads anyway, air's module, the library's)
    ("HTTP/1.1 client", "trio", "air.llm.http11", "httpx"),
    ("SSE decoder", "json", "air.llm.sse", "anthropic._streaming"),
    ("YAML loader", "json", "air.yamlload", "yaml"),
    ("retry", "json", "random", "tenacity"),
    ("JUnit report", "json", "air.cli.junit", "junit_xml"),
]


def _import_ms(code: str, env: dict[str, str]) -> float:
    """CPU ms (user + system) of a fresh ``python -c CODE``: the load on the machine adds
    waiting, not CPU, so this is steadier than wall time."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    return cpu if proc.returncode == 0 else float("nan")


def import_costs(runs: int, env: dict[str, str]) -> None:
    codes = ["pass"]
    for _, base, air, lib in PAIRS:
        codes += [f"import {base}", f"import {base}, {air}", f"import {base}, {lib}"]
    codes = list(dict.fromkeys(codes))
    times: dict[str, list[float]] = {code: [] for code in codes}
    for _ in range(runs):
        for code in codes:
            times[code].append(_import_ms(code, env))
    median = {code: statistics.median(got) for code, got in times.items()}
    bare = median["pass"]
    print(f"import CPU, median of {runs} fresh processes (python -c pass: {bare:.0f} ms);")
    print("ms each adds to a process that has already imported what air loads anyway")
    print("| part | loaded anyway | air | ms | library | ms |")
    print("|---|---|---|---|---|---|")
    for part, base, air, lib in PAIRS:
        a = median[f"import {base}, {air}"] - median[f"import {base}"]
        b = median[f"import {base}, {lib}"] - median[f"import {base}"]
        shown = "not installed" if b != b else f"{b:.0f}"
        print(f"| {part} | `{base}` | `{air}` | {a:.0f} | `{lib}` | {shown} |")


def _best(fn: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def sse_stream(n: int) -> list[bytes]:
    event = {"type": "content_block_delta", "index": 0}
    parts = [b'event: message_start\ndata: {"type":"message_start"}\n\n']
    for i in range(n):
        delta = {**event, "delta": {"type": "text_delta", "text": f"word{i} "}}
        parts.append(b"event: content_block_delta\ndata: " + json.dumps(delta).encode() + b"\n\n")
    body = b"".join(parts)
    return [body[i : i + 4096] for i in range(0, len(body), 4096)]


def work(rounds: int) -> None:
    from air.llm.sse import SSEDecoder

    n = 2000
    chunks = sse_stream(n)

    def air_sse() -> None:
        decoder = SSEDecoder()
        got = [d for c in chunks for d in decoder.feed_data(c)]
        assert len(got) == n + 1

    def sdk_sse() -> None:
        from anthropic._streaming import SSEDecoder as SdkDecoder

        got = [e.data for e in SdkDecoder().iter_bytes(iter(chunks))]
        assert len(got) == n + 1

    print(f"\nwork, least of {rounds} rounds")
    print("| part | air | library | library / air |")
    print("|---|---|---|---|")
    a, b = _best(air_sse, rounds) / (n + 1) * 1e6, _best(sdk_sse, rounds) / (n + 1) * 1e6
    print(f"| SSE, µs per event | {a:.2f} | {b:.2f} (anthropic SDK) | {b / a:.1f}x |")

    import yaml

    from air import yamlload

    text = (REPO / "air" / "llm" / "resources" / "models.example.yaml").read_text()
    assert yamlload.load(text) == yaml.safe_load(text)
    a = _best(lambda: yamlload.load(text), rounds) * 1e6
    b = _best(lambda: yaml.safe_load(text), rounds) * 1e6
    print(f"| YAML, µs per models.yaml | {a:.0f} | {b:.0f} (yaml.safe_load) | {b / a:.1f}x |")

    try:
        import junit_xml  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        print("| JUnit | - | not installed | - |")
        return
    from air.cli.junit import junit_xml as air_junit
    from air.cli.session_report import SessionSummary, TaskSummary

    tasks = {
        f"t{i}": TaskSummary(
            task_id=f"t{i}",
            title=f"task {i}",
            status="failed" if i % 5 == 0 else "completed",
            error_kind="test_failure" if i % 5 == 0 else None,
            error_message="tests failed" if i % 5 == 0 else None,
            summary="did the thing\nin two lines",
        )
        for i in range(200)
    }
    summary = SessionSummary("s1", None, None, tasks, 1)

    def air_report() -> None:
        from xml.etree import ElementTree

        ElementTree.tostring(air_junit(summary, hostname="h"), encoding="unicode")

    def lib_report() -> None:
        cases = []
        for task in tasks.values():
            case = junit_xml.TestCase(task.title, classname="air", stdout=task.summary)
            if task.status == "failed":
                case.add_failure_info(task.error_message, failure_type=task.error_kind)
            cases.append(case)
        junit_xml.to_xml_report_string([junit_xml.TestSuite("air session s1", cases)])

    a, b = _best(air_report, rounds) * 1e6, _best(lib_report, rounds) * 1e6
    print(f"| JUnit, µs per 200-task report | {a:.0f} | {b:.0f} (junit-xml) | {b / a:.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--libs", help="a directory holding tenacity and junit-xml")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), args.libs]))}
    if args.libs:
        sys.path.append(args.libs)
    import_costs(args.runs, env)
    work(max(args.runs, 5))


if __name__ == "__main__":
    main()
