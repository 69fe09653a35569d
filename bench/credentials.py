"""What hiding the user's credential files costs a sandboxed command (IMPL-SBX-3), against
baselines measured in the same run.

Run: ``.venv/bin/python bench/credentials.py [--sizes 1000,10000,100000] [--runs 7]``.

For git repositories of N tracked files (plus an ignored ``build/`` of 1,000 files, a venv and
three untracked credential files), the medians of ``runs``:

- ``scan``: ``credential_files`` with its cache cleared (what a command pays at most once per
  ``FRESH_S`` per workspace);
- ``git``: ``git ls-files --others --directory`` alone (the listing the scan is built on);
- ``bwrap``: ``bwrap --ro-bind / / true`` (the floor of any sandboxed command);
- ``cached``: the call every other command makes.

Printed: scan / git and scan / bwrap; the scan should track git's own listing as the tree grows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.tools import credential_files as cf  # noqa: E402


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> None:
    for i in range(files):
        d = root / "src" / f"d{i // 100}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"f{i}.cpp").write_text("int x;\n")
    (root / ".gitignore").write_text("build/\n.env\nkeys/\nvenv/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", "tree")
    (root / "build").mkdir()
    for i in range(1000):
        (root / "build" / f"o{i}.o").write_text("x")
    (root / "venv").mkdir()
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / ".env").write_text("K=v\n")
    (root / "keys").mkdir()
    (root / "keys" / "a.pem").write_text("x")
    (root / "src" / "d0" / "local.key").write_text("x")


def median_s(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(ws: str, runs: int, bwrap: str | None) -> tuple[float, float, float, float]:
    """(scan, git, bwrap true, cached) medians in seconds for the workspace ``ws``."""

    def scan() -> None:
        cf._found.clear()
        found = cf.credential_files(ws)
        assert len(found) == 3, found

    def git() -> None:
        listing = ["git", "ls-files", "-z", "--others", "--directory"]
        subprocess.run(listing, cwd=ws, check=True, capture_output=True)

    def sandbox() -> None:
        subprocess.run([str(bwrap), "--ro-bind", "/", "/", "true"], check=True)

    return (
        median_s(scan, runs),
        median_s(git, runs),
        median_s(sandbox, runs) if bwrap else float("nan"),
        median_s(lambda: cf.credential_files(ws), 1000),
    )


def main(sizes: list[int], runs: int) -> None:
    bwrap = shutil.which("bwrap")
    print(f"load average {os.getloadavg()[0]:.2f}  cores {os.cpu_count()}  runs {runs}")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "proj"
            make_repo(root, size)
            t_scan, t_git, t_bwrap, t_cached = measure(os.path.realpath(root), runs, bwrap)
            print(
                f"{size:>7} files: scan {t_scan * 1000:7.1f} ms  git {t_git * 1000:7.1f} ms "
                f"({t_scan / t_git:4.2f}x)  bwrap true {t_bwrap * 1000:6.1f} ms "
                f"({t_scan / t_bwrap:4.2f}x)  cached {t_cached * 1e6:5.1f} us"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    main([int(s) for s in args.sizes.split(",")], args.runs)
