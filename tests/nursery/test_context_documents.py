"""A plan or architecture reference, a rules or instruction file reaches a worker's prompt only when
``fs.read`` would let the worker read it: a ``plan_ref: .env`` in a batch (or in a plan the Main
Agent was talked into) fails its task before the worker starts, and the secret is in no file air
wrote; the project's documents and ``.air/shared`` still go in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
    # the preview refuses what the run would (it printed the file's text as the task's plan)
    plan = air(root, home, "run", "--plan", "batch.yaml", "--cassette", "cassettes", "--json")
    assert plan.returncode == 2, plan.stdout
    assert "permission_denied: context reference '.env'" in plan.stderr
    assert SECRET not in plan.stdout + plan.stderr
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


def test_an_instruction_file_linked_to_a_credential_file_reaches_no_prompt(
    tmp_path: Path,
) -> None:
    """``AGENTS.md -> .env`` (a clone may ship it before the user writes the ``.env`` its README
    asks for): the worker's context is refused, the secret in no error; a link to the
    project's own document is read."""
    from air.context import ContextAssembler
    from air.contracts.error import AirException, ErrorKind
    from air.contracts.runtime import AgentType, ContextAssembleInput
    from air.session.project import ProjectStore

    root = tmp_path / "p"
    root.mkdir()
    project = ProjectStore().initialize(root)
    (root / ".env").write_text(SECRET + "\n")
    (root / "AGENTS.md").symlink_to(".env")
    rules = Path(project.shared_root) / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "style.md").symlink_to("../../../docs/style.md")
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text("Four spaces.\n")
    assembler = ContextAssembler(
        project=project,
        user_air_dir=tmp_path / "home",
        document_refusal=document_refusal(str(root)),
    )
    ask = ContextAssembleInput(
        session_id="ses_x", project_id="p", token_budget=50_000, agent_type=AgentType.EXECUTOR
    )
    with pytest.raises(AirException) as info:
        assembler.assemble_now(ask)
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert "AGENTS.md" in info.value.error.message
    assert "credentials" in info.value.error.message
    assert SECRET not in str(info.value.error.model_dump())
    (root / "AGENTS.md").unlink()
    (root / "AGENTS.md").symlink_to("docs/style.md")
    text = "\n".join(layer.content for layer in assembler.assemble_now(ask).layers)
    assert text.count("Four spaces.") == 2
