"""Permission benchmark: the latency of each decision next to the bare tree-sitter parse.

Run: ``.venv/bin/python bench/permissions.py [--rounds R] [--against TREE]``. Over the command
suite of ``tests/security/corpus.py`` (the dangerous and the ordinary commands) and
``tests/security/gap_corpus.py`` (credential access, multi-call binaries, targets moved out of
the project, and the same shapes inside it), every call is timed on its own, ``R`` rounds of
the whole suite:
(a) ``CommandRiskAnalyzer.parse_only`` (tree-sitter-bash parse, the baseline),
(b) ``CommandRiskAnalyzer.analyze`` (parse, split, unwrap, classify every segment) and
(c) ``PermissionEngine.evaluate_sync`` (all six layers: one permission decision).
Printed: p50 / p99 / mean in µs over every timed call (a real latency distribution, not the
best of the rounds nor a total divided by the count), the ratios (b)/(a) and (c)/(a) from the
same process, and the load average before and after; then the p99 of each child run, its
median over the ``--repeat`` runs (default 10). Each tree is measured in a child process
importing ``air`` from that tree only; ``--against TREE`` (e.g. ``/work/main``) measures that
tree too, interleaved with this one (``--repeat`` times each), on this tree's command suite.
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

HERE = Path(__file__).resolve().parent.parent
BUDGET_MS = 1.0
GOAL_MS = 0.5


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _commands() -> list[str]:
    sys.path.insert(0, str(HERE))
    from tests.security.corpus import DANGEROUS, ORDINARY
    from tests.security.gap_corpus import (
        CREDENTIAL_ACCESS,
        HIDDEN_EFFECTS,
        MOVED_OUTSIDE,
        MULTICALL,
        STAYS_ALLOWED,
    )

    gaps = [
        *CREDENTIAL_ACCESS,
        *(c for c, _ in MULTICALL),
        *MOVED_OUTSIDE,
        *HIDDEN_EFFECTS,
        *STAYS_ALLOWED,
    ]
    return [c for c, _, _ in DANGEROUS] + list(ORDINARY) + gaps


def _time_every_call(
    commands: list[str], fn: Callable[[str], object], rounds: int
) -> tuple[list[float], list[float]]:
    """The wall-clock latency and the thread CPU time in µs of every call: ``rounds`` passes
    over ``commands``. The CPU time leaves out the time the thread waited for a core."""
    wall: list[float] = []
    cpu: list[float] = []
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    for _ in range(rounds):
        for command in commands:
            start, cpu_start = clock(), cpu_clock()
            fn(command)
            cpu_end, end = cpu_clock(), clock()
            wall.append((end - start) / 1000)
            cpu.append((cpu_end - cpu_start) / 1000)
    return wall, cpu


def _measure(commands: list[str], rounds: int) -> dict[str, list[float]]:
    """In the child: time the three layers with the ``air`` first on ``sys.path``."""
    import air
    from air.contracts.permission_records import PermissionRequestContext
    from air.security.commands import CommandRiskAnalyzer
    from air.security.engine import PermissionEngine

    analyzer = CommandRiskAnalyzer()
    engine = PermissionEngine(analyzer=analyzer)
    root = str(HERE)

    def evaluate(command: str) -> object:
        return engine.evaluate_sync(
            PermissionRequestContext(
                session_id="ses_bench",
                tool_name="shell.run",
                permission_template="executor",
                project_root=root,
                workspace_root=root,
                command=command,
            )
        )

    for command in commands[:20]:  # warm-up: parser, regex caches
        analyzer.analyze(command)
        evaluate(command)
    out: dict[str, list[float]] = {}
    for key, fn in (("parse", analyzer.parse_only), ("analyze", analyzer.analyze)):
        out[key], out[f"{key} cpu"] = _time_every_call(commands, fn, rounds)
    out["decide"], out["decide cpu"] = _time_every_call(commands, evaluate, rounds)
    out["air"] = [str(Path(air.__file__).resolve().parent.parent)]  # type: ignore[list-item]
    return out


def _child(tree: str, commands: list[str], rounds: int) -> dict[str, list[float]]:
    """Measure ``tree`` in a fresh interpreter that imports ``air`` from it alone."""
    env = {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.run(
        [sys.executable, "-P", str(Path(__file__).resolve()), "--child", "--rounds", str(rounds)],
        input=json.dumps(commands),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tree,
    )
    result: dict[str, list[float]] = json.loads(proc.stdout)
    imported = str(result.pop("air")[0])
    if imported != str(Path(tree).resolve()):
        raise SystemExit(f"the child for {tree} imported air from {imported}")
    return result


def _report(label: str, samples: dict[str, list[float]]) -> float:
    """Print one tree's table; return the decision p99 in µs."""
    rows = [
        ("tree-sitter parse (base)", samples["parse"], samples["parse cpu"]),
        ("analyze (classify)", samples["analyze"], samples["analyze cpu"]),
        ("engine.evaluate_sync", samples["decide"], samples["decide cpu"]),
    ]
    print(f"\n{label}: {len(samples['decide'])} decisions timed one by one")
    print(f"{'':28}{'p50 µs':>10}{'p99 µs':>10}{'mean µs':>10}{'cpu p50':>10}{'cpu p99':>10}")
    for name, values, cpu in rows:
        print(
            f"{name:28}{_percentile(values, 0.5):10.1f}{_percentile(values, 0.99):10.1f}"
            f"{statistics.fmean(values):10.1f}"
            f"{_percentile(cpu, 0.5):10.1f}{_percentile(cpu, 0.99):10.1f}"
        )
    parse = samples["parse"]
    for name, values, _ in rows[1:]:
        print(
            f"ratio {name} / parse: p50 {_percentile(values, 0.5) / _percentile(parse, 0.5):.2f}x"
            f"  p99 {_percentile(values, 0.99) / _percentile(parse, 0.99):.2f}x"
        )
    p99 = _percentile(samples["decide"], 0.99)
    ms = p99 / 1000
    verdict = "ok" if ms <= GOAL_MS else "past the goal" if ms <= BUDGET_MS else "OVER the budget"
    print(f"decision p99 {ms:.3f} ms (goal {GOAL_MS} ms, budget {BUDGET_MS} ms): {verdict}")
    cpu_ms = _percentile(samples["decide cpu"], 0.99) / 1000
    print(f"decision p99 of the CPU time alone {cpu_ms:.3f} ms")
    return p99


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="another tree (a checkout) to measure alongside")
    parser.add_argument("--repeat", type=int, default=10, help="child runs per tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        commands = json.loads(sys.stdin.read())
        json.dump(_measure(commands, args.rounds), sys.stdout)
        return 0
    commands = _commands()
    trees = {"this tree": str(HERE)}
    if args.against:
        trees[f"against {args.against}"] = os.path.abspath(args.against)
    print(f"commands: {len(commands)}, rounds: {args.rounds}, runs per tree: {args.repeat}")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    pooled: dict[str, dict[str, list[float]]] = {k: {} for k in trees}
    per_run: dict[str, list[float]] = {k: [] for k in trees}
    for _ in range(args.repeat):  # interleaved, so both trees see the same machine
        for label, tree in trees.items():
            samples = _child(tree, commands, args.rounds)
            per_run[label].append(_percentile(samples["decide"], 0.99))
            for key, values in samples.items():
                pooled[label].setdefault(key, []).extend(values)
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    p99s = {label: _report(label, samples) for label, samples in pooled.items()}
    for label, runs in per_run.items():
        print(
            f"{label}: decision p99 of each run, median of {len(runs)} runs"
            f" {statistics.median(runs) / 1000:.3f} ms (min {min(runs) / 1000:.3f},"
            f" max {max(runs) / 1000:.3f}; goal {GOAL_MS} ms)"
        )
    if args.against:
        mine, theirs = p99s.values()
        p50 = [_percentile(s["decide"], 0.5) for s in pooled.values()]
        print(
            f"\nthis tree / {args.against}: decision p50 {p50[0] / p50[1]:.2f}x, "
            f"p99 {mine / theirs:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
