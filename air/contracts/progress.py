"""Progress texts with a meaning: said by the supervisor in ``task.progress``, recognised by the
console's task line. Plain strings, so the worker manager can say one before the first model
request without loading the console's contracts (tests/cli/test_first_request_imports.py)."""

from __future__ import annotations

QUEUED_FOR_SLOT = "queued for a slot"
"""A task waits for a machine-wide worker slot (IMPL-SLOT-1)."""
