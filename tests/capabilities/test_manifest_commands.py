"""A project or user capability's tools run a declared command (IMPL-CAP-1): the manifest
must declare it with known placeholders, and each input fills one shell word."""

from __future__ import annotations

import shlex
from typing import Any

from air.capabilities.command_template import fill, read_template
from air.capabilities.registry import CapabilityManifestValidator
from air.contracts.capability import CapabilityTrust


def _manifest(tool: dict[str, Any], trust: CapabilityTrust) -> dict[str, Any]:
    base = {
        "name": "lines.count",
        "description": "count",
        "category": "project",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    return {
        "capability_id": "lines",
        "name": "lines",
        "version": "1",
        "trust": trust.value,
        "tools": [{**base, **tool}],
    }


def test_a_project_tool_needs_a_command_with_known_placeholders() -> None:
    check = CapabilityManifestValidator(frozenset({"cpp"})).validate
    ok = check(_manifest({"command": "wc -l {path}"}, CapabilityTrust.PROJECT_LOCAL))
    assert ok.ok, ok.errors
    missing = check(_manifest({}, CapabilityTrust.USER_INSTALLED))
    assert not missing.ok
    assert "needs a `command`" in missing.errors[0]
    unknown = check(_manifest({"command": "wc -l {file}"}, CapabilityTrust.UNTRUSTED))
    assert unknown.errors == ["tools[0]: command placeholder {file} is not an input property"]


def test_an_input_fills_one_shell_word() -> None:
    template = "wc -l {path} {absent}"
    command = fill(template, read_template(template)[0], {"path": "a b; rm -rf ~ $(id)"})
    assert shlex.split(command) == ["wc", "-l", "a b; rm -rf ~ $(id)", ""]
