"""``resolve_root``: a project or workspace root's realpath is remembered while its path still
leads to the same directory, and resolved anew when a component of the path is swapped for a
link elsewhere (the classification then judges against the new root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.permission import PathCategory
from air.contracts.permission_records import PermissionRequestContext
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier, resolve_root


def test_a_root_swapped_for_a_link_elsewhere_is_resolved_again(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        (root / "proj").mkdir(parents=True)
    link = tmp_path / "current"
    link.symlink_to(one)
    project = str(link / "proj")
    assert resolve_root(project) == str(one / "proj")
    assert resolve_root(project) == str(one / "proj")  # remembered
    link.unlink()
    link.symlink_to(two)
    assert resolve_root(project) == str(two / "proj")
    classifier = PathClassifier(home=str(tmp_path / "home"))
    inside_two = classifier.classify(str(two / "proj" / "a.txt"), project)
    assert inside_two.category == PathCategory.PROJECT_SOURCE
    inside_one = classifier.classify(str(one / "proj" / "a.txt"), project)
    assert inside_one.category == PathCategory.OUTSIDE_PROJECT


def test_an_unchanged_root_is_not_walked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert resolve_root(str(root)) == str(root)
    walks: list[str] = []
    real = os.path.realpath

    def walk(path: str) -> str:
        walks.append(path)
        return real(path)

    monkeypatch.setattr(os.path, "realpath", walk)
    assert resolve_root(str(root)) == str(root)
    assert walks == []
    root.rmdir()
    assert resolve_root(str(root)) == str(root)  # gone: resolved as realpath does
    assert walks == [str(root)]


def test_the_engine_judges_paths_against_the_roots_it_resolved(tmp_path: Path) -> None:
    """A project reached through a link: its files are its own, not outside it."""
    (tmp_path / "real" / "proj").mkdir(parents=True)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    project = str(tmp_path / "via" / "proj")
    engine = PermissionEngine(classifier=PathClassifier(home=str(tmp_path / "home")))
    ctx = PermissionRequestContext(
        session_id="ses_root",
        tool_name="shell.run",
        permission_template="executor",
        project_root=project,
        workspace_root=project,
        command="touch made.txt && cat notes.txt",
    )
    paths = [i.path for i in engine.explain(ctx).items if i.path is not None]
    real = tmp_path / "real" / "proj"
    assert {(p.resolved_path, p.category, p.escapes) for p in paths} == {
        (str(real / "made.txt"), PathCategory.PROJECT_SOURCE, False),
        (str(real / "notes.txt"), PathCategory.PROJECT_SOURCE, False),
    }
