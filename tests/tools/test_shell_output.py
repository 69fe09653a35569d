"""shell.run's output path: redacted as it streams into the log artifact, a bounded live view,
the end of each stream in the result, and nothing left behind when the command is cancelled."""

from __future__ import annotations

import os

import trio

from air.security.redact import REDACTED
from air.tools.output import LIVE_CHARS, TAIL_CHARS
from tests.tools.conftest import Env

SECRET = "reg-secret-value-XYZ"
LINE = f"step ok {SECRET} token abcdefghijklmnop ghp_{'c3' * 18} done\n"


async def _deltas(env: Env, command_run_id: str) -> str:
    return "".join(
        e.payload["data"]
        for e in await env.published()
        if e.type == "command.stdout.delta" and e.payload["command_run_id"] == command_run_id
    )


async def test_output_over_the_cap_is_stored_whole_and_redacted(env: Env) -> None:
    env.redactor.register(SECRET)
    env.engine.headless_allow_ask = True
    size = 2 * LIVE_CHARS
    command = f"yes '{LINE.rstrip()}' | head -c {size}; echo tail-marker >&2"
    res = await env.registry.call("shell.run", {"command": command}, env.ctx(headless=True))
    assert res.status == "ok", res.error
    out = res.output
    assert isinstance(out, dict)
    raw = (LINE * (size // len(LINE) + 1))[:size]
    expected = env.redactor.redact(raw)
    assert SECRET not in expected
    assert REDACTED in expected
    assert len(expected) > LIVE_CHARS
    (row,) = env.rows("command_runs")
    stored = env.session.artifacts.read(row["stdout_artifact_id"]).content.decode()
    assert stored == expected  # every chunk boundary of the pipe redacted like the whole
    assert out["stdout"] == expected[-TAIL_CHARS:]
    assert out["stdout_truncated"] is True
    assert out["stdout_artifact_id"] == row["stdout_artifact_id"]
    assert out["stderr"] == "tail-marker\n"
    assert "stderr_truncated" not in out
    assert {a.artifact_id for a in res.artifacts} == {
        row["stdout_artifact_id"],
        row["stderr_artifact_id"],
    }
    live = await _deltas(env, out["command_run_id"])
    held = len(expected) - LIVE_CHARS
    assert live == expected[:LIVE_CHARS] + (
        f"\n[{held} more characters of stdout were not streamed: see its log artifact]\n"
    )


async def test_short_output_is_whole_in_the_result_and_live(env: Env) -> None:
    env.redactor.register(SECRET)
    env.engine.headless_allow_ask = True
    res = await env.registry.call(
        "shell.run", {"command": f"printf '{LINE}{LINE}'"}, env.ctx(headless=True)
    )
    assert res.status == "ok", res.error
    out = res.output
    assert isinstance(out, dict)
    expected = env.redactor.redact(LINE * 2)
    assert out["stdout"] == expected
    assert "stdout_truncated" not in out
    assert await _deltas(env, out["command_run_id"]) == expected
    assert out["stderr"] == ""
    (row,) = env.rows("command_runs")
    assert row["stderr_artifact_id"] is None


async def test_a_cancelled_command_leaves_no_partial_log(env: Env) -> None:
    env.engine.headless_allow_ask = True
    command = "yes 'some output' | head -c 300000; sleep 30"
    with trio.move_on_after(3) as scope:
        await env.registry.call("shell.run", {"command": command}, env.ctx(headless=True))
    assert scope.cancelled_caught
    assert await _deltas(env, env.payloads("command.failed")[-1]["command_run_id"])
    assert env.payloads("command.failed")[-1]["cancelled"] is True
    root = env.session.artifacts.root
    assert not root.exists() or [n for n in os.listdir(root) if n.endswith(".log")] == []
    assert not root.exists() or [n for n in os.listdir(root) if n.startswith(".tmp-")] == []
    assert env.payloads("artifact.created") == []


async def test_a_timed_out_command_keeps_its_unfinished_last_line(env: Env) -> None:
    env.redactor.register(SECRET)
    env.engine.headless_allow_ask = True
    command = f"printf 'first line\\nlast {SECRET} no newline'; sleep 30"
    res = await env.registry.call(
        "shell.run", {"command": command, "timeout_s": 2}, env.ctx(headless=True)
    )
    assert res.error is not None
    assert res.error.kind == "timeout"
    (row,) = env.rows("command_runs")
    stored = env.session.artifacts.read(row["stdout_artifact_id"]).content.decode()
    assert stored == f"first line\nlast {REDACTED} no newline"


async def test_a_secret_split_between_small_and_large_batches_is_redacted(env: Env) -> None:
    """Until the output reaches 64 KiB it is redacted on the Trio thread, then in a worker
    thread (IMPL-OUT-1): a secret cut between two small writes, across that switch, and between
    a large write and a later small one is redacted as if the output were redacted whole."""
    env.redactor.register(SECRET)
    env.engine.headless_allow_ask = True
    head, rest = SECRET[:10], SECRET[10:]
    big = 3 * 64 * 1024
    lines = f"yes '{LINE.rstrip()}' | head -c {big}"
    command = (
        f"{{ printf -- '{rest} '; {lines} | tr -d '\\n'; printf ' d\\n'; }} > /tmp/one;"
        f" {{ {lines}; printf -- 'e {head}'; }} > /tmp/two;"
        f" printf -- 'a {head}'; sleep 0.3; printf -- '{rest} b\\n';"
        f" printf -- 'c {head}'; sleep 0.3; cat /tmp/one;"
        f" cat /tmp/two; sleep 0.3; printf -- '{rest} f'"
    )
    res = await env.registry.call("shell.run", {"command": command}, env.ctx(headless=True))
    assert res.status == "ok", res.error
    block = (LINE * (big // len(LINE) + 1))[:big]
    raw = (
        f"a {SECRET} b\n" + f"c {SECRET} {block.replace(chr(10), '')} d\n" + f"{block}e {SECRET} f"
    )
    expected = env.redactor.redact(raw)
    assert expected.startswith(f"a {REDACTED} b\nc {REDACTED} ")
    assert expected.endswith(f"e {REDACTED} f")
    (row,) = env.rows("command_runs")
    stored = env.session.artifacts.read(row["stdout_artifact_id"]).content.decode()
    assert stored == expected
