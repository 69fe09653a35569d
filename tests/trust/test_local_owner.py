"""A project that brings its own ``.air/local`` without git (IMPL-TRUST-3): a tarball, a zip or a
copy can ship sessions and knowledge databases as plain files, which no ``HEAD`` tells of. Every
command that would resume, learn from or restore that state refuses it; ``air doctor`` says so;
``air trust`` adopts it when it is the user's own; a project moved within its file system stays
the user's; what air makes is marked as its own from the first write.

The owner mark (``air.session.local_owner``) is exercised directly and through the real ``air``
command over a real run of examples/calc (its cassettes), copied as an unpacked tarball would be.
"""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from air.cli import main
from air.cli.console import _trust_or_ask
from air.cli.console_start import session_to_reopen
from air.cli.options import HeadlessOptions
from air.contracts.error import AirException
from air.session.local_owner import (
    MARK,
    adopt_local_state,
    claim_local_state,
    foreign_local_state,
    mark_local_state,
)
from air.session.project import ProjectStore
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import EXAMPLE, RUN, air_as, session_events

FOREIGN = "was not made by air here"


def test_what_air_makes_is_its_own_and_a_copy_is_not(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    ProjectStore().initialize(root)
    local = root / ".air" / "local"
    assert (local / MARK).read_text() == f"air-local-owner 1 {local.stat().st_ino}\n"
    (local / "sessions" / "s.db").write_bytes(b"state")
    assert foreign_local_state(str(root)) is None
    claim_local_state(str(root))  # its own: nothing to say

    moved = tmp_path / "moved"
    root.rename(moved)  # within a file system: the same directory
    claim_local_state(str(moved))

    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)  # what an unpacked tarball is: another directory
    why = foreign_local_state(str(copy))
    assert why is not None
    assert "sessions/s.db" in why
    with pytest.raises(AirException) as refused:
        claim_local_state(str(copy))
    assert refused.value.kind.value == "untrusted_config"
    assert FOREIGN in refused.value.error.message
    assert f"air trust {copy}" in (refused.value.user_action or "")
    assert mark_local_state(str(copy)) == why  # marking leaves another's state as it is
    assert (copy / ".air/local" / MARK).read_text() == (moved / ".air/local" / MARK).read_text()

    adopt_local_state(str(copy))  # the user's word
    claim_local_state(str(copy))
    assert foreign_local_state(str(copy)) is None


def test_a_shipped_mark_names_nothing_here(tmp_path: Path) -> None:
    """Without a mark, with one naming another inode, one that is a link or no file, or a
    damaged one: state it holds is another's. A crashed writer's temporary mark is no state, and
    a ``.air/local`` holding only directories is claimed as it is."""
    root = tmp_path / "p"
    local = root / ".air" / "local"
    (local / "sessions").mkdir(parents=True)
    (root / ".air" / "shared").mkdir()
    (local / f"{MARK}.123.tmp").write_text("half")
    assert mark_local_state(str(root)) is None  # only directories (and a temporary file)
    inode = local.stat().st_ino
    (local / "knowledge.db").write_bytes(b"state")
    for planted in (f"air-local-owner 1 {inode + 1}\n", "air-local-owner 1\n", "x" * 500, ""):
        (local / MARK).write_text(planted)
        assert foreign_local_state(str(root)) is not None, planted
    (local / MARK).unlink()
    assert "has no owner mark" in (foreign_local_state(str(root)) or "")
    (tmp_path / "elsewhere").write_text(f"air-local-owner 1 {inode}\n")
    (local / MARK).symlink_to(tmp_path / "elsewhere")
    assert foreign_local_state(str(root)) is not None  # a link is never read
    (local / MARK).unlink()
    (local / MARK).mkdir()
    assert foreign_local_state(str(root)) is not None


class _Terminal(io.StringIO):
    """What the person types, on a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_console_asks_before_it_opens_anothers_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bare ``air`` on a terminal: the question before the first frame (and before its
    sessions are listed), with the project's own; no refuses it there, leaving it as it is;
    yes adopts it."""
    root = tmp_path / "p"
    root.mkdir()
    ProjectStore().initialize(root)
    (root / ".air" / "local" / "sessions" / "s.db").write_bytes(b"state")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    for answer, adopted in (("n\n", False), ("y\n", True)):
        said = io.StringIO()
        monkeypatch.setattr(sys, "stdin", _Terminal(answer))
        monkeypatch.setattr(sys, "stdout", said)
        if adopted:
            _trust_or_ask(HeadlessOptions(project=str(copy)), create=False)
        else:
            with pytest.raises(AirException) as refused:
                _trust_or_ask(HeadlessOptions(project=str(copy)), create=False)
            assert refused.value.error.kind == "untrusted_config"
        assert FOREIGN in said.getvalue()
        assert "Adopt it as yours? [y/N]" in said.getvalue()
        assert (foreign_local_state(str(copy)) is None) is adopted
    said = io.StringIO()
    monkeypatch.setattr(sys, "stdout", said)
    _trust_or_ask(HeadlessOptions(project=str(copy)), create=False)
    assert said.getvalue() == ""  # its own now: nothing to ask


def test_the_console_without_a_terminal_and_its_replay_refuse_anothers_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No terminal to ask on (``air --plain`` in a script): refused before its sessions are
    listed or opened; ``air --session SID [--replay]`` refuses it before reading the log."""
    root = tmp_path / "p"
    root.mkdir()
    ProjectStore().initialize(root)
    sid = "ses_01M916QAB4VJVX6SPM0T6PHY7R"
    (root / ".air" / "local" / "sessions" / sid).mkdir(parents=True)
    (root / ".air" / "local" / "sessions" / sid / "session.db").write_bytes(b"state")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: nobody to ask
    for options in (
        HeadlessOptions(project=str(copy)),
        HeadlessOptions(project=str(copy), session_id=sid),
    ):
        with pytest.raises(AirException) as refused:
            _trust_or_ask(options, create=False)
        assert refused.value.error.kind == "untrusted_config"
        assert FOREIGN in refused.value.error.message
    with pytest.raises(AirException) as refused:  # the replay's way in
        session_to_reopen(HeadlessOptions(project=str(copy), session_id=sid))
    assert FOREIGN in refused.value.error.message
    assert session_to_reopen(HeadlessOptions(project=str(root), session_id=sid))[1] == sid


def test_init_says_the_state_is_anothers_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``air init`` in a copy (or over a ``.air/local`` alone) keeps its word, exit 0, and says
    the state is another's with both ways on; in the original it says nothing of it."""
    root = tmp_path / "p"
    root.mkdir()
    assert main(["init", str(root)]) == 0
    (root / ".air" / "local" / "sessions" / "s.db").write_bytes(b"state")
    shutil.copytree(root, tmp_path / "copy")
    alone = tmp_path / "alone" / ".air" / "local"
    alone.mkdir(parents=True)
    (alone / "s.db").write_bytes(b"state")
    capsys.readouterr()
    assert main(["init", str(root)]) == 0
    assert FOREIGN not in capsys.readouterr().err
    for project in (tmp_path / "copy", tmp_path / "alone"):
        assert main(["init", str(project)]) == 0
        said = capsys.readouterr()
        assert f"air: but {project}/.air/local {FOREIGN}" in said.err, said
        assert f"`air trust {project}`" in said.err
        assert foreign_local_state(str(project)) is not None  # said, not adopted


def test_opening_a_project_marks_its_new_state_before_anything_writes_there(
    tmp_path: Path,
) -> None:
    """A cloned air project (``.air/shared`` committed, no ``.air/local``): the first command
    that opens it makes ``.air/local`` air's own, so what it writes there (doctor's database)
    is not taken for another's by the next run."""
    root = tmp_path / "p"
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "project.json").write_text(
        '{"project_id": "6f1d0c1e-0000-4000-8000-000000000002", "name": "p"}\n'
    )
    home = tmp_path / "home"
    home.mkdir()
    air_as(root, home, "doctor")
    assert any(p.name != MARK for p in (root / ".air" / "local").rglob("*") if p.is_file())
    assert foreign_local_state(str(root)) is None


@pytest.fixture(scope="module")
def handed_over(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/calc after someone ran its batch, with a debug record planted in its knowledge:
    what they hand over, ``.air/local`` and all (read only: each test copies it)."""
    src = tmp_path_factory.mktemp("handed") / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    ran = air_as(src, src.parent, *RUN)
    assert ran.returncode == 0, ran.stderr
    (src / ".air" / "local" / "debug-records.db").write_bytes(b"planted")
    return src


@pytest.mark.parametrize("unprivileged", [False, True], ids=["root", "nobody"])
def test_a_copied_projects_state_is_refused_until_the_user_adopts_it(
    tmp_path: Path, handed_over: Path, unprivileged: bool
) -> None:
    """The project as a tarball unpacks it: sessions, knowledge (a planted debug record) and
    backups; the receiver works as root, or as an unprivileged user owning the unpacked
    files."""
    base = unprivileged_dir() if unprivileged else tmp_path
    try:
        _refused_then_adopted(handed_over, base, NOBODY if unprivileged else None)
    finally:
        if unprivileged:
            shutil.rmtree(base, ignore_errors=True)


def test_no_command_opens_a_database_of_anothers_state_before_it_refuses(
    tmp_path: Path, handed_over: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each SQLite file a refused command opens, seen in process: none under ``.air/local``
    (``air resume`` read the hosts of the session it would continue first, and left the
    ``-wal`` a read-only connection does not remove)."""
    copy = tmp_path / "unpacked"
    shutil.copytree(handed_over, copy, symlinks=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(copy)
    opened: list[str] = []
    connect = sqlite3.connect

    def spy(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(database))
        conn: sqlite3.Connection = connect(database, *args, **kwargs)
        return conn

    monkeypatch.setattr(sqlite3, "connect", spy)
    page = str(tmp_path / "report.html")
    for args in (RUN, ("resume",), ("memory", "list"), ("history",), ("session", "list")):
        assert main(list(args)) == 2, args
    assert main(["report", "--html", page]) == 2
    assert main(["status"]) == 2
    local = str(copy / ".air" / "local")
    assert [path for path in opened if local in path] == []


def _refused_then_adopted(src: Path, base: Path, user: int | None) -> None:
    copy, aside, home = base / "unpacked", base / "aside", base / "home"
    shutil.copytree(src, copy, symlinks=True)
    shutil.copytree(src, aside, symlinks=True)
    home.mkdir()
    if user is not None:
        chown_tree(base)
    local = copy / ".air" / "local"
    shipped = session_events(local)
    assert len(shipped) == 1

    handed = _files(local)
    page = str(base / "report.html")
    readers = (("history",), ("session", "list"), ("report", "--html", page), ("status",))
    runs = (RUN, ("resume",), ("memory", "list"), ("restore", "2026-01-01T00:00:00Z"))
    for args in (*runs, *readers):  # no database of it is opened, to write or to read
        done = air_as(copy, home, *args, user=user)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "untrusted_config" in done.stderr, done.stderr
        assert FOREIGN in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    checked = air_as(copy, home, "doctor", user=user)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL  tracked_state" in checked.stdout
    assert FOREIGN in checked.stdout
    for state_check in ("run_records", "worktrees", "databases", "stored_views", "artifacts"):
        assert f"skip  {state_check}" in checked.stdout, checked.stdout  # they read it
    # not a byte written there, nor the doctor's log (compared before the read below, whose
    # connection may leave or remove SQLite's -shm file)
    assert _files(local) == handed
    assert session_events(local) == shipped  # no session opened, nothing appended
    assert (local / "debug-records.db").read_bytes() == b"planted"
    assert not os.path.exists(page)

    # the other way out the message gives: put it aside; air makes its own
    (aside / ".air" / "local").rename(aside / ".air" / "local.foreign")
    done = air_as(aside, home, "memory", "list", user=user)
    assert done.returncode == 0, done.stderr
    assert foreign_local_state(str(aside)) is None
    assert (aside / ".air" / "local" / MARK).is_file()

    # it was the user's own after all: `air trust` shows it and, told yes, adopts it
    untold = air_as(copy, home, "trust", user=user)
    assert untold.returncode == 2, untold.stdout + untold.stderr
    assert FOREIGN in untold.stdout
    adopted = air_as(copy, home, "trust", "--yes", user=user)
    assert adopted.returncode == 0, adopted.stderr
    assert "is yours now" in adopted.stdout
    for args in (("memory", "list"), ("history",)):
        listed = air_as(copy, home, *args, user=user)
        assert listed.returncode == 0, listed.stderr
    assert air_as(copy, home, "trust", user=user).stdout.startswith("air: nothing to trust")


def _files(local: Path) -> dict[str, bytes]:
    """Every file under ``local`` and its bytes, but SQLite's ``-shm`` index of a WAL, which the
    test's own reads of the shipped sessions make and remove."""
    return {
        str(p.relative_to(local)): p.read_bytes()
        for p in local.rglob("*")
        if p.is_file() and not p.name.endswith("-shm")
    }
