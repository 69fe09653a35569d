"""A small Python project whose pytest suite breaks between sessions, and one session of it.

Shared by the tests that run ``air run --headless`` over it: the project (``calc.py``, its tests,
a ``run_tests.py`` that runs the real pytest copied from this venv into ``vendor/``, since the
sandbox sees the system's python3 and not the venv), the batch (one executor task whose
verification runs the suite), the scripts of its executor and debugger, and one session run
against the strict local Anthropic server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import _pytest
import iniconfig
import packaging
import pluggy
import py  # type: ignore[import-untyped]
import pytest

from air.testing.strict_servers import StrictServer
from tests.gitrepo import git
from tests.trusted import trust_project

KEY = "zq81-learning-key-6d2b9f0e4c1a7e35b8d0"
MODELS = (
    "default: anthropic/claude-sonnet-4-5\n"
    "providers:\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: {url}\n"
    "    auth_ref: AIR_E2E_KEY\n"
    "    models:\n"
    "      claude-sonnet-4-5: {{context_window: 200000, max_output_tokens: 64000}}\n"
)
TESTS = "python3 run_tests.py"
GOOD_MEAN = "return sum(xs) / len(xs)"
BAD_MEAN = "return sum(xs) / (len(xs) - 1)"
GOOD_PARSE = "return int(text)"
BAD_PARSE = "return int(text, 8)"
CALC = '"""Small statistics."""\n\n\ndef mean(xs):\n    {mean}\n\n\ndef parse(text):\n    {parse}\n'
TEST_CALC = (
    "from calc import mean, parse\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    'def test_parse():\n    assert parse("19") == 19\n'
)
RUN_TESTS = (
    "import sys\n\n"
    "sys.dont_write_bytecode = True\n"
    'sys.path[:0] = ["vendor", "."]\n'
    "import pytest\n\n"
    'raise SystemExit(pytest.main(["-q", "-p", "no:cacheprovider", "tests"]))\n'
)
BATCH = (
    "version: 1\nname: learning\ndefaults: {constraints: "
    "{max_turns: 8, retry_budget: 1, hard_timeout_ms: 120000}}\n"
    "tasks:\n"
    "  - id: work\n    title: tidy calc\n    description: Tidy calc.py.\n"
    "    scope: {write_area: ['calc.py']}\n"
    f'    verification: {{commands: ["{TESTS}"], required: true}}\n'
)
_USAGE = {"input_tokens": 10, "output_tokens": 10}


def use(i: str, name: str, inp: Mapping[str, object]) -> str:
    content = [{"type": "tool_use", "id": i, "name": name, "input": inp}]
    return json.dumps({"content": content, "stop_reason": "tool_use", "usage": _USAGE})


def claim(summary: str, result: Mapping[str, object]) -> str:
    block = {"status": "completed", "summary": summary, "result": result}
    text = f"{summary}\n```json:result\n{json.dumps(block)}\n```\n"
    content = [{"type": "text", "text": text}]
    return json.dumps({"content": content, "stop_reason": "end_turn", "usage": _USAGE})


def calc_source(*, mean: str = GOOD_MEAN, parse: str = GOOD_PARSE) -> str:
    return CALC.format(mean=mean, parse=parse)


def make_project(tmp: Path) -> tuple[Path, Path]:
    """``tmp/calc`` (a git repository; ``mean`` broken) and an empty ``tmp/home``."""
    root, home = tmp / "calc", tmp / "home"
    (root / "tests").mkdir(parents=True)
    home.mkdir(exist_ok=True)
    (root / "calc.py").write_text(calc_source(mean=BAD_MEAN))
    (root / "tests" / "test_calc.py").write_text(TEST_CALC)
    (root / "run_tests.py").write_text(RUN_TESTS)
    (root / ".gitignore").write_text("__pycache__/\n.air/local/\n")
    (root / "batch.yaml").write_text(BATCH)
    vendor = root / "vendor"
    for module in (_pytest, pytest, pluggy, iniconfig, packaging, py):
        source = Path(str(module.__file__))
        ignore = shutil.ignore_patterns("__pycache__")
        if source.name == "__init__.py":
            shutil.copytree(source.parent, vendor / source.parent.name, ignore=ignore)
        else:
            shutil.copy(source, vendor / source.name)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "calc with a broken mean")
    return root, home


def commit_calc(root: Path, message: str, **parts: str) -> None:
    (root / "calc.py").write_text(calc_source(**parts))
    git(root, "commit", "-qam", message)


def scripts(directory: Path, session: int, fix: dict[str, str], diagnosis: str) -> Path:
    """The executor's script (read and touch calc.py, run the suite, claim) and the debugger's (fix,
    run the suite, report ``fixed``) for one session."""
    directory.mkdir(parents=True)
    touch = {
        "path": "calc.py",
        "old_string": '"""Small statistics."""',
        "new_string": f'"""Small statistics."""\n# tidied in session {session}',
    }
    read = {"path": "calc.py"}
    work = [
        use("w0", "fs.read", read),
        use("w1", "fs.edit", touch),
        use("w2", "shell.run", {"command": TESTS}),
        claim("Tidied calc.py.", {"changes_made": True}),
    ]
    debug = [
        use("d0", "fs.read", read),
        use("d1", "fs.edit", {"path": "calc.py", **fix}),
        use("d2", "shell.run", {"command": TESTS}),
        claim(diagnosis, {"diagnosis": diagnosis, "root_cause": diagnosis, "fixed": True}),
    ]
    (directory / "work.jsonl").write_text("\n".join(work) + "\n")
    (directory / "work.debug1.jsonl").write_text("\n".join(debug) + "\n")
    return directory


def run_session(
    root: Path, home: Path, model: Any, *extra: str
) -> tuple[subprocess.CompletedProcess[str], StrictServer]:
    """One ``air run --headless batch.yaml`` against a strict server playing ``model``:
    (the finished process, the stopped server with the requests it received and rejected)."""
    with StrictServer(api_key=KEY, model=model) as server:
        models = root / ".air" / "shared" / "models.yaml"
        models.parent.mkdir(parents=True, exist_ok=True)
        models.write_text(MODELS.format(url=server.url))
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
        done = subprocess.run(
            [sys.executable, "-m", "air.cli", "run", "--headless", "batch.yaml", *extra],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    return done, server
