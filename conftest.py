"""Root pytest configuration: every async test runs under Trio, slow tests first, the tests on
the one-node Slurm in turn on one pytest-xdist worker; Hypothesis judges what a property holds,
not how fast this machine makes inputs."""

import os
import signal
import sys

import pytest
from hypothesis import HealthCheck, settings
from pytest_trio.enable_trio_mode import pytest_fixture_setup
from pytest_trio.plugin import automark
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

__all__ = ["pytest_collection_modifyitems", "pytest_fixture_setup"]

# Hypothesis's input-generation speed check and per-example deadline measure the machine, not
# the property: on a loaded 2-core runner one draw of a clean-clone run took 1.6 s (a pause the
# test did not cause) and failed tests/cli/test_terminal_text.py's property with
# FailedHealthCheck. Every property still runs its examples and asserts what it asserts.
settings.register_profile(
    "air", suppress_health_check=[HealthCheck.too_slow], deadline=None, print_blob=True
)
settings.load_profile("air")

# The machine-wide worker slot pool (IMPL-SLOT-1) is sized by the user's setting; the suite's
# runtimes share this machine with each other, so they get a wide pool unless a test (or the
# person running it) sets one. Tests of the pool set their own size and their own HOME.
os.environ.setdefault("AIR_WORKER_SLOTS", "64")

# pytest keeps the test modules it rewrote for its assertions as bytecode beside them, unless
# PYTHONDONTWRITEBYTECODE is set (as it is on the machines this suite runs on): then every
# pytest-xdist worker of every lane rewrites all ~400 test modules again, ~10 s of CPU each. The
# suite's own process writes them; the processes it starts keep the setting they were given.
sys.dont_write_bytecode = False

# A shell without job control starts a background command (`.ci/run &`, a CI runner's
# step) with SIGINT ignored, and every process the suite starts would inherit that: a test
# that presses Ctrl-C on `air wait` or a console would then wait for nothing. The suite's
# children get the default disposition, as under a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The same for Ctrl-Z: air keeps a SIGTSTP that whoever started it ignored (IMPL-STOP-1), and
# the tests of its stop start it as a terminal's shell would.
if signal.getsignal(signal.SIGTSTP) == signal.SIG_IGN:
    signal.signal(signal.SIGTSTP, signal.SIG_DFL)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    """Slow tests first, so that in one pytest-xdist run their waits overlap the fast tests'
    work (longest first packs the workers best). Every async test runs under Trio (pytest-trio's
    trio mode, whose own hook this one replaces). The tests on the one-node Slurm take turns by
    a lock (tests/remote/conftest.py)."""
    automark(items)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def on_the_slurm_node(nodeid: str) -> bool:
    """Whether a test runs on the one-node Slurm, by its node id: pytest-xdist's controller sees
    no more than that (tests/test_suite_scheduling.py holds every test using ``slurm_host`` to
    it)."""
    return nodeid.startswith("tests/remote/") and ("slurm" in nodeid or "srun" in nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling:
    """The units of work the workers take: every test on the one-node Slurm in one, which a
    worker runs in turn while the others run the rest (spread over the workers, they would each
    sit blocked on the Slurm lock); every other test with the rest of its module, so a module's
    expensive fixture (a built wheel, a built example) is made once, not once per worker. The
    Slurm unit goes first, then units with more tests."""
    return _Units(config, log)


class _Units(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return "slurm" if on_the_slurm_node(nodeid) else nodeid.split("::", 1)[0]

    def _assign_work_unit(self, node: WorkerController) -> None:
        # the Slurm unit is the longest chain of the slow lane (~160 s on one worker): it goes
        # first, or it starts when the units with more tests are done and ends the lane late
        if "slurm" in self.workqueue:
            self.workqueue.move_to_end("slurm", last=False)
        super()._assign_work_unit(node)
