"""PathClassifier with what depends only on the home computed once (issue 28) classifies every
path exactly as the straightforward computation (``paths_reference``) does: category, reason,
realpath, escape and link flags, over generated paths in a real tree with credential
directories, symlinks in and out, ``..``, ``~``, globs and case or trailing-dot tricks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.security.paths import PathClassifier
from tests.security.paths_reference import ReferencePathClassifier


class Tree:
    """A project with a worktree under ``.air/local``, a home and links between them."""

    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.project = base / "proj"
        self.workspace = self.project / ".air" / "local" / "worktrees" / "w1"
        for d in (
            ".ssh",
            ".aws",
            ".config/gh",
            ".config/git",
            ".kube",
            ".air/sessions",
            ".local/bin",
            "notes",
        ):
            (self.home / d).mkdir(parents=True, exist_ok=True)
        (self.home / ".ssh" / "id_rsa").write_text("k")
        (self.home / ".kube" / "config").write_text("k")
        (self.home / ".bashrc").write_text("")
        (self.home / "notes" / "todo.txt").write_text("")
        for d in ("src/pkg", "build/out", ".git/objects", "node_modules/x", "cmake-build-debug"):
            (self.project / d).mkdir(parents=True, exist_ok=True)
            (self.workspace / d).mkdir(parents=True, exist_ok=True)
        for root in (self.project, self.workspace):
            (root / "src" / "a.py").write_text("x")
            (root / ".env").write_text("K=v")
            (root / "src" / "key.pem").write_text("k")
            os.symlink(self.home / ".ssh" / "id_rsa", root / "src" / "notes")
            os.symlink(self.home, root / "homelink")
            os.symlink(base, root / "up")
            os.symlink("../src", root / "build" / "back")
            os.symlink("/etc", root / "etclink")
        os.link(self.project / "src" / "a.py", self.project / "src" / "hard.py")
        os.symlink(self.project / "src", self.home / "proj-src")


COMPONENTS = [
    "src",
    "pkg",
    "a.py",
    "hard.py",
    "notes",
    "homelink",
    "up",
    "back",
    "etclink",
    "build",
    "out",
    "node_modules",
    "cmake-build-debug",
    ".git",
    ".GIT.",
    "objects",
    ".air",
    "local",
    "worktrees",
    "w1",
    "proj",
    "home",
    ".ssh",
    ".Ssh",
    "id_rsa",
    ".aws",
    ".config",
    "gh",
    "git",
    ".kube",
    "config",
    ".local",
    "bin",
    ".bashrc",
    ".env",
    ".env.example",
    "key.pem",
    "shadow",
    "environ",
    "*",
    ".*",
    ".s?h",
    "[.]ssh",
    "**",
    "..",
    ".",
    "",
    "new.txt",
]
PREFIXES = ["", "~/", "~", "/", "/etc/", "/proc/1/", "/home/other/", "/tmp/", "/root/", "$HOME/"]


@st.composite
def paths(draw: st.DrawFn, tree: Tree) -> str:
    prefix = draw(st.sampled_from([*PREFIXES, f"{tree.home}/", f"{tree.project}/"]))
    parts = draw(st.lists(st.sampled_from(COMPONENTS), min_size=0, max_size=6))
    return prefix + "/".join(parts)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    return Tree(tmp_path_factory.mktemp("precompute"))


def _same(tree: Tree, path: str, *, in_workspace: bool, for_write: bool) -> None:
    fast = PathClassifier(home=str(tree.home))
    slow = ReferencePathClassifier(home=str(tree.home))
    workspace = str(tree.workspace) if in_workspace else None
    got = fast.classify(path, str(tree.project), for_write=for_write, workspace_root=workspace)
    want = slow.classify(path, str(tree.project), for_write=for_write, workspace_root=workspace)
    assert got == want, path


def test_the_table_of_known_shapes_classifies_as_before(tree: Tree) -> None:
    table = [
        "src/a.py",
        "src/notes",
        "homelink/.ssh/id_rsa",
        "~/.ssh",
        "~/.config/gh/hosts.yml",
        "~/.kube/config",
        "~/.air/sessions/x",
        "~/.local/bin/tool",
        "~/.bashrc",
        "~/.*",
        "~/.s?h",
        "~/**",
        "/**",
        "/etc/shadow",
        "/.ssh/new.txt",
        "/.config/gh",
        "/.kube/config",
        "/etc/*",
        "/proc/1/environ",
        "/home/other/.aws/credentials",
        "up/home/.ssh/id_rsa",
        "../../../../../home/.ssh",
        "build/back/a.py",
        "build/out/x.o",
        ".GIT./objects/x",
        ".air/local/x",
        "etclink/passwd",
        ".env",
        ".env.example",
        "src/key.pem",
        "cmake-build-debug/CMakeCache.txt",
        "$HOME/.ssh",
        "/tmp/x",
        "/",
        str(Path.home()),
    ]
    for path in table:
        for in_workspace in (False, True):
            for for_write in (False, True):
                _same(tree, path, in_workspace=in_workspace, for_write=for_write)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), in_workspace=st.booleans(), for_write=st.booleans())
def test_generated_paths_classify_as_the_straightforward_computation(
    tree: Tree, data: st.DataObject, in_workspace: bool, for_write: bool
) -> None:
    path = data.draw(paths(tree))
    _same(tree, path, in_workspace=in_workspace, for_write=for_write)


def test_a_home_at_the_root_keeps_its_credential_directories(tree: Tree) -> None:
    """A home of ``/`` (a container's root, a service account): the shortcut that passes over
    paths outside the home must take every path for one inside it (``//`` as its prefix left
    ``/.ssh/id_rsa`` an ordinary file)."""
    fast = PathClassifier(home="/")
    slow = ReferencePathClassifier(home="/")
    for path in ("/.ssh/id_rsa", "/.aws/credentials", "/.config/gh/hosts.yml", "~/.kube/config"):
        got = fast.classify(path, str(tree.project))
        assert got == slow.classify(path, str(tree.project)), path
        assert got.category.value == "credentials", (path, got)
