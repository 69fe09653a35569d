"""What a model's command costs the parent is bounded: the analysis of a command with more syntax
nodes than ``MAX_NODES`` is opaque without walking them (8,000 commands in one pipeline held the
Trio thread 3 s, a 4 MB one would have held it for minutes), and ``shell.run`` takes no command
longer than Linux lets bash be given (``MAX_ARG_STRLEN``): refused before it is analyzed."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from air.contracts.permission import CommandCategory
from air.security.command_words import MAX_NODES
from air.security.commands import CommandRiskAnalyzer
from air.tools.shell import COMMAND_MAX
from tests.tools.conftest import Env


def test_a_command_of_too_many_nodes_is_opaque_and_never_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analyzer = CommandRiskAnalyzer()
    small = " | ".join(["cat"] * 100)
    assert analyzer.analyze(small).category is CommandCategory.READ_ONLY

    def walked(*args: object) -> None:
        raise AssertionError("the walk ran")

    monkeypatch.setattr(CommandRiskAnalyzer, "_walk", walked)
    for long in (" | ".join(["cat"] * MAX_NODES), "; ".join(["echo a"] * MAX_NODES)):
        analysis = analyzer.analyze(long)
        assert analysis.category is CommandCategory.OPAQUE
        assert "too long to analyze" in analysis.reason
    # a heredoc's body is one node however long: still analyzed
    monkeypatch.undo()
    heredoc = "cat <<EOF\n" + "line\n" * (4 * MAX_NODES) + "EOF\n"
    assert analyzer.analyze(heredoc).category is CommandCategory.READ_ONLY


def test_invisible_characters_are_still_found_in_a_printable_looking_command() -> None:
    analyzer = CommandRiskAnalyzer()
    for hidden in ("\u202e", "\x1b", "\ue000", "\u200b"):
        analysis = analyzer.analyze(f"echo ok {'x' * 1000}{hidden} && ls\n\tpwd")
        assert analysis.category is CommandCategory.OPAQUE, hidden
        assert f"U+{ord(hidden):04X}" in analysis.reason


def test_bash_takes_exactly_the_longest_command_air_accepts() -> None:
    """The bound is Linux's, measured here: the longest argument bash gets, and one byte more."""
    fits = subprocess.run(
        ["/bin/bash", "-c", 'echo "${#1}"', "air", "x" * COMMAND_MAX],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fits.stdout == f"{COMMAND_MAX}\n"
    with pytest.raises(OSError, match="Argument list too long"):
        subprocess.run(["/bin/bash", "-c", "true", "air", "x" * (COMMAND_MAX + 1)], check=False)


async def test_shell_run_refuses_a_command_longer_than_bash_takes(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyzed: list[int] = []
    analyze = CommandRiskAnalyzer.analyze

    def counted(self: CommandRiskAnalyzer, command: str, cwd: str | None = None) -> Any:
        analyzed.append(len(command))
        return analyze(self, command, cwd)

    monkeypatch.setattr(CommandRiskAnalyzer, "analyze", counted)
    env.engine.headless_allow_ask = True
    ctx = env.ctx(headless=True)
    longest = "echo fits #" + "x" * (COMMAND_MAX - len("echo fits #"))
    done = await env.registry.call("shell.run", {"command": longest}, ctx)
    assert done.status == "ok", done.error
    assert isinstance(done.output, dict)
    assert done.output["stdout"] == "fits\n"
    for command in ("echo no #" + "x" * COMMAND_MAX, "echo no #" + "é" * (COMMAND_MAX // 2)):
        refused = await env.registry.call("shell.run", {"command": command}, ctx)
        assert refused.status == "error"
        assert refused.error is not None
        assert refused.error.kind == "validation_error", refused.error
    assert len(env.rows("command_runs")) == 1  # only the one that fits ran
    assert max(analyzed) < COMMAND_MAX + 1  # the longer one refused before its analysis
