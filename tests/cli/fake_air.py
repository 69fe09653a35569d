"""``python tests/cli/fake_air.py SCRIPT ARGS...``: the real ``air`` command (``air.cli.main``)
with scripted fake workers (``air.testing.fake_runner.load_fake_script``) instead of real ones.

Only tests reach this: the user's ``air`` has no flag for it. The fake's workers write nothing
(their writes would bypass the PermissionEngine) and keep no run records.
"""

from __future__ import annotations

import sys
from typing import Any

from air.cli import main
from air.testing.fake_runner import load_fake_script


def _factory(script: str) -> Any:
    def make(_options: Any, _session: Any, _project_root: str) -> tuple[Any, None]:
        return load_fake_script(script), None

    return make


if __name__ == "__main__":
    script, *argv = sys.argv[1:]
    raise SystemExit(main(argv, runner_factory=_factory(script)))
