"""Root pytest configuration: every async test runs under Trio."""

from pytest_trio.enable_trio_mode import *  # noqa: F403
