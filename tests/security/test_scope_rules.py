"""The scope rules the PermissionEngine and the merge share, in process (IMPL-SCOPE-1,
IMPL-MERGE-1).

`scripts/mutation.sh security` (docs/mutation.md) showed that no test under tests/security held
``PathClassifier.scope_places`` (only real runs in subprocesses reached it), the glob half of
``in_write_area_entry``, or a grant asked about in a headless context. Each case here fails when
its rule is changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.permission import PermissionGrantScope
from air.contracts.permission_records import PermissionRequestContext
from air.contracts.runtime import PermissionTemplate
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier, in_write_area_entry
from air.security.policy import PermissionPolicy


@pytest.mark.parametrize(
    ("path", "entry", "inside"),
    [
        ("/p/src/a.py", "/p/src", True),
        ("/p/src", "/p/src", True),
        ("/p/srcx/a.py", "/p/src", False),
        ("/p/src/a.py", "/p/src/*.py", True),
        ("/p/src/a.txt", "/p/src/*.py", False),
        ("/p/src/a.py", "/p/src/?.py", True),
        ("/p/src/ab.py", "/p/src/?.py", False),
        ("/p/src/b.py", "/p/src/[ab].py", True),
        ("/p/src/c.py", "/p/src/[ab].py", False),
        ("/p/src", "/p/src/**", True),  # dir/** covers dir itself
        ("/p/src/x/y", "/p/src/**", True),
        ("/p/srcx", "/p/src/**", False),
        ("/p/src.py", "/p/src", False),
    ],
)
def test_the_one_write_area_rule(path: str, entry: str, inside: bool) -> None:
    assert in_write_area_entry(path, entry) is inside


@pytest.fixture
def places(tmp_path: Path) -> tuple[PathClassifier, str, str]:
    home = tmp_path / "home"
    project = home / "proj"
    workspace = project / ".air" / "local" / "workspaces" / "ws1"
    workspace.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return PathClassifier(home=str(home)), str(project), str(workspace)


def test_a_scope_entry_is_in_the_project_and_below_the_workspace(
    places: tuple[PathClassifier, str, str],
) -> None:
    classifier, project, workspace = places
    home = os.path.dirname(project)
    elsewhere = os.path.join(os.path.dirname(home), "elsewhere")

    def where(value: str, *, as_written: bool = True, ws: str = workspace) -> tuple[str, ...]:
        return classifier.scope_places(value, project, ws, as_written=as_written)

    mapped = (f"{workspace}/secrets", f"{project}/secrets")
    assert classifier.scope_places("secrets", project, workspace) == mapped  # denied, as written
    assert where("secrets") == mapped  # a relative denied entry: both copies
    assert where("secrets", as_written=False) == (f"{workspace}/secrets",)  # a write area
    assert where(f"{project}/secrets") == mapped  # absolute, inside the project
    assert where(f"{project}/secrets", as_written=False) == mapped
    assert where("~/proj/secrets") == mapped  # through the home
    assert where("~/proj/secrets", as_written=False) == mapped
    assert where(f"{elsewhere}/x") == (f"{elsewhere}/x",)  # outside: nothing below the workspace
    assert where("~/.ssh") == (f"{home}/.ssh",)
    assert where(home) == (home,)  # the project's parent is outside it too
    assert where(project) == (workspace, project)  # the whole project
    # working in the project itself, an entry is where it is
    assert where("secrets", ws=project) == (f"{project}/secrets",)
    assert where(f"{project}/secrets", ws=project) == (f"{project}/secrets",)
    assert where("~/proj/secrets", ws=project) == (f"{project}/secrets",)


def test_a_grant_asked_about_in_a_headless_context_takes_what_the_person_was_asked(
    tmp_path: Path,
) -> None:
    """Headless, an ask is refused rather than pending; what the person approved (the console's
    question, a resumed run's) is still what is granted."""
    engine = PermissionEngine(policy=PermissionPolicy(), classifier=PathClassifier())
    asked = PermissionRequestContext(
        session_id="ses_1",
        task_id="task_1",
        tool_name="shell.run",
        permission_template=PermissionTemplate.EXECUTOR,
        project_root=str(tmp_path),
        workspace_root=str(tmp_path),
        command="curl https://x.org",
        headless=True,
    )
    assert engine.grant(asked, PermissionGrantScope.SESSION) == ["curl https://x.org"]
    assert engine.evaluate_sync(asked).action.value == "allow"
