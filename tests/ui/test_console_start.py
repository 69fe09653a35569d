"""The console starts with ``air run --headless``'s shortcuts (IMPL-FRAME-4): no ``ldconfig -p``
subprocess at Trio's import, no pydantic plugin scan, no cyclic collection until the Main Agent
is up. The real ``air.cli.main`` (``air run PROJECT --cassette DIR --plain``, its input a pipe
that says ``/quit``) in a fresh interpreter; an audit hook records what it spawns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).parents[2]

PROBE = """
import gc, json, sys

spawned = []
collections = []


def hook(event, args):
    if event == "subprocess.Popen":
        spawned.append(" ".join(map(str, args[1])) if not isinstance(args[1], str) else args[1])


def on_gc(phase, info):
    # from Trio's import (the console's start-up, after hold_gc) until the Main Agent exists
    if phase == "start" and "trio" in sys.modules and "air.agents.main" not in sys.modules:
        collections.append(info["generation"])


sys.addaudithook(hook)
gc.callbacks.append(on_gc)
from air.cli import main

code = main(sys.argv[1:])
loader = sys.modules.get("pydantic.plugin._loader")
print(json.dumps({
    "code": code,
    "spawned": spawned,
    "plugin_loader_file": getattr(loader, "__file__", None),
    "collections_before_ready": collections,
    "gc_enabled": gc.isenabled(),
}))
"""


def test_the_console_starts_without_ldconfig_plugin_scan_or_collections(tmp_path: Path) -> None:
    project = tmp_path / "calc"
    shutil.copytree(REPO / "examples" / "calc", project)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    air = ["run", str(project), "--plain", "--cassette", str(project / "cassettes")]
    done = subprocess.run(
        [sys.executable, "-P", "-c", textwrap.dedent(PROBE), *air],
        cwd=tmp_path,
        env=env,
        input="/quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["code"] == 0, done.stderr
    assert not [argv for argv in seen["spawned"] if "ldconfig" in argv], seen["spawned"]
    assert seen["plugin_loader_file"] is None  # the stand-in: no entry-point scan
    assert seen["collections_before_ready"] == []
    assert seen["gc_enabled"]  # released once the console was ready
