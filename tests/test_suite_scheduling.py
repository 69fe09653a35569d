"""The suite's own scheduling (conftest.py): pytest-xdist's controller sees node ids only, so the
tests on the one-node Slurm are known to it by name; every test that uses ``slurm_host`` must
carry one, or it would sit blocked on the Slurm lock in a worker of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import on_the_slurm_node

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = """
def pytest_collection_modifyitems(config, items):
    for item in items:
        uses = "slurm_host" in getattr(item, "fixturenames", ())
        print("ITEM", int(uses), item.nodeid)
"""


def test_every_test_on_the_slurm_node_is_named_for_it_and_no_other(tmp_path: Path) -> None:
    (tmp_path / "slurm_users.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "slurm_users", "--collect-only", "-q",
         "tests/remote"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    items = [line.split(" ", 2)[1:] for line in listed.splitlines() if line.startswith("ITEM ")]
    users = {nodeid for uses, nodeid in items if uses == "1"}
    others = {nodeid for uses, nodeid in items if uses == "0"}
    assert len(users) >= 17, users
    assert [n for n in users if not on_the_slurm_node(n)] == []
    grouped_others = sorted(n for n in others if on_the_slurm_node(n))
    # tests named for Slurm that do not use the node (host files, argv) may ride along; none of
    # them is slow
    assert all("test_srun_hosts.py" in n for n in grouped_others), grouped_others
