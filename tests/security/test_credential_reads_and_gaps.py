"""Issue #9 items 4 (classifier half) and 7: credential access by any program; gaps by class.

Every case runs through the real PermissionEngine (real PathClassifier over a real temporary home
and project, real tree-sitter parse). A credential access must be a *sensitive* read item: it
asks, and a headless run fails closed even with ``headless_allow_ask``. A moved-outside case must
never run unapproved. The same shapes pointed inside the project stay automatic.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.permission import CommandCategory, PermissionAction
from air.contracts.permission_records import PermissionRequestContext
from air.security.commands import CommandRiskAnalyzer
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier
from tests.security.gap_corpus import (
    CREDENTIAL_ACCESS,
    HIDDEN_EFFECTS,
    MOVED_OUTSIDE,
    MULTICALL,
    STAYS_ALLOWED,
)

A = PermissionAction
AUTO = (A.ALLOW, A.ANNOUNCE_THEN_RUN)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for sub in ("src", "sub", "build", "web", "scripts", "tools", "crates/core"):
        (root / sub).mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    home = tmp_path / "home"
    for d in (".ssh", ".aws", ".gnupg", ".config/gh", ".docker", ".kube"):
        (home / d).mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k\n")
    (home / ".netrc").write_text("machine x\n")
    return root


def _engine(project: Path, *, allow_ask: bool = False) -> PermissionEngine:
    home = project.parent / "home"
    return PermissionEngine(classifier=PathClassifier(home=str(home)), headless_allow_ask=allow_ask)


def _ctx(root: Path, command: str, *, headless: bool = False) -> PermissionRequestContext:
    return PermissionRequestContext(
        session_id="ses_gaps",
        task_id="task_1",
        tool_name="shell.run",
        permission_template="executor",
        project_root=str(root),
        workspace_root=str(root),
        command=command,
        headless=headless,
    )


def test_gap_corpus_size() -> None:
    new_cases = (
        len(CREDENTIAL_ACCESS)
        + len(MULTICALL)
        + len(MOVED_OUTSIDE)
        + len(HIDDEN_EFFECTS)
        + len(STAYS_ALLOWED)
    )
    assert new_cases >= 60
    assert len(CREDENTIAL_ACCESS) >= 40
    assert len(MOVED_OUTSIDE) >= 40


@pytest.mark.parametrize("command", CREDENTIAL_ACCESS)
def test_credential_access_by_any_program_is_a_sensitive_read(project: Path, command: str) -> None:
    engine = _engine(project, allow_ask=True)
    ev = engine.explain(_ctx(project, command))
    assert ev.decision.action not in AUTO, (command, ev.decision.reason)
    assert any(i.sensitive and i.action == A.ASK_USER for i in ev.items), (command, ev.items)
    # headless_allow_ask lets ordinary asks run; a credential read still fails closed.
    headless = engine.evaluate_sync(_ctx(project, command, headless=True))
    assert headless.action == A.DENY, (command, headless.reason)
    assert "headless" in headless.reason


@pytest.mark.parametrize(("command", "category"), MULTICALL)
def test_multicall_binaries_are_classified_as_their_applet(command: str, category: object) -> None:
    analysis = CommandRiskAnalyzer().analyze(command, "/work/proj")
    assert analysis.category == category, (command, analysis.reason)


@pytest.mark.parametrize("command", MOVED_OUTSIDE + HIDDEN_EFFECTS)
def test_targets_moved_outside_the_project_never_run_unapproved(
    project: Path, command: str
) -> None:
    engine = _engine(project)
    ev = engine.explain(_ctx(project, command))
    assert ev.decision.action not in AUTO, (command, ev.decision.reason)
    headless = engine.evaluate_sync(_ctx(project, command, headless=True))
    assert headless.action == A.DENY, (command, headless.reason)


@pytest.mark.parametrize("command", STAYS_ALLOWED)
def test_the_same_shapes_inside_the_project_stay_automatic(project: Path, command: str) -> None:
    decision = _engine(project).evaluate_sync(_ctx(project, command, headless=True))
    assert decision.action in AUTO, (command, decision.reason)


def test_a_moved_target_through_a_symlink_out_of_the_project_is_denied(project: Path) -> None:
    outside = project.parent / "elsewhere"
    outside.mkdir()
    os.symlink(outside, project / "looks_inside")
    engine = _engine(project, allow_ask=True)
    for command in (
        "make -C looks_inside",
        "git -C looks_inside commit -am x",
        "cd looks_inside && touch x",
        "tar -C looks_inside -xf a.tar",
    ):
        decision = engine.evaluate_sync(_ctx(project, command, headless=True))
        assert decision.action == A.DENY, (command, decision.reason)
        assert "symlink" in decision.reason


def test_read_and_write_targets_follow_cd_and_tool_directories() -> None:
    analyzer = CommandRiskAnalyzer()
    assert analyzer.analyze("cd /tmp && touch x", "/work/proj").write_targets == ["/tmp/x"]
    # the cd may fail: the write may land in either place
    assert analyzer.analyze("cd /tmp; touch x", "/work/proj").write_targets == [
        "/work/proj/x",
        "/tmp/x",
    ]
    assert analyzer.analyze("cd sub/a/b || echo > ../../../x", "/work/proj").write_targets == [
        "/work/proj/../../../x",
        "/work/proj/sub/a/b/../../../x",
    ]
    # a subshell's cd does not move what follows it
    assert analyzer.analyze("(cd sub/a/b); echo > ../../../x", "/work/proj").write_targets == [
        "/work/proj/../../../x"
    ]
    assert analyzer.analyze("cd sub | true && touch ../x", "/work/proj").write_targets == [
        "/work/proj/../x"
    ]
    b = analyzer.analyze("tar -C ~ -czf out.tgz .ssh", "/work/proj")
    assert "~/.ssh" in b.read_targets
    c = analyzer.analyze("cd $(mktemp -d) && echo hi > f", "/work/proj")
    assert "$dynamic" in c.write_targets
    d = analyzer.analyze("git -C ../other commit -am x && make -C/tmp/b", "/work/proj")
    assert "../other" in d.write_targets[0] or d.write_targets[0] == "/work/proj/../other"
    assert "/tmp/b" in d.write_targets
    e = analyzer.analyze("cat $HOME/.netrc ${X}/.ssh/id_rsa", None)
    assert e.read_targets == ["~/.netrc", "/_dynamic_/.ssh/id_rsa"]
    f = analyzer.analyze("echo $PATH hello world", None)
    assert f.read_targets == []


def test_deep_wrapper_chains_are_opaque_not_a_crash() -> None:
    analyzer = CommandRiskAnalyzer()
    for wrapper in ("busybox ", "sudo ", "env ", "nice ", "timeout 1 "):
        analysis = analyzer.analyze(wrapper * 400 + "ls")
        assert analysis.category == CommandCategory.OPAQUE, wrapper


def test_a_workspace_link_to_a_credential_is_a_credential_read(project: Path) -> None:
    home = project.parent / "home"
    os.symlink(home / ".ssh" / "id_rsa", project / "notes.txt")
    os.symlink(home / ".netrc", project / "src" / "config.ini")
    engine = _engine(project, allow_ask=True)
    for command in ("cat notes.txt", "cd src && base64 config.ini", "cp notes.txt build/"):
        decision = engine.evaluate_sync(_ctx(project, command, headless=True))
        assert decision.action == A.DENY, (command, decision.reason)
        assert "credentials" in decision.reason
    ok = engine.evaluate_sync(_ctx(project, "cat src/app.py README.md", headless=True))
    assert ok.action in AUTO


_PIECES = [
    *"abc~/.$(){}[]*?'\"\\ \t;&|<>=-@:,!#`x",
    *("cd ", "tar -C ", "busybox ", "make -C ", "$HOME", "${X}", "$'\\x41'", " -- ", "env -C "),
    *("sudo ", "&&", "||", "\n", "<<EOF\n", "git -C ", "cat ~/.ssh/", "PYTHONPATH=", "valgrind "),
]


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_the_analysis_of_any_text_is_a_value_never_an_exception(command: str) -> None:
    analysis = _ANALYZER.analyze(command, "/work/proj")
    assert analysis.category in set(CommandCategory)
    for target in [*analysis.read_targets, *analysis.write_targets]:
        assert isinstance(target, str)


_ANALYZER = CommandRiskAnalyzer()
