"""``air restore FILE`` compares the file as it is now with each snapshot's by git blob id; a
file is hashed in pieces (it can be gigabytes), and the id is git's own (``git hash-object``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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
