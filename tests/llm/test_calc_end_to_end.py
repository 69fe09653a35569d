"""examples/calc end to end with no cassette in air: real workers, the real ProviderManager and
the real anthropic SDK / httpx against the strict local servers, which play the calc fixes as a
scripted model over the wire (air.testing.strict_servers.CassetteModel) while checking every
request the way the real APIs do, on all three wires (the Anthropic Messages API, chat
completions, and OpenAI's Responses API with gpt-6.1-sol, reasoning between tool calls), and
chat completions with DeepSeek's V4 (reasoning_content kept between tool calls), Gemini 3.8
(each reply's first call signed) and Gemini 3 behind OpenRouter (reasoning_details kept
merged). Exit 0, the project's tests pass, 0 rejected requests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import StrictServer
from tests.headless import json_events, run_batch_json
from tests.trusted import trust_project

EXAMPLE = Path(__file__).parents[2] / "examples" / "calc"
KEY = "zq81-e2e-key-7d0c1b5a9e3f4b2d8c6a1e0f9b7d5c3a"

MODELS = {
    "anthropic": (
        "default: anthropic/claude-sonnet-4-5\n"
        "providers:\n"
        "  anthropic:\n"
        "    kind: anthropic\n"
        "    base_url: {url}\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      claude-sonnet-4-5: {{context_window: 200000, max_output_tokens: 64000}}\n"
    ),
    "openai": (
        "default: openai/gpt-4.1\n"
        "providers:\n"
        "  openai:\n"
        "    kind: openai_compatible\n"
        "    base_url: {url}/v1\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      gpt-4.1: {{context_window: 1047576, max_output_tokens: 32768}}\n"
    ),
    "deepseek": (
        "default: deepseek/deepseek-v4-pro\n"
        "providers:\n"
        "  deepseek:\n"
        "    kind: openai_compatible\n"
        "    base_url: {url}/v1\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      deepseek-v4-pro:\n"
        "        context_window: 1000000\n"
        "        max_output_tokens: 65536\n"
        "        price: {{input: 0.5, output: 2.0, cache_read: 0.05}}\n"
    ),
    "gemini": (
        "default: gemini/gemini-3.8-flash\n"
        "providers:\n"
        "  gemini:\n"
        "    kind: openai_compatible\n"
        "    base_url: {url}/v1\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      gemini-3.8-flash:\n"
        "        context_window: 1048576\n"
        "        max_output_tokens: 65536\n"
        "        price: {{input: 0.3, output: 2.5, cache_read: 0.03}}\n"
    ),
    "openrouter": (
        "default: openrouter/google/gemini-3-flash-preview\n"
        "providers:\n"
        "  openrouter:\n"
        "    kind: openai_compatible\n"
        "    base_url: {url}/api/v1\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      google/gemini-3-flash-preview:\n"
        "        context_window: 1048576\n"
        "        max_output_tokens: 65536\n"
        "        price: {{input: 0.5, output: 3.0, cache_read: 0.05}}\n"
    ),
    "responses": (
        "default: openai/gpt-6.1-sol\n"
        "providers:\n"
        "  openai:\n"
        "    kind: openai_compatible\n"
        "    base_url: {url}/v1\n"
        "    auth_ref: AIR_E2E_KEY\n"
        "    models:\n"
        "      gpt-6.1-sol: {{}}\n"
    ),
}
CEILINGS = {
    "claude-sonnet-4-5": 64_000,
    "gpt-4.1": 32_768,
    "gpt-6.1-sol": 128_000,
    "deepseek-v4-pro": 65_536,
    "gemini-3.8-flash": 65_536,
    "google/gemini-3-flash-preview": 65_536,
}


def _unittest(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "wire", ["anthropic", "openai", "responses", "deepseek", "gemini", "openrouter"]
)
def test_calc_batch_against_the_strict_server(wire: str, tmp_path: Path) -> None:
    root = tmp_path / "calc"
    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
    scripts = tmp_path / "scripts"
    shutil.move(root / "cassettes", scripts)  # the model's script lives with the server only
    assert _unittest(root).returncode != 0
    model = CassetteModel(scripts)
    with StrictServer(api_key=KEY, ceilings=CEILINGS, model=model) as server:
        (root / ".air" / "shared").mkdir(parents=True)
        (root / ".air" / "shared" / "models.yaml").write_text(MODELS[wire].format(url=server.url))
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "air.cli",
                "run",
                "--headless",
                str(root / "batch.yaml"),
                "--project",
                str(root),
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        rejected = list(server.rejected)
        requests = list(server.requests)
    assert rejected == [], [r.problem for r in rejected]
    assert proc.returncode == 0, proc.stderr
    assert "completed: done 3/3" in proc.stderr
    assert _unittest(root).returncode == 0
    # every turn of every cassette was played over the wire, once
    assert sorted(model.served) == sorted(
        (task, n) for task in ("fix-tokenizer", "fix-evaluator", "changelog") for n in range(4)
    )
    assert len(requests) == 12
    sent = json.dumps([r.body for r in requests])
    assert "fs.read" not in sent
    assert "fs_read" in sent
    if wire == "responses":
        _assert_reasoning_replayed([r.body for r in requests])
    if wire == "deepseek":
        _assert_reasoning_content_replayed([r.body for r in requests])
        assert "(thinking about" not in proc.stdout + proc.stderr  # never shown
    if wire == "gemini":
        signed = [
            m["tool_calls"][0]["extra_content"]["google"]["thought_signature"]
            for r in requests
            for m in r.body["messages"]
            if m.get("tool_calls")
        ]
        assert len(signed) >= 9  # every earlier call of a task came back signed
    if wire == "openrouter":
        _assert_details_replayed([r.body for r in requests])
        assert "(thinking about" not in proc.stdout + proc.stderr  # never shown
    events = json_events(proc.stdout)
    completed = [e for e in events if e["type"] == "task.completed"]
    assert len(completed) == 3
    _assert_prompt_caching(wire, requests, completed)


def _assert_prompt_caching(wire: str, requests: list[Any], completed: list[dict[str, Any]]) -> None:
    """Anthropic: from the second request of a task on, the last tool, the system prompt and
    the conversation so far carry cache breakpoints, and the ledger (each task's usage) counts
    the cached input tokens the server reported. OpenAI caches by itself: the same count."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        if wire == "responses":
            first = r.body["input"][0]["content"]
        else:
            first = r.body["messages"][0 if wire == "anthropic" else 1]["content"]
        text = first if isinstance(first, str) else first[0]["text"]
        by_task.setdefault(text, []).append(r.body)
    for bodies in by_task.values():
        second = bodies[1]
        if wire == "anthropic":
            marked = [
                b
                for b in [*second["system"], *second["tools"]]
                + [b for m in second["messages"] for b in m["content"]]
                if "cache_control" in b
            ]
            assert marked == [
                second["system"][-1],
                second["tools"][-1],
                second["messages"][-1]["content"][-1],
            ]
    for event in completed:
        usage = event["payload"]["worker_result"]["usage"]
        assert usage["cache_read_tokens"] > 0, usage
        assert usage["cost_usd"] is not None
        assert usage["cost_usd"] > 0


def _assert_reasoning_replayed(bodies: list[dict[str, Any]]) -> None:
    """Each earlier turn of a task is replayed as its reasoning item (with its encrypted
    content) and then the items that followed it, carrying their ids: the reasoning is kept
    between tool calls, at the API's default effort (the catalogue sets none)."""
    for body in bodies:
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert "reasoning" not in body
        items = body["input"]
        for k, item in enumerate(items):
            if item["type"] == "reasoning":
                assert item["encrypted_content"].startswith("gAAAA")
                assert items[k + 1]["type"] in ("message", "function_call")
                assert items[k + 1]["id"]
            elif item["type"] == "function_call" or item.get("role") == "assistant":
                assert items[k - 1]["type"] not in ("function_call_output",)
                assert items[k - 1].get("role") != "user"
    assert max(sum(i["type"] == "reasoning" for i in b["input"]) for b in bodies) == 3


def _assert_reasoning_content_replayed(bodies: list[dict[str, Any]]) -> None:
    """Every earlier turn of a task goes back with the reasoning_content it came with (DeepSeek
    refuses a tool-call turn without it), as it came."""
    turns = [m for b in bodies for m in b["messages"] if m["role"] == "assistant"]
    assert turns
    for turn in turns:
        assert turn["reasoning_content"].startswith("(thinking about "), turn


def _assert_details_replayed(bodies: list[dict[str, Any]]) -> None:
    """Every earlier turn of a task goes back with its reasoning_details as merged: one text
    (the pieces it streamed in) and, on a turn that called a tool, that call's signature."""
    turns = [m for b in bodies for m in b["messages"] if m["role"] == "assistant"]
    assert len(turns) == 18  # 3 tasks, 4 requests each: 0 + 1 + 2 + 3 earlier turns
    for turn in turns:
        kinds = [d["type"] for d in turn["reasoning_details"]]
        assert (
            kinds == ["reasoning.text", "reasoning.encrypted"][: 1 + bool(turn.get("tool_calls"))]
        )
        assert turn["reasoning_details"][0]["text"].startswith("(thinking about "), turn


def test_a_refused_request_reaches_the_user_once(tmp_path: Path) -> None:
    """A 404 (unknown model) is neither retried by the manager nor by the scheduler; the API's
    error.message is on stderr, in the --json stream and in the task's error."""
    root = tmp_path / "proj"
    home = tmp_path / "home"
    home.mkdir()
    (root / ".air" / "shared").mkdir(parents=True)
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: look\n    type: review\n    title: Look\n"
        "    description: Say hello.\n    constraints: {retry_budget: 3}\n"
    )
    with StrictServer(api_key=KEY, ceilings=CEILINGS) as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            MODELS["anthropic"].format(url=server.url).replace("claude-sonnet-4-5", "claude-nope")
        )
        trust_project(root, home)
        env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
        proc = run_batch_json(root, env)
        requests = list(server.requests)
    assert proc.returncode == 1, proc.stderr
    assert len(requests) == 1
    assert "model: claude-nope" in proc.stderr
    events = json_events(proc.stdout)
    ended = [e for e in events if e["type"] in ("task.failed", "task.blocked")]
    assert ended
    assert "model: claude-nope" in json.dumps(ended[-1]["payload"])
    assert not [e for e in events if e["type"] == "task.started"][1:]


def _trail(stdout: str) -> dict[str, list[tuple[str, str]]]:
    """Per task, the durable events in order: type and tool or command (ids and times left out)."""
    trail: dict[str, list[tuple[str, str]]] = {}
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event["type"] == "air.summary":
            continue  # the run's closing summary record, not an event
        payload = event["payload"]
        task = payload.get("task_id") or (payload.get("task_spec") or {}).get("id")
        if not task or event["type"].endswith(("heartbeat", "delta", "progress")):
            continue
        what = str(payload.get("tool_name") or payload.get("command") or "")
        trail.setdefault(task, []).append((event["type"], what))
    return trail


@pytest.mark.slow
def test_record_then_replay_offline_gives_the_same_trail(tmp_path: Path) -> None:
    """`air run --record DIR` against the strict server writes per-task cassettes;
    `air run --cassette DIR` in a fresh copy replays them with no server to the same trail."""
    recorded, replayed, home = tmp_path / "recorded", tmp_path / "replayed", tmp_path / "home"
    home.mkdir()
    for root in (recorded, replayed):
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".air"))
        shutil.rmtree(root / "cassettes")
    record_dir = tmp_path / "tape"
    record_dir.mkdir()
    victim = tmp_path / "victim.txt"  # links a cloned repository (or a task) put there
    victim.write_text("the user's own file\n")
    for name in ("changelog.jsonl", "fix-evaluator.jsonl"):
        (record_dir / name).symlink_to(victim)
    env = {**os.environ, "HOME": str(home), "AIR_E2E_KEY": KEY}
    with StrictServer(
        api_key=KEY, ceilings=CEILINGS, model=CassetteModel(EXAMPLE / "cassettes")
    ) as server:
        (recorded / ".air" / "shared").mkdir(parents=True)
        (recorded / ".air" / "shared" / "models.yaml").write_text(
            MODELS["openai"].format(url=server.url)
        )
        trust_project(recorded, home)
        first = run_batch_json(recorded, env, "--record", str(record_dir), timeout=300)
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in record_dir.iterdir()) == [
        "changelog.jsonl",
        "fix-evaluator.jsonl",
        "fix-tokenizer.jsonl",
    ]
    assert KEY not in "".join(p.read_text() for p in record_dir.iterdir())
    assert victim.read_text() == "the user's own file\n"  # the links replaced, not written
    assert not any(p.is_symlink() for p in record_dir.iterdir())
    second = run_batch_json(
        replayed, {**env, "AIR_E2E_KEY": ""}, "--cassette", str(record_dir), timeout=300
    )
    assert second.returncode == 0, second.stderr
    assert _unittest(replayed).returncode == 0
    assert _trail(second.stdout) == _trail(first.stdout)
    assert len(_trail(first.stdout)["fix-tokenizer"]) > 5
    # both runs count every model call in the usage ledger (IMPL-USAGE-1): the recorded one
    # each request the server answered, the replay the same calls with the same tokens
    calls = [
        [
            (e["payload"]["task_id"], e["payload"]["input_tokens"])
            for e in json_events(run.stdout)
            if e["type"] == "model.usage.recorded"
        ]
        for run in (first, second)
    ]
    assert len(calls[0]) == len(server.requests)
    assert sorted(calls[1]) == sorted(calls[0])
