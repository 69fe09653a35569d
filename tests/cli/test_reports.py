"""Reports CI tools read (issue #15 item 8): JUnit valid against the common JUnit schema with
per-task durations, the task's real error and its summary in ``system-out``; ``--json`` ends
with one summary record. Runs the real ``air`` process with scripted workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.cli.xsd_check import Schema

XSD = Schema(Path(__file__).with_name("junit.xsd"))
FAKE_AIR = str(Path(__file__).with_name("fake_air.py"))
BATCH = """\
version: 1
tasks:
  - id: a
    title: Fix the tokenizer
  - id: b
    title: Fix the parser
    depends_on: [a]
  - id: c
    title: Update the docs
    type: docs
"""


ARGS = ["run", "--headless", "batch.yaml", "--json", "--junit", "report.xml", "--isolation", "main"]


def _run(tmp_path: Path, script: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path / "proj"
    root.mkdir()
    return _run_in(root, script)


def _run_in(root: Path, script: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (root / "batch.yaml").write_text(BATCH)
    (root / "fake.yaml").write_text(script)
    proc = subprocess.run(
        [sys.executable, FAKE_AIR, "fake.yaml", *ARGS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, root


def _events(root: Path) -> list[Any]:
    [db_path] = list((root / ".air" / "local" / "sessions").glob("*/session.db"))
    db = open_session_database(db_path)
    try:
        return list(EventStore(db).query())
    finally:
        db.close()


def test_passing_batch_report_validates_with_durations_and_summary(tmp_path: Path) -> None:
    proc, root = _run(tmp_path, "default: {duration: 0.05}\n")
    assert proc.returncode == 0, proc.stderr
    assert XSD.validate(root / "report.xml") == []
    suites = ElementTree.parse(root / "report.xml").getroot()
    suite = suites.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "0", "0")
    cases = {c.get("name") or "": c for c in suite.iter("testcase")}
    assert sorted(cases) == ["a", "b", "c"]
    for case in cases.values():
        assert float(case.get("time") or "0") > 0  # each task took its scripted time
        out = case.findtext("system-out") or ""
        assert "status: completed after 1 attempt(s)" in out
    assert "Fix the tokenizer" in (cases["a"].findtext("system-out") or "")
    assert "3/3 completed" in (suite.findtext("system-out") or "")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    summary = lines[-1]
    assert [r["type"] for r in lines].count("air.summary") == 1
    assert summary["type"] == "air.summary"
    assert summary["exit_code"] == 0
    assert summary["status"] == "completed"
    assert summary["counts"]["tasks"] == 3
    assert summary["counts"]["completed"] == 3
    assert summary["session_id"] == lines[0]["session_id"]
    assert summary["duration_s"] > 0
    assert {"tokens", "turns", "cost_usd", "calls", "by_purpose"} <= set(summary["usage"])
    assert set(summary["tasks"]) == {"a", "b", "c"}


def test_failing_batch_report_validates_and_carries_the_real_error(tmp_path: Path) -> None:
    proc, root = _run(
        tmp_path, "default: {duration: 0.02}\na: [{duration: 0.02, ending: failed}]\n"
    )
    assert proc.returncode == 1, proc.stderr
    assert XSD.validate(root / "report.xml") == []
    failed = [e for e in _events(root) if e.type == "task.failed" and e.payload["task_id"] == "a"]
    error = failed[-1].payload["error"]
    suite = ElementTree.parse(root / "report.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name") or "": c for c in suite.iter("testcase")}
    failure = cases["a"].find("failure")
    assert failure is not None
    assert failure.get("message") == error["message"]
    assert failure.get("type") == error["kind"]
    assert failure.get("message") != "task failed"
    assert cases["b"].find("failure") is not None  # blocked by a
    assert cases["c"].find("failure") is None
    assert int(suite.get("failures") or 0) == 2
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["exit_code"] == 1
    assert summary["tasks"]["a"]["error"] == error["message"]


def test_the_checker_rejects_the_old_report_shape(tmp_path: Path) -> None:
    """The report air wrote before: a bare <testsuite> root, a ``file`` attribute holding the
    title, no ``errors``/``time``, "task failed" with no ``type``. The schema says no."""
    old = tmp_path / "old.xml"
    old.write_text(
        '<testsuite name="s" tests="1" failures="1" skipped="0">'
        '<testcase classname="air.task" name="a" file="Fix it">'
        '<failure message="task failed">Fix it: failed</failure></testcase></testsuite>'
    )
    assert XSD.validate(old) != []
    wrapped = tmp_path / "wrapped.xml"
    wrapped.write_text(
        '<testsuites><testsuite name="s" tests="1" failures="1" errors="0" time="1">'
        '<testcase classname="air.task" name="a" file="x">'
        '<failure message="task failed">x</failure></testcase></testsuite></testsuites>'
    )
    problems = XSD.validate(wrapped)
    assert any("'time'" in p for p in problems)
    assert any("'type'" in p for p in problems)


def test_both_reports_are_written_through_no_link_put_beside_them(tmp_path: Path) -> None:
    """Found: ``--junit report.xml`` and ``air report --html page.html`` wrote through the
    fixed ``report.xml.tmp`` / ``page.html.tmp``, so a link there (a task's merged file in the
    project, another user's in a shared directory) had the report overwrite the file it named,
    and the report became that link. Now the temporary file is this process's own, made with
    O_EXCL | O_NOFOLLOW, and the report a regular file."""
    victim = tmp_path / "victim.c"
    victim.write_text("int precious;\n")
    root = tmp_path / "proj"
    root.mkdir()
    for name in ("report.xml", "page.html"):
        (root / f"{name}.tmp").symlink_to(victim)
    proc, root = _run_in(root, "default: {duration: 0.05}\n")
    assert proc.returncode == 0, proc.stderr
    done = subprocess.run(
        [sys.executable, "-m", "air.cli", "report", "--html", "page.html"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "int precious;\n"
    for name in ("report.xml", "page.html"):
        assert (root / name).is_file()
        assert not (root / name).is_symlink()
    assert XSD.validate(root / "report.xml") == []
    assert "<!DOCTYPE html>" in (root / "page.html").read_text()
