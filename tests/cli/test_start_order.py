"""``air run --headless`` starts its spare worker before it imports anything heavy (IMPL-BOOT-1):
the worker's own imports then run on the other core while the parent loads pydantic, the
contracts and Trio. A fresh interpreter, the real ``air.cli.main``; the spare's start is
recorded, not spawned."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("pydantic", "pydantic_core", "trio", "httpx", "yaml", "sqlite3", "anthropic")


def _probe(tmp_path: Path, code: str) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-P", "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_the_spare_starts_before_pydantic_trio_and_the_contracts(tmp_path: Path) -> None:
    (tmp_path / "bad-batch.yaml").write_text("tasks: [\n")  # refused once parsed, after the start
    seen = _probe(
        tmp_path,
        f"""
        import io, json, sys
        import air.ipc.spare as spare

        seen = {{}}

        def start(cwd, command=None):
            seen["at_spare_start"] = sorted(
                m
                for m, module in sys.modules.items()
                if (m.split(".")[0] in {HEAVY!r} or m == "air.contracts")
                and getattr(module, "__file__", None)  # not the plugin loader's stand-in
            )
            return None  # no process: the run then spawns its workers itself

        spare.SpareWorker.start = staticmethod(start)
        from air.cli import main

        sys.stderr = io.StringIO()
        code = main(["run", "--headless", "bad-batch.yaml"])
        seen["code"] = [str(code)]
        seen["after"] = sorted(m for m in sys.modules if m.split(".")[0] == "pydantic")[:1]
        print(json.dumps(seen))
        """,
    )
    assert seen["at_spare_start"] == []
    assert seen["code"] == ["2"]  # the bad batch file is still refused, after the start
    assert seen["after"] == ["pydantic"]


def test_a_batch_path_that_is_no_regular_file_starts_no_spare(tmp_path: Path) -> None:
    """Refused at once (missing, a directory): a worker started for it would only be killed."""
    (tmp_path / "a-directory").mkdir()
    seen = _probe(
        tmp_path,
        """
        import io, json, sys
        import air.ipc.spare as spare

        started = []
        spare.SpareWorker.start = staticmethod(lambda cwd, command=None: started.append(cwd))
        from air.cli import main

        sys.stderr = io.StringIO()
        codes = [str(main(["run", "--headless", name])) for name in ("missing.yaml", "a-directory")]
        print(json.dumps({"codes": codes, "started": started}))
        """,
    )
    assert seen == {"codes": ["2", "2"], "started": []}


def test_importing_the_run_command_imports_nothing_heavy(tmp_path: Path) -> None:
    seen = _probe(
        tmp_path,
        f"""
        import json, sys
        import air.cli.run

        heavy = [m for m in sys.modules if m.split(".")[0] in {HEAVY!r}]
        heavy += [m for m in sys.modules if m.startswith(("air.contracts", "air.events"))]

        print(json.dumps({{"heavy": heavy}}))
        """,
    )
    assert seen["heavy"] == []
