"""Permission policy files: ``~/.air/permissions.yaml``, ``<project>/.air/shared/permissions.yaml``.

Owns ``PolicyRule``, ``PermissionPolicy`` and ``load_policy``. A file holds a list of rules::

    headless_allow_ask: false   # true: headless runs take `ask` actions (never sensitive ones)
    rules:
      - action: deny               # allow | ask | deny; deny wins over everything
        tool: "fs.*"               # fnmatch on the tool name (optional)
        path: "secrets/**"         # glob relative to the project, absolute, or ~/... (optional)
        command: "git push*"       # fnmatch on one command segment's text (optional)
        category: network          # a command category (optional)
        sensitive: false           # an allow must say true to cover credentials/system paths

A rule matches when every field it names matches. Bad files raise ``AirException(config_error)``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

import yaml

from air.contracts.error import AirException, ErrorKind
from air.contracts.permission import CommandCategory
from air.path_glob import glob_match
from air.small_file import read_small
from air.yamlload import load

__all__ = ["PermissionPolicy", "PolicyRule", "load_policy", "policy_files"]

RuleAction = Literal["allow", "ask", "deny"]
_FIELDS = {"action", "tool", "path", "command", "category", "sensitive", "reason"}


class PolicyRule(NamedTuple):
    action: RuleAction
    tool: str | None = None
    path: str | None = None
    command: str | None = None
    category: CommandCategory | None = None
    sensitive: bool = False
    source: str = "<memory>"
    reason: str | None = None

    @property
    def is_specific(self) -> bool:
        """A rule that names a concrete target (not only wildcards): allowed to cover sensitive
        paths when ``sensitive`` is true."""
        for value in (self.path, self.command):
            if value and value.strip("*/?. ") and not value.startswith(("*", "**")):
                return True
        return False


class PermissionPolicy(NamedTuple):
    rules: tuple[PolicyRule, ...] = ()
    headless_allow_ask: bool = False
    sources: tuple[str, ...] = ()

    def merged(self, other: PermissionPolicy) -> PermissionPolicy:
        return PermissionPolicy(
            rules=self.rules + other.rules,
            headless_allow_ask=self.headless_allow_ask or other.headless_allow_ask,
            sources=self.sources + other.sources,
        )


def _bad(source: str, message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.CONFIG_ERROR,
        message=f"{source}: {message}",
        user_action=f"Fix {source} (see docs/decisions.md, IMPL-SEC-3 for the format) and retry.",
    )


def _rule(raw: Any, source: str, index: int) -> PolicyRule:
    if not isinstance(raw, dict):
        raise _bad(source, f"rule {index} is not a mapping")
    unknown = set(raw) - _FIELDS
    if unknown:
        raise _bad(source, f"rule {index} has unknown keys {sorted(unknown)}")
    action = raw.get("action")
    if action not in ("allow", "ask", "deny"):
        raise _bad(source, f"rule {index}: action must be allow, ask or deny, not {action!r}")
    if not any(raw.get(k) for k in ("tool", "path", "command", "category")):
        raise _bad(source, f"rule {index} names no tool, path, command or category")
    category = raw.get("category")
    try:
        cat = CommandCategory(category) if category is not None else None
    except ValueError:
        raise _bad(source, f"rule {index}: unknown command category {category!r}") from None
    for key in ("tool", "path", "command", "reason"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise _bad(source, f"rule {index}: {key} must be a string")
    return PolicyRule(
        action=action,
        tool=raw.get("tool"),
        path=raw.get("path"),
        command=raw.get("command"),
        category=cat,
        sensitive=bool(raw.get("sensitive", False)),
        source=source,
        reason=raw.get("reason"),
    )


def parse_policy(text: str, source: str) -> PermissionPolicy:
    """Parse one policy file's text; an empty or comment-only file is an empty policy."""
    try:
        data = load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise _bad(source, f"not valid YAML{where} ({problem})") from exc
    except RecursionError:
        raise _bad(source, "not valid YAML (nested too deeply)") from None
    if data is None:
        return PermissionPolicy(sources=(source,))
    if not isinstance(data, dict):
        raise _bad(source, "the top level must be a mapping with a `rules` list")
    unknown = set(data) - {"rules", "headless_allow_ask", "version"}
    if unknown:
        raise _bad(source, f"unknown top-level keys {sorted(unknown)}")
    rules_raw = data.get("rules") or []
    if not isinstance(rules_raw, list):
        raise _bad(source, "`rules` must be a list")
    return PermissionPolicy(
        rules=tuple(_rule(r, source, i) for i, r in enumerate(rules_raw)),
        headless_allow_ask=bool(data.get("headless_allow_ask", False)),
        sources=(source,),
    )


def policy_files(project_root: str | None, home: str | None = None) -> list[str]:
    """The policy files air reads, user first then project."""
    home_dir = home or os.path.expanduser("~")
    files = [os.path.join(home_dir, ".air", "permissions.yaml")]
    if project_root:
        files.append(os.path.join(project_root, ".air", "shared", "permissions.yaml"))
    return files


def load_policy(files: Iterable[str]) -> PermissionPolicy:
    """Load and merge the policy files that exist (missing files are skipped)."""
    policy = PermissionPolicy()
    for path in files:
        try:
            text = read_small(path).decode("utf-8")
        except FileNotFoundError:
            continue
        except UnicodeDecodeError as exc:
            raise _bad(path, f"not UTF-8 text (byte {exc.start}): a policy file is YAML") from exc
        except OSError as exc:
            raise _bad(path, f"cannot be read ({exc.strerror or exc})") from exc
        policy = policy.merged(parse_policy(text, path))
    return policy


def rule_matches_path(rule: PolicyRule, resolved: str, project_root: str, home: str) -> bool:
    if rule.path is None:
        return True
    pattern = rule.path
    if pattern.startswith("~/"):
        pattern = home + pattern[1:]
    if not os.path.isabs(pattern):
        rel = os.path.relpath(resolved, project_root)
        if rel.startswith(".."):
            return False
        return glob_match(pattern.rstrip("/"), rel) or glob_match(pattern.rstrip("/") + "/**", rel)
    return glob_match(pattern.rstrip("/"), resolved) or glob_match(
        pattern.rstrip("/") + "/**", resolved
    )


def rule_matches_command(
    rule: PolicyRule, segment_text: str, category: CommandCategory | None
) -> bool:
    if rule.category is not None and rule.category != category:
        return False
    if rule.command is None:
        return True
    normalised = " ".join(segment_text.split())
    return fnmatch.fnmatchcase(normalised, rule.command)


def rule_matches_tool(rule: PolicyRule, tool_name: str) -> bool:
    return rule.tool is None or fnmatch.fnmatchcase(tool_name, rule.tool)
