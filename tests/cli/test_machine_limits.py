"""What the machine runs out of stops a run with what to do, never a traceback, and nothing
recorded is lost.

A disk that fills during a run: ``air run`` stops with a ``storage_error`` (two tasks copying
their workspaces at once raised a group of raw OSErrors, and ``copytree`` gathered each file's
as text), once there is space ``air resume`` finishes the batch, and a command writing its own
file there says the same: a real tmpfs of 600 KiB in a mount namespace of its own, grown to 30
MiB in place. Too few file descriptors (``ulimit -n 20``): tasks that cannot start fail, the
run ends as an ``environment_error`` naming the limit (a git call's EMFILE was a traceback). A
project on a read-only mount: its sessions are read where they are (SQLite could not make its
WAL index there: every reader failed, and the database was called corrupt, to be moved aside).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trust.calc_runs import EXAMPLE, REPO, RUN, air_as

SCRIPT = """
set -u
mount -t tmpfs -o size=600k tmpfs "$DISK"
cp -r "$EXAMPLE" "$DISK/calc" && rm -rf "$DISK/calc/.air/local" && cd "$DISK/calc"
"$PY" -m air.cli run --headless batch.yaml --cassette cassettes >"$OUT/run.out" 2>"$OUT/run.err"
echo $? >"$OUT/run.rc"
# the run took back what it could not record (a worktree): the disk is filled again
head -c 1G /dev/zero >"$DISK/filler" 2>/dev/null
"$PY" -m air.cli doctor --bundle "$DISK/bundle.tgz" >"$OUT/bundle.out" 2>"$OUT/bundle.err"
echo $? >"$OUT/bundle.rc"
rm -f "$DISK/filler"
mount -o remount,size=30m "$DISK"
"$PY" -m air.cli resume --cassette cassettes >"$OUT/resume.out" 2>"$OUT/resume.err"
echo $? >"$OUT/resume.rc"
"$PY" -m air.cli session list >"$OUT/sessions.out" 2>&1
"""


def own_mounts(script: str, env: dict[str, str]) -> None:
    """Run ``script`` (sh) in a mount namespace of its own: root there, anyone else in a user
    namespace too; what it mounts is gone after it."""
    unshare = shutil.which("unshare")
    assert unshare, "util-linux's unshare is installed by scripts/setup.sh"
    argv = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "-r", "--mount"]
    subprocess.run([*argv, "sh", "-c", script], env=env, check=True, timeout=300)


@pytest.mark.slow
def test_a_full_disk_stops_the_run_clearly_and_resume_finishes_it(tmp_path: Path) -> None:
    disk, out, home = tmp_path / "disk", tmp_path / "out", tmp_path / "home"
    for made in (disk, out, home):
        made.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "DISK": str(disk),
        "OUT": str(out),
        "EXAMPLE": str(EXAMPLE),
        "PY": sys.executable,
    }
    own_mounts(SCRIPT, env)

    err = (out / "run.err").read_text()
    assert (out / "run.rc").read_text().strip() == "1", err
    assert "Traceback" not in err, err
    assert "storage_error" in err, err
    assert "no space is left on the device" in err, err
    assert "`air resume` finishes a run it stopped" in err, err
    # a command's own file on the full disk (the doctor's bundle): the same, not a traceback
    bundle = (out / "bundle.err").read_text()
    assert (out / "bundle.rc").read_text().strip() == "1", bundle
    assert "air: storage_error: air could not write" in bundle, bundle
    assert "Traceback" not in bundle, bundle

    done = (out / "resume.out").read_text() + (out / "resume.err").read_text()
    assert (out / "resume.rc").read_text().strip() == "0", done
    assert "completed: done 3/3, failed 0" in done, done
    assert len((out / "sessions.out").read_text().splitlines()) == 1  # the one session, resumed


def test_too_few_open_files_end_the_run_naming_the_limit(tmp_path: Path) -> None:
    root, home = tmp_path / "calc", tmp_path / "home"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    run = f'ulimit -n 20; exec "{sys.executable}" -m air.cli run --headless batch.yaml '
    done = subprocess.run(
        ["sh", "-c", run + "--cassette cassettes"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "air: environment_error:" in done.stderr, done.stderr
    assert "(open files: at most 20, `ulimit -n`)" in done.stderr
    listed = air_as(root, home, "session", "list")
    assert len(listed.stdout.splitlines()) == 1, listed  # recorded, to resume


READ_ONLY = """
set -u
mount --bind "$ROOT" "$ROOT" && mount -o remount,bind,ro "$ROOT" && cd "$ROOT"
for args in history "session list" "history --json"; do
  name=$(echo "$args" | tr ' -' '__')
  "$PY" -m air.cli $args >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo $? >"$OUT/$name.rc"
done
"""


def test_a_project_on_a_read_only_mount_is_read_where_it_is(tmp_path: Path) -> None:
    root, home, out = tmp_path / "calc", tmp_path / "home", tmp_path / "out"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    home.mkdir()
    out.mkdir()
    ran = air_as(root, home, *RUN)
    assert ran.returncode == 0, ran.stderr
    [db] = (root / ".air" / "local" / "sessions").glob("*/session.db")
    stored = db.read_bytes()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    extra = {"ROOT": str(root), "OUT": str(out), "PY": sys.executable}
    own_mounts(READ_ONLY, {**env, **extra})

    history = (out / "history.out").read_text()
    assert (out / "history.rc").read_text().strip() == "0", (out / "history.err").read_text()
    assert "task.completed" in history
    listed = (out / "session_list.out").read_text()
    assert (out / "session_list.rc").read_text().strip() == "0", listed
    assert db.parent.name in listed
    # the full open needs to write beside the database: said so, never "corrupt, move it aside"
    refused = (out / "history___json.err").read_text()
    assert (out / "history___json.rc").read_text().strip() == "1", refused
    assert "air: storage_error: cannot open the database" in refused
    assert "its directory is read-only" in refused
    assert "corrupt" not in refused
    assert db.read_bytes() == stored
