"""A configuration or state file someone else chose is read bounded (IMPL-TRUST-5).

Found: a cloned repository's 3 GiB ``AGENTS.md`` (or ``.air/shared/project.json``) was read
whole by every command, ~30 s and 6 GiB of memory to refuse it (the OOM killer on a smaller
machine); a named pipe where ``~/.air/models.yaml`` (or ``permissions.yaml``, ``mcp.yaml``,
``config.yaml``) was had every command, ``air doctor`` too, wait forever. Now such a file is
refused before it is read, naming what it is. Files here are sparse: their size costs no disk.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from air.small_file import MAX_BYTES, NotRegular, TooLarge, open_regular, read_small
from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.tools.sandbox_probe import NOBODY, chown_tree, unprivileged_dir
from tests.trust.calc_runs import EXAMPLE, RUN, air_as

CASSETTE = str(
    Path(__file__).parents[2] / "examples" / "calc" / "cassettes" / "fix-evaluator.jsonl"
)
HUGE = 64 << 20  # far past the limit; read whole it is read: the message says none of it was


def _project(top: Path) -> tuple[Path, dict[str, str]]:
    root, home = top / "proj", top / "home"
    root.mkdir()
    home.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    env = {**os.environ, "HOME": str(home)}
    assert air_cli(["init", "."], cwd=root, env=env).returncode == 0
    init_repo(root, message="start")
    return root, env


def _run(root: Path, env: dict[str, str]) -> tuple[int, str]:
    done = air_cli(
        ["run", "-p", "hi", "--headless", "--cassette", CASSETTE], cwd=root, env=env, timeout=60
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "name", ["AGENTS.md", ".air/shared/models.yaml", ".air/shared/rules/big.md"]
)
def test_a_huge_project_file_is_refused_unread(tmp_path: Path, name: str) -> None:
    root, env = _project(tmp_path)
    with open(root / name, "wb") as fh:
        fh.truncate(HUGE)
    code, err = _run(root, env)
    assert code == 2, err
    assert "config_error" in err
    assert (
        f"{name}: 64.0 MiB, more than the 4.0 MiB air reads of such a file; none of it was read"
        in err
    )
    assert "session" not in err.split("config_error")[0]  # refused before a session began


def _limited(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real command with 1 GiB of address space: a 3 GiB file read whole fails it."""
    return subprocess.run(
        ["prlimit", f"--as={1 << 30}", sys.executable, "-m", "air.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_huge_project_json_is_refused_unread(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    with open(root / ".air" / "shared" / "project.json", "r+b") as fh:
        fh.truncate(3 << 30)
    for args in (["session", "list"], ["run", "-p", "hi", "--headless", "--cassette", CASSETTE]):
        done = _limited(args, root, env)
        assert done.returncode == 2, done.stderr
        assert "3.0 GiB, more than the 4.0 MiB air reads of such a file" in done.stderr


def test_an_unreadable_instruction_file_is_a_config_error_naming_it() -> None:
    """As ``nobody``, an AGENTS.md it may not read: a config_error naming the file, which a
    run's trust check mid-run (each worker attempt) turns into that task's failure; an
    ``OSError`` there would have escaped the attempt."""
    top = unprivileged_dir()
    try:
        root, home = top / "calc", top / "home"
        shutil.copytree(EXAMPLE, root)
        (root / "AGENTS.md").write_text("hello\n")
        init_repo(root, message="calc")
        home.mkdir()
        chown_tree(top)
        (root / "AGENTS.md").chmod(0o000)
        run = air_as(root, home, *RUN, user=NOBODY)
        assert run.returncode == 2, run.stderr
        assert "config_error: AGENTS.md: Permission denied" in run.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("name", ["permissions.yaml", "mcp.yaml", "config.yaml"])
def test_a_named_pipe_in_air_home_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    root, env = _project(tmp_path)
    os.mkfifo(Path(env["HOME"]) / ".air" / name)
    env.pop("AIR_WORKER_SLOTS", None)  # set for the suite: config.yaml is read without it
    code, err = _run(root, env)  # waiting on the pipe: killed at the timeout, -9
    assert code == 2, err
    assert f".air/{name}" in err
    assert "a named pipe, not a regular file; none of it was read" in err


def test_a_named_pipe_for_sandbox_yaml_fails_each_command_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """Read at each ``shell.run`` on the Trio thread: waiting on the pipe stopped the whole run,
    its deadlines too."""
    root, home = tmp_path / "calc", tmp_path / "home"
    shutil.copytree(EXAMPLE, root)
    init_repo(root, message="calc")
    (home / ".air").mkdir(parents=True)
    os.mkfifo(home / ".air" / "sandbox.yaml")
    env = {**os.environ, "HOME": str(home)}
    run = air_cli(list(RUN), cwd=root, env=env, timeout=60)
    assert run.returncode == 1, run.stderr  # its tasks' verifications failed; not killed, -9
    history = air_cli(["history", "--all", "--json"], cwd=root, env=env, timeout=60).stdout
    failed = [line for line in history.splitlines() if '"tool.failed"' in line]
    assert failed
    assert all(
        f"{home}/.air/sandbox.yaml: cannot be read (a named pipe, not a regular file" in line
        for line in failed
    )


def test_a_huge_cassette_a_repository_ships_is_refused_unread(tmp_path: Path) -> None:
    """A repository's recorded turns replayed with ``--cassette`` (examples/calc ships its own):
    a 2 GiB one took 18 s and 4 GiB of memory to refuse."""
    root, home = tmp_path / "calc", tmp_path / "home"
    shutil.copytree(EXAMPLE, root)
    init_repo(root, message="calc")
    home.mkdir()
    with open(root / "cassettes" / "fix-tokenizer.jsonl", "r+b") as fh:
        fh.truncate(65 << 20)
    run = air_cli(list(RUN), cwd=root, env={**os.environ, "HOME": str(home)}, timeout=60)
    assert run.returncode == 2, run.stderr
    assert "fix-tokenizer.jsonl: 65.0 MiB, more than the 64.0 MiB air reads" in run.stderr


def test_a_named_pipe_for_models_yaml_is_reported_by_the_doctor(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    os.mkfifo(Path(env["HOME"]) / ".air" / "models.yaml")
    listed = air_cli(["provider", "list"], cwd=root, env=env, timeout=60)
    assert listed.returncode == 2, listed.stderr
    assert "a named pipe, not a regular file" in listed.stderr
    doctor = air_cli(["doctor"], cwd=root, env=env, timeout=60)
    assert doctor.returncode != 0
    assert "FAIL  providers" in doctor.stdout + doctor.stderr
    assert "a named pipe, not a regular file" in doctor.stdout + doctor.stderr


def test_init_leaves_a_named_pipe_gitignore_and_appends_to_a_huge_one_unread(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    piped, huge = tmp_path / "piped", tmp_path / "huge"
    for root in (piped, huge):
        root.mkdir()
        (root / "notes.txt").write_text("ship it\n")
        init_repo(root, message="start")
    os.mkfifo(piped / ".gitignore")
    done = air_cli(["init", "."], cwd=piped, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    size = 3 << 30  # NULs, no newline at its end
    with open(huge / ".gitignore", "wb") as fh:
        fh.truncate(size)
    limited = _limited(["init", "."], huge, env)
    assert limited.returncode == 0, limited.stderr
    with open(huge / ".gitignore", "rb") as fh:
        fh.seek(size)
        assert fh.read() == b"\n.air/local/\n"


def test_read_small_refuses_what_is_no_small_regular_file(tmp_path: Path) -> None:
    exact, over = tmp_path / "exact", tmp_path / "over"
    exact.write_bytes(b"x" * MAX_BYTES)
    with open(over, "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    assert len(read_small(exact)) == MAX_BYTES
    with pytest.raises(TooLarge) as large:
        read_small(over)
    assert large.value.errno == errno.EFBIG
    assert str(large.value) == (
        "4,194,305 bytes, more than the 4.0 MiB air reads of such a file; none of it was read"
    )
    with pytest.raises(TooLarge):
        read_small(exact, MAX_BYTES - 1)
    with pytest.raises(TooLarge) as grown:  # a size of 0, then more to read than the limit
        read_small("/proc/self/status", 10)
    assert str(grown.value).startswith("11 bytes, more than the 10 bytes")
    os.mkfifo(tmp_path / "pipe")
    for path, kind in (
        (tmp_path / "pipe", "a named pipe"),
        ("/dev/zero", "a character device"),
        (tmp_path, "a directory"),
    ):
        with pytest.raises(NotRegular) as refused:
            open_regular(path)
        assert str(refused.value) == f"{kind}, not a regular file; none of it was read"
    (tmp_path / "link").symlink_to(exact)
    assert read_small(tmp_path / "link") == exact.read_bytes()
    with pytest.raises(OSError, match="Too many levels of symbolic links") as looped:
        read_small(tmp_path / "link", follow=False)
    assert looped.value.errno == errno.ELOOP


def test_an_exact_open_takes_the_checked_file_or_nothing(tmp_path: Path) -> None:
    """``exact``: the caller checked a real path (inside the project, no protected file); a
    link put at it, or at a directory above it, since (a task's command running beside air) is
    refused, where a plain open followed it to what it names now."""
    (tmp_path / "docs").mkdir()
    checked = tmp_path / "docs" / "design.md"
    checked.write_text("the design\n")
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "design.md").write_text("PLANTED-KEY\n")
    assert read_small(checked) == read_small(checked, exact=True) == b"the design\n"
    os.rename(tmp_path / "docs", tmp_path / "docs.old")
    (tmp_path / "docs").symlink_to(secret)  # a directory above it
    assert read_small(checked) == b"PLANTED-KEY\n"  # what a plain read took
    with pytest.raises(OSError, match="a link where the file was checked") as above:
        read_small(checked, exact=True)
    assert above.value.errno == errno.ELOOP
    (tmp_path / "docs").unlink()
    os.rename(tmp_path / "docs.old", tmp_path / "docs")
    checked.unlink()
    checked.symlink_to(secret / "design.md")  # the file itself
    with pytest.raises(OSError, match="symbolic links") as at:
        read_small(checked, exact=True)
    assert at.value.errno == errno.ELOOP
