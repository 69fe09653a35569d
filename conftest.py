"""Root pytest configuration: every async test runs under Trio."""

import os

from pytest_trio.enable_trio_mode import *  # noqa: F403

# The machine-wide worker slot pool (IMPL-SLOT-1) is sized by the user's setting; the suite's
# runtimes share this machine with each other, so they get a wide pool unless a test (or the
# person running it) sets one. Tests of the pool set their own size and their own HOME.
os.environ.setdefault("AIR_WORKER_SLOTS", "64")
