"""A review changes nothing of the project, whatever its commands write (IMPL-SBX-3).

A review task runs in the project itself (``main``: read-only tasks need no worktree) with a
write area of None and the reviewer template, which lets it run the project's checks (a
``build_test`` command) and nothing the analysis sees writing. What the project's own script
writes, the analysis cannot see: before, ``sh check.sh`` of a review overwrote the user's
``notes.txt`` in place. A real headless run through a worker, the parent's tools and sandbox
against the strict local server: the review's commands see their writes, the project does not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse
from tests.gitrepo import init_repo
from tests.headless import REVIEW_BATCH, review_project, review_verdict, run_batch_json
from tests.llm.test_tool_input_mended import _models
from tests.trusted import trust_project


def test_a_reviews_checks_run_and_the_project_is_left_as_it_was(tmp_path: Path) -> None:
    root, home = review_project(tmp_path, REVIEW_BATCH)
    (root / "check.sh").write_text("echo hacked > notes.txt\nmkdir -p out\necho ran\n")
    init_repo(root)
    command = "sh check.sh && cat notes.txt && ls"
    call = Turn(tool=("c1", "shell_run", [json.dumps({"command": command})]), stop="tool_use")
    with StrictServer(api_key="k-test") as server:
        _models(root, "anthropic", server.url)
        trust_project(root, home)
        server.push(
            Reply(chunks=anthropic_sse(call)),
            Reply(chunks=anthropic_sse(Turn(text=[review_verdict()]))),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            "HOME": str(home),
            "AIR_TEST_KEY": "k-test",
        }
        proc = run_batch_json(root, env)
        answer = server.requests[1].body["messages"][-1]["content"][0]["content"]
    assert proc.returncode == 0, proc.stderr
    stdout = json.loads(answer)["stdout"]
    assert stdout.startswith("ran\nhacked\n"), answer  # the review's commands see their writes
    assert "out\n" in stdout
    assert (root / "notes.txt").read_text() == "ship it\n"
    assert not (root / "out").exists()
