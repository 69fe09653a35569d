"""``air release`` (issue #15 item 5): sdist and wheel with checksums; the sdist holds every
test, every example and the LICENSE; the distribution is named ``aircoding`` while the
package and the command stay ``air``."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from air.cli.release import check_sdist, default_source

REPO = Path(__file__).parents[2]

# setuptools builds the sdist in a directory inside the checkout: two builds at once (these
# tests on two pytest-xdist workers, or scripts/remote_setup.sh's wheel) would delete each
# other's files; every build holds .remote/build.lock (scripts/remote_setup.sh too)


def _release(out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``air release --dist OUT`` from this checkout, holding .remote/build.lock."""
    (REPO / ".remote").mkdir(exist_ok=True)
    with open(REPO / ".remote" / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(
            [sys.executable, "-m", "air", "release", "--dist", str(out)],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )


PLANTED = ("aircoding-0.1.0.tar.gz", "aircoding-0.1.0-py3-none-any.whl", "SHA256SUMS.tmp")
"""Links put in DIR before the build (a task's merged files, another user's in a shared
directory), each to a file of its own outside DIR: the release replaces them, never writes
through them."""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    for name in PLANTED:
        victim = out.parent / f"victim-{name}"
        victim.write_text("the user's own file\n")
        (out / name).symlink_to(victim)
    proc = _release(out)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.split()) == 3
    return out


@pytest.mark.slow
def test_the_release_writes_through_no_link_put_in_its_directory(dist: Path) -> None:
    for name in PLANTED:
        assert (dist.parent / f"victim-{name}").read_text() == "the user's own file\n"
    for name in PLANTED[:2]:
        assert not (dist / name).is_symlink()
        assert (dist / name).stat().st_size > 10_000


@pytest.mark.slow
def test_sdist_and_wheel_with_matching_checksums(dist: Path) -> None:
    sums: dict[str, str] = {}
    for line in (dist / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    assert sorted(sums) == ["aircoding-0.1.0-py3-none-any.whl", "aircoding-0.1.0.tar.gz"]
    for name, digest in sums.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest


@pytest.mark.slow
def test_the_sdist_ships_every_test_every_example_and_the_license(dist: Path) -> None:
    sdist = dist / "aircoding-0.1.0.tar.gz"
    assert check_sdist(sdist, default_source()) == []
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
        license_text = archive.extractfile("aircoding-0.1.0/LICENSE").read().decode()  # type: ignore[union-attr]
    tests = {p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py")}
    assert len(tests) > 60
    assert tests <= names
    assert "examples/calc/batch.yaml" in names
    assert "examples/calc/cassettes/fix-evaluator.jsonl" in names
    assert "tests/cli/junit.xsd" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert license_text.startswith("MIT License")


@pytest.mark.slow
def test_the_wheel_is_air_under_the_free_distribution_name(dist: Path) -> None:
    with zipfile.ZipFile(dist / "aircoding-0.1.0-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        metadata = wheel.read("aircoding-0.1.0.dist-info/METADATA").decode()
        points = wheel.read("aircoding-0.1.0.dist-info/entry_points.txt").decode()
    assert "Name: aircoding" in metadata
    assert "License: MIT" in metadata
    assert "air = air.cli:main" in points
    assert "air/cli/__init__.py" in names
    assert "aircoding-0.1.0.dist-info/licenses/LICENSE" in names
    assert not any(n.startswith("tests/") for n in names)


def test_the_sdist_check_names_what_is_missing(tmp_path: Path) -> None:
    """The sdist air built before: one test file, no examples, no LICENSE."""
    (tmp_path / "air-0.1.0" / "tests").mkdir(parents=True)
    (tmp_path / "air-0.1.0" / "tests" / "test_import_boundaries.py").write_text("")
    old = tmp_path / "old.tar.gz"
    with tarfile.open(old, "w:gz") as archive:
        archive.add(tmp_path / "air-0.1.0", arcname="air-0.1.0")
    missing = check_sdist(old, default_source())
    assert "LICENSE" in missing
    assert "examples/calc/batch.yaml" in missing
    assert "tests/cli/test_release.py" in missing
    assert "tests/test_import_boundaries.py" not in missing


@pytest.mark.slow
def test_the_same_source_builds_the_same_hashes_twice(dist: Path, tmp_path: Path) -> None:
    again = _release(tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "SHA256SUMS").read_text() == (dist / "SHA256SUMS").read_text()
    with tarfile.open(next(tmp_path.glob("*.tar.gz"))) as archive:
        times = {m.mtime for m in archive.getmembers()}
        owners = {(m.uid, m.gid, m.uname, m.gname) for m in archive.getmembers()}
    assert len(times) == 1  # SOURCE_DATE_EPOCH, not the checkout's file times
    assert owners == {(0, 0, "", "")}


def test_a_bad_source_date_epoch_is_refused(tmp_path: Path) -> None:
    done = _release(tmp_path, env={**os.environ, "SOURCE_DATE_EPOCH": "yesterday"})
    assert done.returncode == 2
    assert "SOURCE_DATE_EPOCH='yesterday' is not a number of seconds" in done.stderr
