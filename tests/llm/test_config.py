"""models.yaml loading and merging, bad files named with file and field, model selection,
usage accounting, the SSE decoder, and the read-only ``air provider`` commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.provider import ModelRequirement, Usage
from air.llm.manager import ProviderManager
from air.llm.sse import SSEDecoder
from air.llm.usage import UsageAccumulator
from tests.llm.conftest import FAKE_KEY
from tests.trusted import trust_project

REPO = Path(__file__).resolve().parents[2]

HOME_YAML = """
version: 1
default: claude/sonnet
retry: {max_attempts: 4, base_delay_s: 0.01}
providers:
  claude:
    kind: anthropic
    auth_ref: AIR_TEST_KEY
    models:
      sonnet: {context_window: 200000, max_output_tokens: 64000, tier: large,
               price: {input: 3, output: 15, cache_write: 3.75, cache_read: 0.3}}
      haiku: {context_window: 200000, max_output_tokens: 8192, tier: small,
              price: {input: 1, output: 5}}
  local:
    kind: openai_compatible
    base_url: http://127.0.0.1:9/v1
    models:
      qwen: {context_window: 32768, max_output_tokens: 4096, tier: small}
"""

PROJECT_YAML = """
default: local/qwen
roles: {executor: claude/haiku}
providers:
  replay:
    kind: scripted
    cassette: cassettes/task1.jsonl
    models: {scripted: {supports_tools: true}}
"""


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_home_and_project_files_merge(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    _write(home, ".air/models.yaml", HOME_YAML)
    _write(project, ".air/shared/models.yaml", PROJECT_YAML)
    config = ProviderManager.load_config(str(project), home=str(home), project_trusted=True)
    assert config.default == "local/qwen"  # project wins
    assert config.retry.max_attempts == 4  # kept from home
    assert set(config.providers) == {"claude", "local", "replay"}
    assert config.providers["replay"].cassette == str(project / ".air/shared/cassettes/task1.jsonl")
    assert len(config.sources) == 2


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("providers:\n  x: {kind: warp}\n", "providers.x.kind"),
        (
            "providers:\n  x: {kind: anthropic, models: {m: {context_window: lots}}}\n",
            "providers.x.models.m.context_window",
        ),
        ("retry: {max_attempts: 0}\n", "retry.max_attempts"),
        ("default: nope/none\n", "default"),
        ("escalation: [nope/none]\n", "escalation[0]"),
        ("providers: [1, 2\n", "line"),
        ("surprise: 1\n", "surprise"),
    ],
)
def test_bad_file_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = _write(tmp_path, ".air/models.yaml", text)
    with pytest.raises(AirException) as info:
        ProviderManager.load_config(None, home=str(tmp_path))
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    assert str(path) in str(info.value)
    assert field in str(info.value)
    assert info.value.user_action


def test_select_model_order(tmp_path: Path) -> None:
    _write(tmp_path, ".air/models.yaml", HOME_YAML)
    manager = ProviderManager(ProviderManager.load_config(None, home=str(tmp_path)))
    assert manager.select_model(ModelRequirement()).model_id == "sonnet"
    assert manager.select_model(ModelRequirement()).reason == "default"
    explicit = manager.select_model(ModelRequirement(model="local/qwen"))
    assert (explicit.provider_id, explicit.reason) == ("local", "explicit")
    matched = manager.select_model(ModelRequirement(min_context_window=100_000, tier="small"))
    assert (matched.model_id, matched.reason) == ("haiku", "matched")
    with pytest.raises(AirException) as info:
        manager.select_model(ModelRequirement(min_context_window=1_000_000))
    assert info.value.kind is ErrorKind.CONFIG_ERROR
    with pytest.raises(AirException, match="context window"):
        manager.select_model(ModelRequirement(model="local/qwen", min_context_window=100_000))


def test_usage_accumulates_per_session_task_agent() -> None:
    acc = UsageAccumulator()
    acc.add(
        Usage(input_tokens=10, output_tokens=2, cost_usd=0.5),
        session_id="s",
        task_id="t1",
        agent_id="a",
    )
    acc.add(
        Usage(input_tokens=5, cache_read_input_tokens=7, cost_usd=0.25),
        session_id="s",
        task_id="t2",
        agent_id="a",
    )
    assert acc.for_session("s").input_tokens == 15
    assert acc.for_session("s").cost_usd == pytest.approx(0.75)
    assert acc.for_task("t2").cache_read_input_tokens == 7
    assert acc.for_agent("a") == acc.total
    assert acc.for_task("unknown").input_tokens == 0
    assert acc.calls == 2


def test_sse_decoder_handles_split_lines_crlf_and_comments() -> None:
    decoder = SSEDecoder()
    stream = b': keepalive\r\nevent: a\r\ndata: {"x":\r\ndata: 1}\r\n\r\ndata: second\n\n'
    events = []
    for i in range(len(stream)):
        events.extend(decoder.feed(stream[i : i + 1]))
    events.extend(decoder.close())
    assert events == [("a", '{"x":\n1}'), ("message", "second")]


def _cli(home: Path, cwd: Path, fn: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "AIR_TEST_KEY": FAKE_KEY, "PYTHONPATH": str(REPO)}
    code = f"import sys; from air.cli.provider import {fn}; sys.exit({fn}({str(cwd)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_provider_list_and_current_commands(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    _write(home, ".air/models.yaml", HOME_YAML)
    _write(project, ".air/shared/models.yaml", PROJECT_YAML)
    trust_project(project, home)
    listed = _cli(home, project, "run_provider_list")
    assert listed.returncode == 0, listed.stderr
    assert "claude/sonnet" in listed.stdout
    assert "replay/scripted" in listed.stdout
    assert "* local/qwen" in listed.stdout
    assert "AIR_TEST_KEY (set)" in listed.stdout
    assert FAKE_KEY not in listed.stdout + listed.stderr
    current = _cli(home, project, "run_provider_current")
    assert current.returncode == 0, current.stderr
    assert "default: local/qwen" in current.stdout
    assert "role executor: claude/haiku" in current.stdout


def test_importing_the_provider_path_loads_neither_anthropic_nor_httpx() -> None:
    code = (
        "import sys, air.llm, air.llm.manager, air.cli.provider; "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('anthropic', 'httpx', 'httpx2')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "[]"
