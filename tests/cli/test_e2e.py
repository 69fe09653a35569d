"""``air e2e`` (issue #15 item 4): the shipped examples run end to end in a temporary
directory and are checked; a broken example, a failing project test or a left-over process
is reported and the exit code says which example failed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from air.cli import e2e, main

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.slow
def test_air_e2e_passes_on_this_checkout() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "air", "e2e", "--json"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["name"] for r in results] == e2e.shipped_examples()
    assert "calc" in [r["name"] for r in results]
    assert all(r["ok"] and r["problems"] == [] for r in results)
    assert all(r["session_id"].startswith("ses_") for r in results)
    assert "air e2e: calc passed" in proc.stderr


def _broken_calc(tmp_path: Path) -> Path:
    source = tmp_path / "examples" / "calc"
    shutil.copytree(EXAMPLES / "calc", source, ignore=shutil.ignore_patterns("__pycache__"))
    (source / "cassettes" / "fix-evaluator.jsonl").unlink()  # that task cannot be replayed
    return source


def test_a_broken_example_is_reported_with_its_problems(tmp_path: Path) -> None:
    result = e2e.run_example("calc", tmp_path / "run", source=_broken_calc(tmp_path))
    assert not result.ok
    text = "\n".join(result.problems)
    assert "`air run` exited 1" in text
    assert "tasks completed:" in text
    assert "the project's tests fail" in text


def test_the_exit_code_names_the_failed_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _broken_calc(tmp_path)
    monkeypatch.setattr(e2e, "examples_dir", lambda: tmp_path / "examples")
    assert main(["e2e", "--example", "calc"]) == e2e.EXIT_BASE + 1
    assert "calc FAILED" in capsys.readouterr().err
    assert main(["e2e", "--example", "nosuch"]) == 2
    assert "no such example" in capsys.readouterr().err


def test_a_left_over_process_is_found(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    child = subprocess.Popen(["sleep", "30"], cwd=root)
    try:
        assert any(f"pid {child.pid} " in item for item in e2e._leftovers(-1, root))
    finally:
        child.kill()
        child.wait()
    assert e2e._leftovers(-1, root) == []
