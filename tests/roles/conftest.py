"""Reuse the worker fixtures (project on disk, real ToolRegistry, cassette-driven provider)."""

from __future__ import annotations

from tests.workers.conftest import env

__all__ = ["env"]
