"""A capability command's inputs are words, never shell and never options (IMPL-CAP-2).

The model chooses a capability tool's inputs; the user approved only the command around them.
Each template shape the manifest check refuses is first shown to run the model's code in a
real bash when filled the plain way (each input shell-quoted into its placeholder); a template
it accepts gives the program each input as the one word it stands for, for any text. An input
that would start a word with ``-`` is an option of the program (``grep --version``): refused
through the real ToolRegistry before anyone is asked, unless ``--`` ends the options first.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.capabilities.command_template import OptionInput, fill, read_template
from air.capabilities.command_tools import command_registrar
from air.capabilities.registry import CapabilityManifestValidator
from air.contracts.capability import CapabilityTrust
from air.contracts.permission import PermissionGrantScope
from air.contracts.permission_records import PermissionPromptResponse
from air.contracts.tool import ToolDefinition
from tests.tools.conftest import Env
from tests.tools.test_prompts_and_git import ScriptedBroker

# (template, an input that runs `touch MARK` when filled the plain way, what the check says)
INJECTED = [
    ('printf %s "{p}"', '"; touch MARK; "', "inside quotes"),
    ("printf %s $'{p}'", "x; touch MARK; #", "inside quotes"),
    ("printf %s \\{p}", "x; touch MARK; #", "after a backslash"),
    ("printf %s ${p}", "\\'\"; touch MARK; #", "after a `$`"),
    ("printf %s x # {p}", "a\ntouch MARK\n", "in a comment"),
    ("cat <<E\n{p}\nE", "$(touch MARK)", "after a here-document"),
    ("((x={p}))", "a[$(touch MARK)]", "after `((`"),
    ("[[ {p} -eq 1 ]]", "a[$(touch MARK)]", "after `((`, `$[` or `[[`"),
    ("x=$[{p}]", "a[$(touch MARK)]", "after `((`, `$[` or `[[`"),
    ("a[{p}]=1", "$(touch MARK)", "in an array subscript"),
]


def _bash(command: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", command], cwd=cwd, capture_output=True, timeout=10
    )


def _manifest(command: str) -> dict[str, Any]:
    return {
        "capability_id": "probe",
        "name": "probe",
        "version": "1",
        "trust": CapabilityTrust.PROJECT_LOCAL.value,
        "tools": [
            {
                "name": "probe.run",
                "description": "probe",
                "category": "project",
                "input_schema": {
                    "type": "object",
                    "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
                },
                "command": command,
            }
        ],
    }


@pytest.mark.parametrize(("template", "value", "why"), INJECTED)
def test_a_placeholder_bash_reads_as_code_is_refused(
    template: str, value: str, why: str, tmp_path: Path
) -> None:
    _bash(template.replace("{p}", shlex.quote(value)), tmp_path)
    assert (tmp_path / "MARK").exists(), "filled the plain way, the input ran as code"
    result = CapabilityManifestValidator(frozenset()).validate(_manifest(template))
    assert not result.ok
    assert any("placeholder {p} is " + why in e for e in result.errors), result.errors


@pytest.mark.parametrize(
    "template",
    ["printf %s '{p}'", "printf %s 'never closed {p}", 'printf %s "a\\"b" "{p}"'],
)
def test_quotes_are_read_as_bash_reads_them(template: str) -> None:
    result = CapabilityManifestValidator(frozenset()).validate(_manifest(template))
    assert any("inside quotes" in e for e in result.errors), result.errors


ACCEPTED = [
    ("printf '%s\\0' {p}", lambda v: [v]),
    ("printf '%s\\0' x{p} --file={q}", lambda v: ["x" + v, "--file=" + v]),
    ("printf '%s\\0' {p}{q}", lambda v: [v + v]),
    ("printf '%s\\0' -- {p} && printf '%s\\0' done", lambda v: ["--", v, "done"]),
    ("cat <<< {p}; printf '\\0'", lambda v: [v + "\n"]),
    ("X={p} printenv X; printf '\\0' # a comment", lambda v: [v + "\n"]),
]


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(ACCEPTED),
    value=st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00")),
)
def test_an_accepted_template_gives_each_input_as_one_word(case: Any, value: str) -> None:
    template, words = case
    assert CapabilityManifestValidator(frozenset()).validate(_manifest(template)).ok
    slots, problems = read_template(template)
    assert problems == []
    try:
        command = fill(template, slots, {"p": value, "q": value})
    except OptionInput:
        assert value.startswith("-")
        assert slots[0].option_word
        return
    done = _bash(command, Path("/"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split("\0")[:-1] == words(value)


def _definition() -> ToolDefinition:
    return ToolDefinition.model_validate(
        {
            "name": "notes.count",
            "description": "Count the lines of notes.txt that match a pattern.",
            "category": "project",
            "input_schema": {
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "n": {"type": "integer"}},
            },
        }
    )


async def test_an_input_that_would_be_an_option_is_refused_before_anyone_is_asked(
    tmp_path: Path,
) -> None:
    allow = PermissionPromptResponse(approved=True, scope=PermissionGrantScope.ONCE)
    person = ScriptedBroker(allow, allow, allow)
    env = Env(tmp_path, prompts=person)
    try:
        (env.root / "notes.txt").write_text("alpha\n-v\nbeta\n")
        commands = {"notes.count": "grep -c {pattern} notes.txt"}
        command_registrar(commands, env.runner)(env.registry, [_definition()])
        refused = await env.registry.call("notes.count", {"pattern": "--version"}, env.ctx())
        assert refused.status == "error"
        assert refused.error is not None
        assert refused.error.kind.value == "validation_error"
        assert "{pattern} starts with '-'" in refused.error.message
        assert person.asked == []
        assert "permission.decision.recorded" not in env.types()
        assert "command.started" not in env.types()

        counted = await env.registry.call("notes.count", {"pattern": "a"}, env.ctx())
        assert counted.status == "ok", counted.error
        assert len(person.asked) == 1
        (started,) = env.payloads("command.started")
        assert started["command"] == "grep -c a notes.txt"
    finally:
        env.close()


async def test_after_a_double_dash_or_inside_a_word_a_dash_is_the_input_itself(
    tmp_path: Path,
) -> None:
    allow = PermissionPromptResponse(approved=True, scope=PermissionGrantScope.ONCE)
    person = ScriptedBroker(allow, allow)
    env = Env(tmp_path, prompts=person)
    try:
        (env.root / "notes.txt").write_text("alpha\n-v\nbeta\n")
        definition = _definition()
        other = definition.model_copy(update={"name": "notes.head"})
        commands = {
            "notes.count": "grep -c -- {pattern} notes.txt",
            "notes.head": "head -n {n} notes.txt",
        }
        command_registrar(commands, env.runner)(env.registry, [definition, other])
        counted = await env.registry.call("notes.count", {"pattern": "-v"}, env.ctx())
        assert counted.status == "ok", counted.error
        head = await env.registry.call("notes.head", {"n": -1}, env.ctx())
        assert head.status == "ok", head.error  # a number is no option however it is signed
        commands_run = [p["command"] for p in env.payloads("command.started")]
        assert commands_run == ["grep -c -- -v notes.txt", "head -n -1 notes.txt"]
        assert len(person.asked) == 2
    finally:
        env.close()
