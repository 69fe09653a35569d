"""Names that are no UTF-8: a file a repository holds in Latin-1 (``caf\\xe9.txt``) and a project
directory named so. Python hands such a name over with a lone surrogate (``'caf\\udce9.txt'``),
which no event, IPC line or log line can encode.

Before: a model's ``fs.list`` of a project holding such a file ended the whole run with a
UnicodeEncodeError (the tool's result could not be capped, recorded or sent to the worker), and
``air doctor`` / ``air demo`` in such a directory with a traceback. Now a tool's output and error
hold U+FFFD where the name's undecodable bytes were (``air.contracts.utf8``), and a project
whose path is no UTF-8 is refused (validation_error, exit 2) before anything is made."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from air.contracts.error import AirException
from air.contracts.tool import ToolCategory, ToolDefinition
from air.testing.wire_replies import Reply, Turn, openai_sse
from air.tools.run import ToolRun
from tests.headless import LOOK_BATCH, json_events, review_project
from tests.security.test_deep_command_run import _result, _run
from tests.tools.conftest import Env
from tests.trust.calc_runs import air_as

LATIN1 = b"caf\xe9.txt"


def _plant(root: Path) -> None:
    with open(os.path.join(os.fsencode(root), LATIN1), "wb") as fh:
        fh.write(b"a Latin-1 name\n")


async def test_a_listing_of_an_undecodable_name_is_recorded_with_the_replacement(
    env: Env,
) -> None:
    _plant(env.root)
    listed = await env.registry.call("fs.list", {}, env.ctx())
    assert listed.status == "ok", listed.error
    assert isinstance(listed.output, dict)
    assert "caf\ufffd.txt" in [e["name"] for e in listed.output["entries"]]
    found = await env.registry.call("fs.search", {"pattern": "Latin-1"}, env.ctx())
    assert found.status == "ok", found.error
    assert json.dumps(found.output).count("caf\\ufffd.txt") == 1
    assert env.types().count("tool.completed") == 2  # both stored in the session's SQLite


def test_a_models_listing_in_a_headless_run_reaches_it_and_the_task_completes(
    tmp_path: Path,
) -> None:
    root, home = review_project(tmp_path, LOOK_BATCH)
    _plant(root)
    done, requests = _run(
        root,
        home,
        Reply(chunks=openai_sse(Turn(tool=("call_1", "fs_list", ["{}"]), stop="tool_use"))),
        Reply(chunks=openai_sse(Turn(text=[_result()]))),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert requests == 2  # the model heard the listing
    events = json_events(done.stdout)
    assert [e["type"] for e in events if e["type"].startswith("task.")][-1] == "task.completed"


def test_a_project_whose_path_is_no_utf8_is_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"proj\xff")))
    root.mkdir()
    for args in (("init",), ("demo", "--dir", str(root / "demo"))):
        done = air_as(root, home, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert "is not UTF-8 text" in done.stderr
        assert "proj\\udcff" in done.stderr  # the name, shown exactly
    assert not (root / ".air").exists()
    # a project made elsewhere and moved (or unpacked) under such a name
    (root / ".air" / "shared").mkdir(parents=True)
    (root / ".air" / "shared" / "project.json").write_text('{"project_id": "p"}')
    done = air_as(root, home, "doctor")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "is not UTF-8 text" in done.stderr


async def test_a_tool_error_naming_an_undecodable_file_is_recorded_with_the_replacement(
    env: Env,
) -> None:
    async def fails(input: dict[str, Any], run: ToolRun) -> Any:
        raise AirException.of(kind="tool_error", message="cannot open caf\udce9.txt")

    definition = ToolDefinition(
        name="test.fails",
        description="fails naming a file",
        input_schema={"type": "object"},
        category=ToolCategory.PROJECT,
    )
    env.registry.register(definition, fails)
    failed = await env.registry.call("test.fails", {}, env.ctx())
    assert failed.status == "error"
    assert failed.error is not None
    assert failed.error.message == "cannot open caf\ufffd.txt"
    assert env.payloads("tool.failed")[0]["error"]["message"] == "cannot open caf\ufffd.txt"
