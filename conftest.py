"""Root pytest configuration: every async test runs under Trio."""

import os
import signal

import pytest
from pytest_trio.enable_trio_mode import pytest_fixture_setup
from pytest_trio.plugin import automark

__all__ = ["pytest_collection_modifyitems", "pytest_fixture_setup"]

# The machine-wide worker slot pool (IMPL-SLOT-1) is sized by the user's setting; the suite's
# runtimes share this machine with each other, so they get a wide pool unless a test (or the
# person running it) sets one. Tests of the pool set their own size and their own HOME.
os.environ.setdefault("AIR_WORKER_SLOTS", "64")

# A shell without job control starts a background command (`.ci/run &`, a CI runner's
# step) with SIGINT ignored, and every process the suite starts would inherit that: a test
# that presses Ctrl-C on `air wait` or a console would then wait for nothing. The suite's
# children get the default disposition, as under a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    """Slow tests first, so that in one pytest-xdist run their waits overlap the fast tests'
    work (longest first packs the workers best). Every async test runs under Trio (pytest-trio's
    trio mode, whose own hook this one replaces). The tests on the one-node Slurm take turns by
    a lock (tests/remote/conftest.py)."""
    automark(items)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
