"""Permission benchmark: command classification time next to the bare tree-sitter parse.

Run: ``.venv/bin/python bench/permissions.py [--rounds R]``. Over the command suite of
``tests/security/corpus.py`` (the dangerous and the ordinary commands) and
``tests/security/gap_corpus.py`` (credential access, multi-call binaries, targets moved out of
the project, and the same shapes inside it), each command is timed
(a) through ``CommandRiskAnalyzer.parse_only`` (tree-sitter-bash parse, the baseline) and
(b) through ``CommandRiskAnalyzer.analyze`` (parse, split, unwrap, classify every segment) and
(c) through ``PermissionEngine.evaluate_sync`` (all six layers). Printed: p50 / p99 per
command in µs for each, and the ratios (b)/(a) and (c)/(a), all measured in this run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from air.contracts.permission import PermissionRequestContext
from air.security import CommandRiskAnalyzer, PermissionEngine
from tests.security.corpus import DANGEROUS, ORDINARY
from tests.security.gap_corpus import (
    CREDENTIAL_ACCESS,
    HIDDEN_EFFECTS,
    MOVED_OUTSIDE,
    MULTICALL,
    STAYS_ALLOWED,
)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _time_each(commands: list[str], fn: Callable[[str], object], rounds: int) -> list[float]:
    """Per-command time in µs: the best of ``rounds`` runs of each command."""
    out: list[float] = []
    for command in commands:
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter_ns()
            fn(command)
            best = min(best, (time.perf_counter_ns() - start) / 1000)
        out.append(best)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    gaps = [
        *CREDENTIAL_ACCESS,
        *(c for c, _ in MULTICALL),
        *MOVED_OUTSIDE,
        *HIDDEN_EFFECTS,
        *STAYS_ALLOWED,
    ]
    commands = [c for c, _, _ in DANGEROUS] + list(ORDINARY) + gaps
    analyzer = CommandRiskAnalyzer()
    engine = PermissionEngine(analyzer=analyzer)
    root = str(Path.cwd())

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
    parse = _time_each(commands, analyzer.parse_only, args.rounds)
    classify = _time_each(commands, analyzer.analyze, args.rounds)
    decide = _time_each(commands, evaluate, args.rounds)
    print(
        f"commands: {len(commands)} ({len(DANGEROUS)} dangerous, {len(ORDINARY)} ordinary, "
        f"{len(gaps)} issue-9 gap cases)"
    )
    print(f"{'':28}{'p50 µs':>10}{'p99 µs':>10}{'mean µs':>10}")
    rows = [
        ("tree-sitter parse (base)", parse),
        ("analyze (classify)", classify),
        ("engine.evaluate_sync", decide),
    ]
    for label, values in rows:
        print(
            f"{label:28}{_percentile(values, 0.5):10.1f}{_percentile(values, 0.99):10.1f}"
            f"{statistics.fmean(values):10.1f}"
        )
    p99_ms = _percentile(decide, 0.99) / 1000
    print(
        f"engine.evaluate_sync p99 {p99_ms:.3f} ms (budget 1 ms): {'ok' if p99_ms <= 1 else 'OVER'}"
    )
    for label, values in rows[1:]:
        ratios = [v / p for v, p in zip(values, parse, strict=True)]
        print(
            f"ratio {label} / parse: p50 {_percentile(values, 0.5) / _percentile(parse, 0.5):.2f}x"
            f"  p99 {_percentile(values, 0.99) / _percentile(parse, 0.99):.2f}x"
            f"  per-command median {statistics.median(ratios):.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
