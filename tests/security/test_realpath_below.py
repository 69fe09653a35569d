"""The classifier's realpath below a root resolved for the decision walks only the components
below the root and gives what ``os.path.realpath`` gives for the whole path: over generated
paths through links (relative, absolute, dangling, looping, leading out and back), files used
as directories, missing components, ``.``, ``..`` and doubled slashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.security import paths
from air.security.paths import _realpath

NAMES = ["d", "e", "f.txt", "ln_d", "ln_up", "ln_abs", "ln_dangling", "ln_loop", "ln_file"]
NAMES += ["missing", ".", "..", ""]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    base = Path(os.path.realpath(tmp_path_factory.mktemp("below")))
    top = base / "root"
    (top / "d" / "e").mkdir(parents=True)
    (base / "outside" / "d").mkdir(parents=True)
    for where in (top, top / "d", top / "d" / "e"):
        (where / "f.txt").write_text("x")
        (where / "ln_d").symlink_to("d" if where == top else ".")
        (where / "ln_up").symlink_to("..")
        (where / "ln_abs").symlink_to(base / "outside")
        (where / "ln_dangling").symlink_to("nowhere/at/all")
        (where / "ln_loop").symlink_to("ln_loop")
        (where / "ln_file").symlink_to(top / "f.txt")
    return str(top)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=7))
def test_the_walk_below_a_root_equals_realpath(root: str, parts: list[str]) -> None:
    path = root + "/" + "/".join(parts)
    assert _realpath(path, (root,)) == os.path.realpath(path)


def test_only_the_components_below_the_root_are_looked_at(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    lstat = os.lstat

    def counting(path: str) -> os.stat_result:
        seen.append(path)
        return lstat(path)

    monkeypatch.setattr(os, "lstat", counting)
    assert _realpath(root + "/d/e/f.txt", (root,)) == root + "/d/e/f.txt"
    assert seen == [root + "/d", root + "/d/e", root + "/d/e/f.txt"]


@pytest.mark.parametrize("rest", ["ln_d/f.txt", "d/ln_up/f.txt", "d/ln_abs", "d/../f.txt"])
def test_a_link_or_dotdot_below_the_root_takes_the_whole_walk(root: str, rest: str) -> None:
    path = f"{root}/{rest}"
    assert paths._below(root, "/" + rest) is None
    assert _realpath(path, (root,)) == os.path.realpath(path)
