"""Cost of the pre-merge snapshot (air/workspace/backups.py) against plain git in the same run.

Builds a project from a copy of this repository's ``air/`` and ``tests/`` trees (a git repo
with one commit), then times ``BackupRepository.snapshot`` (the first one, and a repeated one
after one file changed, which is what every merge after the first costs) against the
baseline ``git status --porcelain`` over the same tree. Prints the ratios.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).parents[1]))

from air.workspace.backups import BackupRepository

REPO = Path(__file__).parents[1]
GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", "-c", "commit.gpgsign=false"]


def _timed(fn: object, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        for part in ("air", "tests"):
            shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        files = sum(1 for p in root.rglob("*") if p.is_file())
        subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
        subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
        subprocess.run([*GIT, "commit", "-qm", "x"], cwd=root, check=True)
        backups = BackupRepository(str(root), session_id="ses_bench")
        start = time.perf_counter()
        trio.run(backups.snapshot, "first")
        first = time.perf_counter() - start
        target = root / "air" / "__init__.py"

        def repeated() -> None:
            target.write_text(target.read_text() + "#\n")
            trio.run(backups.snapshot, "again")

        def status() -> None:
            subprocess.run(
                [*GIT, "status", "--porcelain"], cwd=root, check=True, capture_output=True
            )

        again = _timed(repeated)
        baseline = _timed(status)
        print(f"tree: {files} files")
        print(f"git status (baseline): {baseline * 1000:.1f} ms")
        print(f"first snapshot:        {first * 1000:.1f} ms  ({first / baseline:.1f}x baseline)")
        print(f"repeated snapshot:     {again * 1000:.1f} ms  ({again / baseline:.1f}x baseline)")


if __name__ == "__main__":
    main()
