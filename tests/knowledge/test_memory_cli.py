"""Issue #25 item 8 through the real CLI: an ExperienceMiner's statements become memory
candidates that ``air memory`` lists, shows, promotes and rejects, and a promoted rule is in
the next session's worker request at the strict server (IMPL-LEARN-6)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from air.testing.cassette_model import CassetteModel
from tests.forked_air import air_cli
from tests.gitrepo import git
from tests.knowledge.pyproject_sessions import claim, run_session

KEEP = "Run the whole test suite with -q before reporting a task as done."
DROP = "Prefer tabs over spaces in every file."
MINE = (
    "version: 1\nname: mine\ntasks:\n"
    "  - id: mine\n    type: mine_experience\n    title: lessons\n"
    "    description: Propose lessons from the finished work.\n"
)
REVIEW = (
    "version: 1\nname: review\ntasks:\n"
    "  - id: check\n    type: review\n    title: check notes\n"
    "    description: Read notes.txt and say whether it is fit to ship.\n"
)


def _project(tmp: Path) -> tuple[Path, Path, Path]:
    root, home, tapes = tmp / "proj", tmp / "home", tmp / "tapes"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir(exist_ok=True)
    tapes.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    (root / ".gitignore").write_text(".air/local/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    mined = {"candidates": [KEEP, DROP]}
    (tapes / "mine.jsonl").write_text(claim("Two lessons.", mined) + "\n")
    verdict = {"verdict": "approved", "findings": []}
    (tapes / "check.jsonl").write_text(claim("notes.txt is fine.", verdict) + "\n")
    return root, home, tapes


def _memory(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return air_cli(
        ["memory", *args, "--project", str(root)],
        env={**os.environ, "HOME": str(home)},
        timeout=60,
    )


def _ids(listing: str) -> dict[str, tuple[str, str]]:
    """text -> (id, status) of each ``air memory list`` line."""
    found: dict[str, tuple[str, str]] = {}
    for line in listing.splitlines():
        mid, status, _kind, text = line.split(None, 3)
        found[text] = (mid, status)
    return found


def _requests_of(server: Any, task: str) -> list[str]:
    return [json.dumps(r.body) for r in server.requests if f"Task {task}" in json.dumps(r.body)]


@pytest.mark.slow
def test_a_promoted_candidate_reaches_the_next_sessions_worker_and_a_rejected_one_does_not(
    tmp_path: Path,
) -> None:
    root, home, tapes = _project(tmp_path)
    (root / "batch.yaml").write_text(MINE)
    done, server = run_session(root, home, CassetteModel(tapes))
    assert done.returncode == 0, done.stderr
    assert [r.problem for r in server.rejected] == []

    listed = _memory(root, home, "list")
    assert listed.returncode == 0, listed.stderr
    ids = _ids(listed.stdout)
    assert {text: status for text, (_, status) in ids.items()} == {
        KEEP: "candidate",
        DROP: "candidate",
    }
    keep, drop = ids[KEEP][0], ids[DROP][0]
    shown = _memory(root, home, "show", keep)
    assert shown.returncode == 0
    assert KEEP in shown.stdout
    assert "candidate" in shown.stdout

    promoted = _memory(root, home, "promote", keep)
    assert promoted.returncode == 0, promoted.stderr
    assert f".air/shared/rules/learned-{keep}.md" in promoted.stdout
    rejected = _memory(root, home, "reject", drop)
    assert rejected.returncode == 0, rejected.stderr
    after = {text: status for text, (_, status) in _ids(_memory(root, home, "list").stdout).items()}
    assert after == {KEEP: "active", DROP: "archived"}

    # a decided memory is no candidate; an unknown id is bad input: exit 2, no traceback
    for args in (("promote", drop), ("reject", keep), ("show", "mem_nothing")):
        bad = _memory(root, home, *args)
        assert bad.returncode == 2, bad.stdout + bad.stderr
        assert "Traceback" not in bad.stderr
        assert bad.stderr.strip()

    # the next session's worker request carries the promoted rule, not the rejected one
    (root / "batch.yaml").write_text(REVIEW)
    done, server = run_session(root, home, CassetteModel(tapes))
    assert done.returncode == 0, done.stderr
    bodies = _requests_of(server, "check")
    assert bodies
    assert all(KEEP in body for body in bodies)
    assert not any(DROP in body for body in bodies)


async def test_a_promotion_from_the_cli_gets_its_event_when_its_session_opens_again(
    tmp_path: Path,
) -> None:
    """The outbox (IMPL-LEARN-2, IMPL-LEARN-6): ``MemoryBook.promote`` writes the row and the
    rule file at once; the candidate's session records ``memory.promoted`` in its recovery,
    once, and a promoted or rejected statement is not proposed again."""
    from air.contracts.artifact_records import MemoryStatus
    from air.session.knowledge_memory import PROMOTED_BY_USER, MemoryBook
    from air.session.knowledge_recovery import converge
    from tests.knowledge import scenario as sc

    sc.seed(tmp_path)
    db, ledger = sc.open_ledger(tmp_path)
    service = sc.service_for(tmp_path, ledger)
    keep, drop = await service.propose([KEEP, DROP], task_id="mine")
    report = await converge(service)
    assert sorted(report.awaiting_confirmation) == sorted([keep, drop])
    book = MemoryBook(tmp_path)
    promoted = book.promote(keep)
    book.reject(drop)
    book.close()
    assert promoted.status == MemoryStatus.ACTIVE
    assert KEEP in (tmp_path / str(promoted.target_ref)).read_text()
    assert await service.propose([KEEP, DROP], task_id="mine") == [keep, drop]
    await converge(service)
    await converge(service)
    history = ledger.history()
    (event,) = [e.payload for e in history if e.type == "memory.promoted"]
    assert event["candidate_id"] == keep
    assert event["promoted_by"] == PROMOTED_BY_USER
    archived = [e.payload["memory_id"] for e in history if e.type == "memory.archived"]
    assert [m for m in archived if m != sc.OLD_MEMORY] == ["mem_" + drop.removeprefix("cand_")]
    assert sum(e.type == "memory.candidate.created" for e in history) == 2
    service.close()
    db.close()
