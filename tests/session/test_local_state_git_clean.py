"""The user's ``git clean -fdx`` (a C++ project's "clean everything") and ``git stash --all``
leave air's state alone. Found: ``.air/local`` is an ignored directory, so both took it with
them: every session's history, the knowledge air learned, the state of a run in progress (its
database pulled from under it); ``git stash --all`` put it in a stash. Now ``.air/local`` holds
a git directory of its own (``HEAD``, ``objects/``, ``refs/``, nothing committed), and git
leaves another repository alone (``git clean -ffdx``, forced twice, still takes it, as git
says). The foreign-state check does not count that ``HEAD`` as state."""

from __future__ import annotations

from pathlib import Path

from air.session.local_owner import foreign_local_state, keep_out_of_git_clean
from air.session.project import ProjectStore
from tests.gitrepo import git, init_repo


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "main.cpp").write_text("int main() {}\n")
    init_repo(root, message="init")
    ProjectStore().initialize(root)  # writes .gitignore's .air/local/ entry
    git(root, "add", "-A")
    git(root, "commit", "-qm", "air init")
    sessions = root / ".air" / "local" / "sessions" / "ses_1"
    sessions.mkdir(parents=True)
    (sessions / "session.db").write_bytes(b"history")
    (root / "build").mkdir()
    (root / "build" / "main.o").write_bytes(b"object")
    (root / ".gitignore").write_text((root / ".gitignore").read_text() + "build/\n")
    git(root, "commit", "-qam", "ignore the build")
    return root


def test_git_clean_fdx_takes_the_build_and_leaves_airs_state(tmp_path: Path) -> None:
    root = _project(tmp_path)
    git(root, "clean", "-fdx")
    assert not (root / "build").exists()  # what the user meant to clean
    assert (root / ".air" / "local" / "sessions" / "ses_1" / "session.db").read_bytes() == (
        b"history"
    )
    assert foreign_local_state(str(root)) is None  # still air's own, and usable
    ProjectStore().open(root)


def test_git_stash_all_leaves_airs_state_in_place(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "main.cpp").write_text("int main() { return 1; }\n")
    git(root, "stash", "--all", "-q")
    assert (root / "main.cpp").read_text() == "int main() {}\n"
    assert (root / ".air" / "local" / "sessions" / "ses_1" / "session.db").exists()
    git(root, "stash", "pop", "-q")
    assert (root / "main.cpp").read_text() == "int main() { return 1; }\n"


def test_a_git_entry_of_another_kind_is_left_as_it_is(tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir()
    (local / ".git").write_text("gitdir: /elsewhere\n")
    keep_out_of_git_clean(str(local))
    assert (local / ".git").read_text() == "gitdir: /elsewhere\n"
    half = tmp_path / "half"
    (half / ".git" / "refs").mkdir(parents=True)  # a start cut short: completed
    keep_out_of_git_clean(str(half))
    assert (half / ".git" / "HEAD").read_bytes() == b"ref: refs/heads/air-local-state\n"
    assert (half / ".git" / "objects").is_dir()


def test_a_copied_state_is_still_found_foreign(tmp_path: Path) -> None:
    root = _project(tmp_path)
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "-q", str(root), str(copy))
    (copy / ".air" / "local").mkdir(parents=True)
    keep_out_of_git_clean(str(copy / ".air" / "local"))
    assert foreign_local_state(str(copy)) is None  # the guard alone is no state
    (copy / ".air" / "local" / "sessions").mkdir()
    (copy / ".air" / "local" / "sessions" / "s.db").write_bytes(b"shipped")
    assert "sessions/s.db" in str(foreign_local_state(str(copy)))
