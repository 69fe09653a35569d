"""Named agent files (IMPL-AGENTFILE-1, -2): where they are, what they hold, what is skipped,
what a file gives a task, and that every use reads the directories again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.runtime import AgentType
from air.contracts.task import TaskAgent, TaskSpec, TaskType
from air.nursery.agent_tools import check_agent_tools, role_tools
from air.session.agent_files import (
    MAX_AGENT_BYTES,
    agent_overlay,
    find_agent,
    parse_agent,
    scan_agents,
)
from air.session.trust import trust_scan
from tests.trusted import trust_project

STRICT = """---
description: A strict reviewer
role: reviewer
model: local/qwen
tools: [fs.read, fs.search]
max_turns: 5
hard_timeout_ms: 60000
max_cost_usd: 0.5
---
You are strict. MARK-PERSONA.
"""


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "agents").mkdir(parents=True)
    (home / ".air" / "agents").mkdir(parents=True)
    return root, home


def test_a_file_is_frontmatter_and_persona() -> None:
    agent = parse_agent(STRICT, "/x/strict.md", "strict", "project")
    assert agent.front.role == "reviewer"
    assert agent.front.tools == ["fs.read", "fs.search"]
    assert agent.persona == "You are strict. MARK-PERSONA."
    overlay = agent_overlay(agent)
    assert overlay == {
        "type": "review",
        "constraints": {
            "model_id": "local/qwen",
            "max_turns": 5,
            "hard_timeout_ms": 60000,
            "max_cost_usd": 0.5,
        },
    }
    assert agent.task_agent().tools == ["fs.read", "fs.search"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nrole: reviewer\nallow_network: true\n---\nx\n", "allow_network"),
        ("---\nrole: boss\n---\nx\n", "role"),
        ("---\nrole: reviewer\nno closing line\n", "no closing ---"),
        ("---\n- a list\n---\nx\n", "a mapping"),
        ("---\ntools: fs.read\n---\nx\n", "tools"),
    ],
)
def test_a_bad_frontmatter_is_refused_naming_the_file(text: str, reason: str) -> None:
    with pytest.raises(AirException) as caught:
        parse_agent(text, "/x/a.md", "a", "user")
    assert caught.value.kind == "validation_error"
    assert "/x/a.md" in caught.value.error.message
    assert reason in caught.value.error.message
    assert caught.value.user_action


def test_project_files_hide_the_users_and_each_call_reads_again(dirs: tuple[Path, Path]) -> None:
    root, home = dirs
    (home / ".air" / "agents" / "strict.md").write_text("---\nrole: debugger\n---\nuser's\n")
    (home / ".air" / "agents" / "helper.md").write_text("helps\n")
    assert find_agent("strict", str(root), home=str(home))[0].source == "user"
    (root / ".air" / "agents" / "strict.md").write_text(STRICT)
    trust_project(root, home)
    agent, _ = find_agent("strict", str(root), home=str(home))
    assert (agent.source, agent.front.role) == ("project", "reviewer")
    catalog = scan_agents(str(root), home=str(home))
    assert sorted(catalog.agents) == ["helper", "strict"]
    assert catalog.agents["strict"].source == "project"
    assert catalog.agents["helper"].persona == "helps"
    # a file added now (mid-session) is seen at its first use: nothing is cached
    (home / ".air" / "agents" / "late.md").write_text("late\n")
    assert find_agent("late", str(root), home=str(home))[0].persona == "late"


def test_links_and_large_files_are_skipped_with_a_warning(dirs: tuple[Path, Path]) -> None:
    root, home = dirs
    agents = home / ".air" / "agents"
    (home / "elsewhere.md").write_text("---\nrole: executor\n---\nfrom a link\n")
    os.symlink(home / "elsewhere.md", agents / "linked.md")
    (agents / "big.md").write_text("x" * (MAX_AGENT_BYTES + 1))
    (agents / "ok.md").write_text("fine\n")
    catalog = scan_agents(str(root), home=str(home))
    assert sorted(catalog.agents) == ["ok"]
    text = "\n".join(catalog.warnings)
    assert "linked.md: is a symbolic link" in text
    assert f"big.md: is {MAX_AGENT_BYTES + 1:,} bytes, more than the 64.0 KiB air reads" in text
    for name in ("linked", "big"):
        with pytest.raises(AirException) as caught:
            find_agent(name, str(root), home=str(home))
        assert caught.value.kind == "not_found"
        assert "skipped" in caught.value.error.message


def test_a_project_file_is_used_only_while_the_project_is_trusted(
    dirs: tuple[Path, Path],
) -> None:
    root, home = dirs
    (root / ".air" / "agents" / "strict.md").write_text(STRICT)
    assert any(f.file == ".air/agents/strict.md" for f in trust_scan(str(root)).findings)
    with pytest.raises(AirException) as caught:
        find_agent("strict", str(root), home=str(home))
    assert caught.value.kind == "untrusted_config"
    assert ".air/agents/strict.md" in caught.value.error.message
    # shown (air agents show) but not used
    assert find_agent("strict", str(root), home=str(home), use=False)[0].name == "strict"
    trust_project(root, home)
    assert find_agent("strict", str(root), home=str(home))[0].source == "project"
    # a second file after the trust makes the set untrusted again, for every project file
    (root / ".air" / "agents" / "other.md").write_text("other\n")
    with pytest.raises(AirException) as again:
        find_agent("strict", str(root), home=str(home))
    assert again.value.kind == "untrusted_config"


def test_a_link_in_the_agents_directory_does_not_break_the_trust_scan(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    root, _home = dirs
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n")
    os.symlink(outside, root / ".air" / "agents" / "out.md")
    assert trust_scan(str(root)).files == ()  # never read, so nothing to trust


def _spec(task_type: TaskType, tools: list[str]) -> TaskSpec:
    agent = TaskAgent(name="a", source="user", path="/x/a.md", tools=tools)
    return TaskSpec(id="t", type=task_type, title="t", description="t", agent=agent)


def test_tools_only_narrow_the_roles_tools() -> None:
    assert "fs.write" in role_tools(AgentType.EXECUTOR)
    assert "fs.write" not in role_tools(AgentType.REVIEWER)
    assert "git.commit" not in role_tools(AgentType.REVIEWER)
    check_agent_tools(_spec(TaskType.REVIEW, ["fs.read", "shell.run"]), "/x/a.md")
    check_agent_tools(_spec(TaskType.EXECUTE, ["fs.write"]), "/x/a.md")
    for task_type, tool, why in (
        (TaskType.REVIEW, "fs.write", "is not a tool of the reviewer"),
        (TaskType.EXECUTE, "net.fetch", "is not a tool air knows"),
    ):
        with pytest.raises(AirException) as caught:
            check_agent_tools(_spec(task_type, ["fs.read", tool]), "/x/a.md")
        assert caught.value.kind == "validation_error"
        assert f"{tool!r} {why}" in caught.value.error.message
        assert "fs.read" in (caught.value.user_action or "")
