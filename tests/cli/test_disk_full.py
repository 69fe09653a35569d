"""A disk that fills during a run: ``air run`` stops with a ``storage_error`` saying what to do
(no traceback: two tasks copying their workspaces at once raised a group of raw OSErrors, and
``copytree`` gathered each file's as text), nothing recorded is lost, and once there is space
``air resume`` finishes the batch; a command writing its own file there says the same. A real
tmpfs of 600 KiB in a mount namespace of its own, grown to 30 MiB in place."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trust.calc_runs import EXAMPLE, REPO

SCRIPT = """
set -u
mount -t tmpfs -o size=600k tmpfs "$DISK"
cp -r "$EXAMPLE" "$DISK/calc" && rm -rf "$DISK/calc/.air/local" && cd "$DISK/calc"
"$PY" -m air.cli run --headless batch.yaml --cassette cassettes >"$OUT/run.out" 2>"$OUT/run.err"
echo $? >"$OUT/run.rc"
"$PY" -m air.cli doctor --bundle "$DISK/bundle.tgz" >"$OUT/bundle.out" 2>"$OUT/bundle.err"
echo $? >"$OUT/bundle.rc"
mount -o remount,size=30m "$DISK"
"$PY" -m air.cli resume --cassette cassettes >"$OUT/resume.out" 2>"$OUT/resume.err"
echo $? >"$OUT/resume.rc"
"$PY" -m air.cli session list >"$OUT/sessions.out" 2>&1
"""


@pytest.mark.slow
def test_a_full_disk_stops_the_run_clearly_and_resume_finishes_it(tmp_path: Path) -> None:
    disk, out, home = tmp_path / "disk", tmp_path / "out", tmp_path / "home"
    for made in (disk, out, home):
        made.mkdir()
    unshare = shutil.which("unshare")
    assert unshare, "util-linux's unshare is installed by scripts/setup.sh"
    # root mounts in a mount namespace of its own; anyone else in a user namespace too
    argv = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "-r", "--mount"]
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "DISK": str(disk),
        "OUT": str(out),
        "EXAMPLE": str(EXAMPLE),
        "PY": sys.executable,
    }
    subprocess.run([*argv, "sh", "-c", SCRIPT], env=env, check=True, timeout=300)

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
