"""``air report --html`` (issue #15 item 9): one self-contained page of a real run of
examples/calc — every task on the timeline by worker and wave, merges, tokens and cost per
task, and links to each task's diffs, command output and evidence; nothing from the network,
nothing from the log unescaped."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.forked_air import air_cli
from tests.gitrepo import git

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"
FAKE_AIR = str(Path(__file__).with_name("fake_air.py"))


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [
            a
            for t, a in self.tags
            if t == tag and all(k in a and (v == "*" or a[k] == v) for k, v in attrs.items())
        ]


def _parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _air(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return air_cli(args, cwd=cwd, timeout=180)


def _assert_self_contained(page: Page) -> None:
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "img", "iframe", "object", "embed"), tag
        for name, value in attrs.items():
            if name in ("href", "src", "action"):
                assert not value.startswith(("http:", "https:", "//", "javascript:")), value


@pytest.mark.slow
def test_the_html_report_of_the_calc_example(tmp_path: Path) -> None:
    root = tmp_path / "calc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    (root / ".gitignore").write_text(".air/local/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc"]):
        git(root, *args)
    run = _air("run", "--headless", "batch.yaml", "--cassette", "cassettes", cwd=root)
    assert run.returncode == 0, run.stderr
    out = tmp_path / "report" / "session.html"
    out.parent.mkdir()
    proc = _air("report", "--html", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    page = _parse(out)
    _assert_self_contained(page)
    [db_path] = list((root / ".air" / "local" / "sessions").glob("*/session.db"))
    db = open_session_database(db_path)
    try:
        events = list(EventStore(db).query())
    finally:
        db.close()
    tasks = [e.payload["task_spec"]["id"] for e in events if e.type == "task.created"]
    assert sorted(tasks) == ["changelog", "fix-evaluator", "fix-tokenizer"]
    bars = page.find("div", **{"class": "bar completed", "data-task": "*"})
    assert sorted(b["data-task"] for b in bars) == sorted(tasks)  # every task on the timeline
    waves = {b["data-task"]: b["data-wave"] for b in bars}
    assert waves == {"fix-tokenizer": "1", "fix-evaluator": "1", "changelog": "2"}
    workers = {e.payload["agent_id"] for e in events if e.type == "task.started"}
    rows = {r["data-agent"] for r in page.find("div", **{"class": "row", "data-agent": "*"})}
    assert workers <= rows  # one lane per worker
    merged = [e for e in events if e.type == "workspace.merge.completed"]
    assert len(page.find("div", **{"class": "merge"})) == len(merged) == 3
    raw = out.read_text(encoding="utf-8")
    for event in events:
        if event.type == "task.completed":
            usage = event.payload["worker_result"]["usage"]
            row = re.search(rf'<tr data-task="{event.payload["task_id"]}">(.*?)</tr>', raw)
            assert row is not None
            cells = re.findall(r"<td>([^<]*)</td>", row.group(1))
            # status, attempts, seconds, tokens, turns, cost (the usage ledger's: a cassette
            # replay has no price, so its cost is unknown, never 0; IMPL-USAGE-1)
            assert cells[0] == "completed"
            assert cells[3:6] == [str(usage["tokens"]), str(usage["turns"]), "unknown"]
    # links: each task's diff, its command output and evidence, all inside the session dir
    session_dir = db_path.parent.resolve()
    links = [a["href"] for a in page.find("a", href="*") if not a["href"].startswith("#")]
    assert links
    for href in links:
        target = (out.parent / href).resolve()
        assert target.is_file()
        assert target.is_relative_to(session_dir)
    assert sum(".diff" in h for h in links) == 3
    assert any("stderr" in h for h in links)
    evidence = [e.payload["evidence_ref_id"] for e in events if e.type == "evidence.created"]
    assert {a["data-evidence"] for a in page.find("li", **{"data-evidence": "*"})} == set(evidence)


def test_the_report_escapes_what_the_log_holds(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: a\n    title: '<script>alert(1)</script><img src=x>'\n"
    )
    (root / "fake.yaml").write_text("a: [{duration: 0.02, ending: failed}]\n")
    run = subprocess.run(
        [sys.executable, FAKE_AIR, "fake.yaml", "run", "--headless", "batch.yaml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    out = root / "r.html"
    assert _air("report", "--html", str(out), cwd=root).returncode == 0
    page = _parse(out)
    _assert_self_contained(page)
    assert "<script>alert(1)</script>" in "".join(page.text)  # shown as text
    assert page.find("div", **{"class": "bar failed", "data-task": "a"})


def test_a_retry_is_a_second_bar_of_the_task(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: a\n    title: A\n  - id: b\n    title: B\n"
        "    depends_on: [a]\n"
    )
    (root / "fake.yaml").write_text(
        "a: [{duration: 0.02, ending: crashed}, {duration: 0.02}]\nb: [{duration: 0.02}]\n"
    )
    run = subprocess.run(
        [sys.executable, FAKE_AIR, "fake.yaml", "run", "--headless", "batch.yaml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = root / "r.html"
    assert _air("report", "--html", str(out), cwd=root).returncode == 0
    bars = _parse(out).find("div", **{"data-task": "a", "data-attempt": "*"})
    assert [(b["data-attempt"], b["data-outcome"]) for b in bars] == [
        ("1", "failed"),
        ("2", "completed"),
    ]
