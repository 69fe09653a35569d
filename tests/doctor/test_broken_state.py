"""Must show (issue #15): ``air doctor`` on a deliberately broken project — read-only ``.air``,
no git on PATH, a corrupt session database, a session whose tables drifted from its log,
stale run records of a dead air process, an orphan worktree — reports each with a
user_action; ``--fix`` repairs what it may; a second ``air doctor`` is clean."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from air.contracts.ids import utc_now_iso
from air.events.store import EventStore
from air.store.session_db import open_session_database
from tests.doctor.helpers import air, doctor_json, make_project, path_without, write_session
from tests.gitrepo import git


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _plant_broken_state(project: Path) -> dict[str, Path]:
    local = project / ".air" / "local"
    corrupt = write_session(project, "ses_corrupt", seed=1)
    with open(corrupt, "r+b") as fh:  # the header and first page are garbage now
        fh.write(b"this is no longer a sqlite database" * 40)
    drifted = write_session(project, "ses_drift", seed=2)
    conn = sqlite3.connect(drifted)
    task_id = conn.execute("SELECT id FROM tasks ORDER BY id LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
    conn.commit()
    conn.close()
    artifacts = drifted.parent / "artifacts"
    artifacts.mkdir()
    (artifacts / "stray-notes.txt").write_text("not an artifact\n")
    (artifacts / ".tmp-unfinished").write_text("half a write\n")
    runs = local / "state" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    record = {
        "agent_id": "agt_stale",
        "task_id": "tsk_stale",
        "session_id": "ses_drift",
        "pid": _dead_pid(),
        "pid_start_time": "1",
        "boot_id": None,
        "marker": "air-run-doctor-test-stale",
        "state": "running",
        "started_at": utc_now_iso(),
        "updated_at": utc_now_iso(),
        "owner": {"pid": _dead_pid(), "pid_start_time": "1", "boot_id": None, "lock": "gone.lock"},
    }
    (runs / "agt_stale.json").write_text(json.dumps(record))
    worktree = local / "workspaces" / "ws_orphan"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    git(project, "worktree", "add", "-q", "-b", "air/ws/ws_orphan", str(worktree))
    (worktree / "unsaved.txt").write_text("work nobody merged\n")
    return {"corrupt": corrupt, "drifted": drifted, "runs": runs, "worktree": worktree}


def _checks(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for found in report["issues"]:
        out.setdefault(found["check"], []).append(found)
    return out


@pytest.mark.slow
def test_broken_state_is_reported_fixed_and_then_clean(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    planted = _plant_broken_state(project)
    local = project / ".air" / "local"

    # 1. read-only .air/local (a real read-only bind mount): one blocking issue, rest skipped
    ro = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(local), str(local), "--"]
    code, report, _ = doctor_json(project, home, prefix=ro)
    assert code == 1
    boot = _checks(report)["bootstrap.air_writable"][0]
    assert boot["severity"] == "blocking"
    assert "writable" in str(boot["user_action"])
    assert report["facts"]["skipped"]
    assert len(report["issues"]) == 1

    # 2. no git on PATH: everything else is reported, each with what to do
    code, report, _ = doctor_json(project, home, path=path_without("git", tmp_path=tmp_path))
    assert code == 1
    found = _checks(report)
    assert found["git"][0]["user_action"]
    assert "git" in str(found["git"][0]["message"])
    corrupt = found["databases.session.ses_corrupt"][0]
    assert corrupt["severity"] == "blocking"
    assert corrupt["user_action"]
    drift = [k for k in found if k.startswith("databases.session.ses_drift")]
    assert drift, found.keys()
    assert all(found[k][0]["user_action"] for k in drift)
    assert "agt_stale" in str(found["run_records"][0]["message"])
    assert found["run_records"][0]["user_action"]
    orphan = found["worktrees"]
    assert any(str(planted["worktree"]) in str(i["message"]) for i in orphan)
    assert "stray-notes.txt" in str(found["artifacts.ses_drift"][0]["message"])
    assert all(i["user_action"] for i in report["issues"])

    # 3. --fix (PATH restored): every repair air may do is done
    _, report, _ = doctor_json(project, home, "--fix")
    fixes = {(f["check"], f["status"]) for f in report["fixes"]}
    assert ("run_records", "fixed") in fixes, report["fixes"]
    assert ("worktrees", "fixed") in fixes, report["fixes"]
    assert ("databases.session.ses_corrupt", "fixed") in fixes, report["fixes"]
    assert any(c.startswith("databases.session.ses_drift") and s == "fixed" for c, s in fixes)
    assert ("artifacts.ses_drift", "fixed") in fixes, report["fixes"]

    # 4. the second run is clean
    code, report, _done = doctor_json(project, home)
    assert code == 0, json.dumps(report["issues"], indent=1)
    assert [i for i in report["issues"] if i["severity"] != "info"] == []

    # nothing was lost: the orphan's files and branch, the damaged database, the log
    quarantined = list((local / "quarantine").rglob("unsaved.txt"))
    assert [p.read_text() for p in quarantined] == ["work nobody merged\n"]
    assert "air/ws/ws_orphan" in git(project, "branch", "--list", "air/ws/*")
    assert "ws_orphan" not in git(project, "worktree", "list")
    assert list((local / "quarantine").rglob("ses_corrupt/session.db"))
    assert not planted["corrupt"].exists()
    session_dir = planted["drifted"].parent
    assert (session_dir / "quarantine" / "stray-notes.txt").read_text() == "not an artifact\n"
    assert not (session_dir / "artifacts" / ".tmp-unfinished").exists()
    rec = json.loads((planted["runs"] / "agt_stale.json").read_text())
    assert rec["state"] == "terminal"
    assert rec["terminal_state"] == "orphaned-dead"
    db = open_session_database(planted["drifted"], must_exist=True)
    try:
        assert db.query("SELECT count(*) AS n FROM tasks")[0]["n"] >= 1
        kinds = [e.type for e in EventStore(db).query()]
    finally:
        db.close()
    assert kinds[0] == "session.created"

    # doctor.* events: one run recorded per writable run (3 of the 4)
    doctor_db = open_session_database(local / "doctor" / "doctor.db", must_exist=True)
    try:
        events = EventStore(doctor_db).query()
    finally:
        doctor_db.close()
    assert sum(e.type == "doctor.run.completed" for e in events) == 3
    found_events = [e for e in events if e.type == "doctor.issue.found"]
    assert any(e.payload["check"] == "git" and e.payload["user_action"] for e in found_events)
    assert events[-1].payload["ok"] is True

    # the user-facing log has the problems (redacted), under HOME
    log = (home / ".air" / "logs" / "air.log").read_text()
    assert "run_records" in log


def test_doctor_help_and_text_report(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    done = air(project, home, "doctor", "--help")
    assert done.returncode == 0
    assert "--bundle FILE" in done.stdout
    assert "--fix" in done.stdout
    done = air(project, home, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "air doctor: no problems found" in done.stdout
    done = air(project, home, "doctor", "--bogus")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_doctor_outside_a_project_checks_the_machine(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code, report, _ = doctor_json(tmp_path, home)
    assert code == 0, report
    assert "no air project" in str(report["facts"]["project"])
    assert "git" in report["facts"]
    assert not os.path.exists(tmp_path / ".air")
