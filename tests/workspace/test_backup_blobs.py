"""``air restore FILE`` compares the file as it is now with each snapshot's by git blob id; a
file is hashed in pieces (it can be gigabytes), and the id is git's own (``git hash-object``)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException
from air.workspace.backups import BackupRepository
from tests.gitrepo import git


def test_a_files_blob_id_is_gits_for_a_file_of_many_pieces_and_a_link(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20) + b"tail")  # three pieces and a bit
    (tmp_path / "link").symlink_to("big.bin")
    backups = BackupRepository(str(tmp_path))
    assert backups._current_blob("big.bin") == git(tmp_path, "hash-object", "big.bin")
    link = subprocess.run(
        ["git", "hash-object", "--stdin"], input=b"big.bin", capture_output=True, check=True
    )
    assert backups._current_blob("link") == link.stdout.decode().strip()
    assert backups._current_blob("missing") is None


def test_the_ignored_files_snapshot_leaves_out_trees_their_tools_make_again(
    tmp_path: Path,
) -> None:
    """Before a task that writes in the project itself the git-ignored files are snapshotted,
    but no CMake build tree, virtualenv, node_modules or tagged cache: a rebuild of 2,000
    objects (40 MiB) added 39 MiB to the backup repository at every task, which nothing
    prunes."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*\n!.gitignore\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    files = {
        "settings.local": "LOCAL=1\n",  # the user's: kept
        "build/cache.bin": "no marker: kept\n",
        "cmake-build/CMakeCache.txt": "CMAKE_BUILD_TYPE:STRING=Debug\n",
        "cmake-build/CMakeFiles/app.dir/main.o": "object\n",
        "out/x64/CMakeCache.txt": "\n",
        "out/x64/app": "binary\n",
        "out/notes.txt": "kept beside a nested build tree\n",
        ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/lib/site.py": "x\n",
        "node_modules/left/index.js": "x\n",
        "target/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n",
        "target/debug/app": "binary\n",
        "fake/CACHEDIR.TAG": "not the signature\n",
        "fake/data.bin": "kept: the tag is no real one\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    backups = BackupRepository(str(root))

    async def snapshot_and_list() -> list[str]:
        snap = await backups.snapshot("before task", include_ignored=True)
        return sorted(await backups._entries(snap.commit))

    assert trio.run(snapshot_and_list) == [
        ".gitignore",
        "build/cache.bin",
        "fake/CACHEDIR.TAG",
        "fake/data.bin",
        "out/notes.txt",
        "settings.local",
    ]


def _objects(git_dir: Path) -> dict[str, int]:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "count-objects", "-v"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {k: int(v) for k, v in (line.split(": ") for line in out.splitlines())}


def test_the_backup_repository_packs_itself_and_every_snapshot_still_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found: each snapshot left ~6 loose objects, each a file of at least a disk block, and
    nothing packed them (air's git runs with gc.auto=0): 600 snapshots of a small project,
    3,649 loose objects in 16 MiB (packed: 0.2 MiB)."""
    monkeypatch.setattr("air.workspace.backups.LOOSE_LIMIT", 40)
    root = tmp_path / "proj"
    (root / "src" / "deep").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    backups = BackupRepository(str(root))
    for k in range(24):
        (root / "src" / "deep" / f"f{k % 5}.c").write_text(f"int v = {k};\n")
        trio.run(backups.snapshot, f"s{k}")
    objects = _objects(Path(backups.git_dir))
    assert objects["packs"] >= 1
    assert objects["in-pack"] > 0
    assert objects["count"] <= 40 + 8  # the loose ones since the last packing
    history = trio.run(backups.snapshots)
    assert len(history) == 24
    trio.run(backups.restore_tree, history[0])  # the oldest, from the pack
    assert (root / "src" / "deep" / "f0.c").read_text() == "int v = 0;\n"
    assert not (root / "src" / "deep" / "f1.c").exists()


async def _newest_differing(backups: BackupRepository, rel: str) -> str | None:
    """The reference: every snapshot's whole tree, newest first (what ``pick_for_file`` did,
    one git process per snapshot)."""
    current = backups._current_blob(rel)
    for snap in reversed(await backups.snapshots()):
        entry = (await backups._entries(snap.commit)).get(rel)
        if (entry[1] if entry else None) != current:
            return snap.commit
    return None


async def _picked(backups: BackupRepository, rel: str) -> str | None:
    try:
        return (await backups.pick_for_file(rel)).commit
    except AirException:
        return None


def test_the_snapshot_a_file_is_restored_from_is_the_one_every_tree_says(tmp_path: Path) -> None:
    """``air restore FILE`` reads which snapshot to take from the file's changes along the
    chain (one git log), not from every snapshot's tree: 300 snapshots took 1.1 s that way.
    Random histories of changes, deletions, a content coming back, a mode and a link, each file
    then set to each version it had, a new one and none: the snapshot every tree says."""
    rng = random.Random(7)
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    backups = BackupRepository(str(root))
    names, texts = ["a.txt", "d/b.txt", "c.txt"], ["one\n", "two\n", "three\n"]
    for step in range(14):
        for rel in names:
            path = root / rel
            roll = rng.random()
            if roll < 0.3:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.unlink(missing_ok=True)
                path.write_text(rng.choice(texts))
            elif roll < 0.4:
                path.unlink(missing_ok=True)
            elif roll < 0.45:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.unlink(missing_ok=True)
                path.symlink_to(rng.choice(texts).strip())
            elif roll < 0.6 and path.is_file() and not path.is_symlink():
                path.chmod(path.stat().st_mode ^ 0o111)  # its mode changes, not its content
        trio.run(backups.snapshot, f"s{step}")
    for rel in names:
        path = root / rel
        for now in [*texts, "new\n", None]:
            path.unlink(missing_ok=True)
            if now is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(now)
            want = trio.run(_newest_differing, backups, rel)
            assert trio.run(_picked, backups, rel) == want, (rel, now)
