"""A plan or architecture reference reaches a worker's prompt only when ``fs.read`` would let
the worker read it: a ``plan_ref: .env`` in a batch (or in a plan the Main Agent was talked into)
fails its task before the worker starts, and the secret is in no file air wrote; the project's
documents and ``.air/shared`` still go in."""

from __future__ import annotations

import shutil
from pathlib import Path

from air.nursery.worker_context import document_refusal
from tests.doctor.helpers import air
from tests.gitrepo import git

REPO = Path(__file__).resolve().parents[2]
SECRET = "API_TOKEN=planted-7f3e9a1c5b2d"


def test_a_ref_to_a_credential_file_fails_its_task_and_reaches_no_prompt(tmp_path: Path) -> None:
    root = tmp_path / "calc"
    shutil.copytree(REPO / "examples" / "calc", root, ignore=shutil.ignore_patterns(".air"))
    (root / ".env").write_text(SECRET + "\n")
    batch = (root / "batch.yaml").read_text()
    marked = batch.replace(
        '    scope: {write_area: ["calc/tokenizer.py"]}\n',
        '    scope: {write_area: ["calc/tokenizer.py"]}\n    context_refs: {plan_ref: .env}\n',
        1,
    )
    assert marked != batch
    (root / "batch.yaml").write_text(marked)
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".air/local/\n.env\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "calc")
    home = tmp_path / "home"
    home.mkdir()
    done = air(root, home, "run", "--headless", "batch.yaml", "--cassette", "cassettes")
    assert done.returncode == 1, done.stderr
    assert "fix-tokenizer failed: context reference '.env'" in done.stderr
    assert "credentials" in done.stderr
    assert "fix-evaluator completed" in done.stderr  # the other tasks are untouched
    leaked = [
        p
        for p in (root / ".air" / "local").rglob("*")
        if p.is_file() and not p.is_symlink() and SECRET.encode() in p.read_bytes()
    ]
    assert leaked == []


def test_what_may_be_a_document(tmp_path: Path) -> None:
    root = tmp_path / "p"
    for rel in ("docs/arch.md", ".air/shared/plan/plan.md", ".air/local/state/x.md", "build/o.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "credentials.json").write_text("{}")
    refusal = document_refusal(str(root))
    for ok in ("docs/arch.md", ".air/shared/plan/plan.md"):
        assert refusal(root / ok) is None, ok
    for refused, why in (
        (".air/local/state/x.md", "air_internal"),
        (".git/config", "project_git_internal"),
        ("secrets/credentials.json", "credentials"),
        ("/etc/shadow", "credentials"),
        ("/etc/passwd", "system_sensitive"),
    ):
        said = refusal(root / refused)
        assert said is not None, refused
        assert said.startswith(why), (refused, said)
