"""The command suite: dangerous commands are never auto-allowed, ordinary ones run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.permission import CommandCategory, PermissionAction
from air.contracts.permission_records import PermissionRequestContext
from air.contracts.runtime import PermissionTemplate
from air.security.commands import CATEGORY_ORDER, CommandRiskAnalyzer
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from tests.security.corpus import DANGEROUS, ORDINARY

AUTO = (PermissionAction.ALLOW, PermissionAction.ANNOUNCE_THEN_RUN)


def _ctx(root: Path, command: str, **kw: object) -> PermissionRequestContext:
    return PermissionRequestContext(
        session_id="ses_1",
        tool_name="shell.run",
        permission_template=kw.pop("template", PermissionTemplate.EXECUTOR),
        project_root=str(root),
        workspace_root=str(root),
        command=command,
        **kw,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    return root


@pytest.fixture
def engine(tmp_path: Path) -> PermissionEngine:
    home = tmp_path / "home"
    home.mkdir()
    return PermissionEngine(classifier=PathClassifier(home=str(home)))


def test_corpus_shape() -> None:
    assert len(DANGEROUS) >= 150
    assert sum(1 for *_, bypass in DANGEROUS if bypass) >= 25
    assert {cat for _, cat, _ in DANGEROUS} == set(CommandCategory) - {
        CommandCategory.READ_ONLY,
        CommandCategory.BUILD_TEST,
    }
    assert len(ORDINARY) >= 100


def test_no_dangerous_command_is_auto_allowed(project: Path, engine: PermissionEngine) -> None:
    auto = []
    for command, _, _ in DANGEROUS:
        decision = engine.evaluate_sync(_ctx(project, command))
        if decision.action in AUTO:
            auto.append((command, decision.reason))
    assert auto == []


def test_dangerous_commands_are_classified_at_least_as_risky_as_intended(
    project: Path, engine: PermissionEngine
) -> None:
    low = []
    for command, intended, _ in DANGEROUS:
        got = engine.analyzer.analyze(command, str(project)).category
        if CATEGORY_ORDER[got] < CATEGORY_ORDER[intended]:
            low.append((command, got.value, intended.value))
    assert low == []


def test_headless_dangerous_commands_fail_closed(project: Path, engine: PermissionEngine) -> None:
    for command, _, _ in DANGEROUS:
        decision = engine.evaluate_sync(_ctx(project, command, headless=True))
        assert decision.action not in AUTO, command
        assert decision.action != PermissionAction.ASK_USER, command


def test_ordinary_commands_are_never_denied_and_mostly_allowed(
    project: Path, engine: PermissionEngine
) -> None:
    actions = [engine.evaluate_sync(_ctx(project, c)).action for c in ORDINARY]
    denied = [
        c
        for c, a in zip(ORDINARY, actions, strict=True)
        if a in (PermissionAction.DENY, PermissionAction.BLOCK, PermissionAction.REFUSE)
    ]
    assert denied == []
    allowed = sum(1 for a in actions if a in AUTO)
    assert allowed / len(ORDINARY) >= 0.95
    prompted = [c for c, a in zip(ORDINARY, actions, strict=True) if a not in AUTO]
    assert len(prompted) <= len(ORDINARY) * 0.05, prompted


def test_a_project_whose_path_holds_shell_characters_runs_its_commands(
    tmp_path: Path, engine: PermissionEngine
) -> None:
    """The directory a command runs in is the user's choice, not the model's: a project in
    ``a'b "c" $d `e``` had every command with a relative path refused as an expansion."""
    root = tmp_path / 'a\'b "c" $HOME `e`'
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_text("x\n")
    for command in ("cat notes.txt", "grep -rn x src notes.txt", "wc -l < notes.txt"):
        decision = engine.evaluate_sync(_ctx(root, command))
        assert decision.action in AUTO, (command, decision.reason)
    # a write the model's own words expand still asks, wherever the project is
    for command in ('echo x > "$X"', 'cp notes.txt "$X/y"', "echo x > `cat notes.txt`"):
        decision = engine.evaluate_sync(_ctx(root, command))
        assert decision.action not in AUTO, command


@pytest.mark.parametrize(
    ("command", "segments"),
    [
        ("ls && rm -rf x", 2),
        ("a | b | c", 3),
        ("(ls; pwd) || echo $(whoami)", 4),
        ("cat <(ls) >(wc)", 3),
    ],
)
def test_compound_commands_are_split(command: str, segments: int) -> None:
    analysis = CommandRiskAnalyzer().analyze(command)
    assert len(analysis.segments) == segments


def test_riskiest_segment_decides() -> None:
    analysis = CommandRiskAnalyzer().analyze("ls; git status && sudo reboot")
    assert analysis.category == CommandCategory.PRIVILEGED
    assert [s.category for s in analysis.segments][:2] == [
        CommandCategory.READ_ONLY,
        CommandCategory.READ_ONLY,
    ]


def test_rm_build_dir_asks_as_in_sdd_19_2(project: Path, engine: PermissionEngine) -> None:
    decision = engine.evaluate_sync(_ctx(project, "rm -rf build/"))
    assert decision.action == PermissionAction.ASK_USER
    assert "destructive" in decision.reason


def test_redirect_targets_are_path_checked(project: Path, engine: PermissionEngine) -> None:
    inside = engine.evaluate_sync(_ctx(project, "echo x > src/out.txt"))
    assert inside.action == PermissionAction.ALLOW
    hooks = engine.evaluate_sync(_ctx(project, "echo x > .git/hooks/pre-commit"))
    assert hooks.action == PermissionAction.ASK_USER
    assert "project_git_internal" in hooks.reason
    os.symlink("/etc", project / "etclink")
    via_link = engine.evaluate_sync(_ctx(project, "echo x > etclink/hosts"))
    assert via_link.action == PermissionAction.DENY


def test_reviewer_template_is_read_only(project: Path, engine: PermissionEngine) -> None:
    rev = PermissionTemplate.REVIEWER
    assert (
        engine.evaluate_sync(_ctx(project, "git diff", template=rev)).action
        == PermissionAction.ALLOW
    )
    assert (
        engine.evaluate_sync(_ctx(project, "pytest -q", template=rev)).action
        == PermissionAction.ALLOW
    )
    for command in ("touch src/x", "git commit -m x", "echo x > src/a"):
        assert (
            engine.evaluate_sync(_ctx(project, command, template=rev)).action
            == PermissionAction.DENY
        )


DEEP = {  # deeper than the walk's stack, fewer nodes than MAX_NODES
    "substitutions": "echo " + "$(" * 1500 + "x" + ")" * 1500,
    "subshells": "(" * 1500 + "ls" + ")" * 1500,
    "and-list": " && ".join(["true"] * 1500),
    "braces": "{ " * 1500 + "ls; " + "}; " * 1500,
}


@pytest.mark.parametrize("command", DEEP.values(), ids=DEEP.keys())
def test_a_command_nested_too_deeply_to_walk_is_opaque(
    project: Path, engine: PermissionEngine, command: str
) -> None:
    """A model's `$($($(...)))` 400 deep raised RecursionError out of the permission decision,
    and the whole run ended with a traceback; now it is a command air cannot analyze: it asks,
    and a headless run refuses it."""
    analysis = CommandRiskAnalyzer().analyze(command, str(project))
    assert analysis.category == CommandCategory.OPAQUE
    assert analysis.reason == "nested too deeply to analyze"
    decision = engine.evaluate_sync(_ctx(project, command, headless=True))
    assert decision.action not in AUTO
    assert decision.action != PermissionAction.ASK_USER  # headless: refused
