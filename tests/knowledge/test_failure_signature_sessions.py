"""Issue #25 item 8 through the real CLI: a failed verification is filed under its failing
tests, not under its command (IMPL-LEARN-5).

Three ``air run --headless`` sessions over one Python project whose real pytest suite (run in
the real sandbox through ``shell.run``) fails differently each time: session 1 ``test_mean``,
session 2 the unrelated ``test_parse``, session 3 ``test_mean`` again. Each session's executor
claims success, its verification fails, a debugger fixes the code and air files the fix. The
first two failures get different signatures (the second debugger is not told the first fix);
the third gets the first one's signature and its debug task is told the first fix.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from air.testing.cassette_model import CassetteModel
from tests.knowledge.pyproject_sessions import (
    BAD_MEAN,
    BAD_PARSE,
    GOOD_MEAN,
    GOOD_PARSE,
    commit_calc,
    make_project,
    run_session,
    scripts,
)

MEAN_FIX = {"old_string": BAD_MEAN, "new_string": GOOD_MEAN}
PARSE_FIX = {"old_string": BAD_PARSE, "new_string": GOOD_PARSE}
MEAN_DIAGNOSIS = "mean divided the sum by n - 1"
PARSE_DIAGNOSIS = "parse read its digits as octal"


def _failure_and_debug_spec(db: Path) -> tuple[str, str]:
    """The signature of the session's failed ``work`` attempt and its debug task's description."""
    conn = sqlite3.connect(db)
    try:
        (payload,) = conn.execute(
            "SELECT payload_json FROM events WHERE type = 'task.failed' "
            "AND json_extract(payload_json, '$.task_id') = 'work'"
        ).fetchone()
        (spec,) = conn.execute(
            "SELECT json_extract(payload_json, '$.task_spec.description') FROM events "
            "WHERE type = 'task.created' "
            "AND json_extract(payload_json, '$.task_spec.id') = 'work.debug1'"
        ).fetchone()
    finally:
        conn.close()
    error = json.loads(payload)["error"]
    assert error["kind"] == "verification_failed"
    return str(error["semantic_signature"]), str(spec)


def _sessions(root: Path) -> list[Path]:
    dbs = (root / ".air" / "local" / "sessions").glob("*/session.db")
    return sorted(dbs, key=lambda p: p.stat().st_mtime)


@pytest.mark.slow
def test_unrelated_pytest_failures_get_their_own_signatures_and_a_repeat_gets_the_first_fix(
    tmp_path: Path,
) -> None:
    root, home = make_project(tmp_path)
    plays = [
        (MEAN_FIX, MEAN_DIAGNOSIS, {"mean": GOOD_MEAN, "parse": BAD_PARSE}),
        (PARSE_FIX, PARSE_DIAGNOSIS, {"mean": BAD_MEAN, "parse": GOOD_PARSE}),
        (MEAN_FIX, MEAN_DIAGNOSIS, None),
    ]
    for number, (fix, diagnosis, next_calc) in enumerate(plays, start=1):
        model = CassetteModel(scripts(tmp_path / f"s{number}", number, fix, diagnosis))
        done, server = run_session(root, home, model)
        assert done.returncode == 0, done.stdout + done.stderr
        assert [r.problem for r in server.rejected] == []
        if next_calc is not None:
            commit_calc(root, f"broken again after session {number}", **next_calc)
    (sig1, spec1), (sig2, spec2), (sig3, spec3) = map(_failure_and_debug_spec, _sessions(root))
    assert sig1.startswith("pytest:tests/test_calc.py::test_mean:"), sig1
    assert sig2.startswith("pytest:tests/test_calc.py::test_parse:"), sig2
    assert sig3 == sig1
    # known fixes are looked up by the failure's own signature
    assert MEAN_DIAGNOSIS not in spec1
    assert MEAN_DIAGNOSIS not in spec2
    assert PARSE_DIAGNOSIS not in spec2
    assert MEAN_DIAGNOSIS in spec3
    assert PARSE_DIAGNOSIS not in spec3
