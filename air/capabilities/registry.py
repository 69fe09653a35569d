"""CapabilityRegistry: discover, validate, doctor-check, enable and register capability manifests.

Owns ``CapabilityManifestValidator`` (schema version, tool definitions, namespaces, permissions
against trust), ``CapabilityRecord`` and ``CapabilityRegistry`` with the SDD §20.6 lifecycle
discovered → validated → doctor_checked → enabled → registered → active (→ disabled | failed),
every transition a durable ``capability.state.changed`` event. Trust (contracts §18) changes
only the *default*: built_in and verified_publisher capabilities are enabled by default, the
others wait for an explicit ``enable(..., approved=True)``; an untrusted one may not declare
system-sensitive or network tools. Nothing here executes a tool: registration hands the
declared definitions to the capability's registrar, which registers them in the ToolRegistry,
so every call still passes ToolRegistry.call and the PermissionEngine. Dependency installs are
never done here (they are the Doctor's); a missing dependency fails the doctor check.

The registry is synchronous (it reads a few small JSON files and writes events through the
ingestor's synchronous path) so that the CLI's synchronous wiring can load it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from air.capabilities.decisions import CapabilityDecisions, manifest_digest
from air.contracts.capability import (
    CapabilityManifestV1,
    CapabilityState,
    CapabilityTrust,
    ValidationResult,
)
from air.contracts.error import AirException, ErrorKind
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.tool import ToolDefinition
from air.tools.registry import ToolRegistry

__all__ = [
    "CapabilityManifestValidator",
    "CapabilityRecord",
    "CapabilityRegistry",
    "ExternalRegistrar",
    "Registrar",
    "command_problems",
]

Registrar = Callable[[ToolRegistry, Sequence[ToolDefinition]], object]
"""Registers a capability's (doctor-approved) tool definitions with their executors."""

ExternalRegistrar = Callable[[Mapping[str, str]], Registrar]
"""The Registrar of a project or user manifest, from its tools' commands (tool -> command)."""

_NOT_DEFINITION = ("requires", "command")
"""Manifest tool keys that are not ToolDefinition fields."""


def command_problems(raw: Mapping[str, Any]) -> list[str]:
    """Why a project or user manifest tool's ``command`` cannot run (empty: it can): it must be
    a string whose ``{name}`` placeholders are properties of the tool's input schema, each a
    plain word where bash reads an input's quotes (``read_template``, IMPL-CAP-2)."""
    from air.capabilities.command_template import read_template  # a manifest with commands only

    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        return ["a project or user capability's tool needs a `command` (a string)"]
    schema = raw.get("input_schema")
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    slots, problems = read_template(command)
    unknown = dict.fromkeys(s.name for s in slots if s.name not in properties)
    return [f"command placeholder {{{p}}} is not an input property" for p in unknown] + problems


_ID = re.compile(r"^[a-z][a-z0-9_-]{1,40}$")
_TOOL = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_.]*$")
_RESERVED_NAMESPACES = frozenset(
    {"fs", "shell", "git", "project", "artifact", "provider", "context"}
)
_DEFAULT_ENABLED = frozenset({CapabilityTrust.BUILT_IN, CapabilityTrust.VERIFIED_PUBLISHER})
_TRANSITIONS: dict[CapabilityState | None, frozenset[CapabilityState]] = {
    None: frozenset({CapabilityState.DISCOVERED}),
    CapabilityState.DISCOVERED: frozenset({CapabilityState.VALIDATED, CapabilityState.FAILED}),
    CapabilityState.VALIDATED: frozenset({CapabilityState.DOCTOR_CHECKED, CapabilityState.FAILED}),
    CapabilityState.DOCTOR_CHECKED: frozenset(
        {CapabilityState.ENABLED, CapabilityState.DISABLED, CapabilityState.FAILED}
    ),
    CapabilityState.ENABLED: frozenset({CapabilityState.REGISTERED, CapabilityState.FAILED}),
    CapabilityState.REGISTERED: frozenset({CapabilityState.ACTIVE, CapabilityState.FAILED}),
    CapabilityState.ACTIVE: frozenset(
        {CapabilityState.DISABLED, CapabilityState.FAILED, CapabilityState.UPDATED}
    ),
    CapabilityState.DISABLED: frozenset({CapabilityState.ENABLED}),
    CapabilityState.FAILED: frozenset(),
    CapabilityState.UPDATED: frozenset({CapabilityState.DISCOVERED}),
}


class CapabilityManifestValidator:
    """Checks one manifest (SDD §9.5): schema_version 1, ids, tool schemas and permissions.

    Args:
        builtin_ids: capability ids only a built-in manifest may use.
    """

    def __init__(self, builtin_ids: frozenset[str] = frozenset()) -> None:
        self.builtin_ids = builtin_ids

    def validate(self, manifest: CapabilityManifestV1 | Mapping[str, Any]) -> ValidationResult:
        errors: list[str] = []
        if not isinstance(manifest, CapabilityManifestV1):
            try:
                manifest = CapabilityManifestV1.model_validate(dict(manifest))
            except ValidationError as exc:
                return ValidationResult(
                    ok=False,
                    errors=[f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()],
                )
        cid = manifest.capability_id
        if not _ID.match(cid):
            errors.append(f"capability_id {cid!r} must match {_ID.pattern}")
        if cid in self.builtin_ids and manifest.trust != CapabilityTrust.BUILT_IN:
            errors.append(f"capability_id {cid!r} is reserved by a built-in capability")
        if manifest.trust == CapabilityTrust.BUILT_IN and cid not in self.builtin_ids:
            errors.append("only air's own manifests may claim trust built_in")
        seen: set[str] = set()
        for i, raw in enumerate(manifest.tools):
            where = f"tools[{i}]"
            body = {k: v for k, v in raw.items() if k not in _NOT_DEFINITION}
            if manifest.trust != CapabilityTrust.BUILT_IN:
                errors += [f"{where}: {p}" for p in command_problems(raw)]
            try:
                tool = ToolDefinition.model_validate(body)
            except ValidationError as exc:
                errors += [
                    f"{where}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
                ]
                continue
            name = tool.name
            if name in seen:
                errors.append(f"{where}: tool {name} is declared twice")
            seen.add(name)
            namespace = name.split(".", 1)[0]
            if not _TOOL.match(name):
                errors.append(f"{where}: tool name {name!r} must be namespace.name")
            elif namespace in _RESERVED_NAMESPACES:
                errors.append(f"{where}: namespace {namespace!r} belongs to air's built-in tools")
            elif namespace != cid.replace("-", "_"):
                errors.append(f"{where}: tool {name} must live in the {cid!r} namespace")
            schema = tool.input_schema
            if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
                errors.append(f"{where}: input_schema must be an object schema with properties")
            if manifest.trust == CapabilityTrust.UNTRUSTED and (
                tool.permissions.system_sensitive or tool.permissions.network
            ):
                errors.append(
                    f"{where}: an untrusted capability may not declare network or "
                    "system-sensitive tools"
                )
            requires = raw.get("requires", [])
            if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
                errors.append(f"{where}.requires must be a list of program names")
        for dep in manifest.dependencies:
            if not all(re.fullmatch(r"[A-Za-z0-9_.+-]+", alt) for alt in dep.split("|")):
                errors.append(f"dependency {dep!r} must be a program name (alternatives with |)")
        return ValidationResult(ok=not errors, errors=errors)


@dataclass(eq=False)
class CapabilityRecord:
    """One capability of the session: its manifest, where it was found and its lifecycle state."""

    manifest: CapabilityManifestV1
    source: str
    """``builtin`` or the manifest file's path."""
    state: CapabilityState | None = None
    reason: str | None = None
    tools: list[str] = field(default_factory=list)
    """The tools registered (those whose requirements the doctor check found)."""
    skipped_tools: dict[str, str] = field(default_factory=dict)
    """Tool name → why the doctor check left it out."""
    digest: str | None = None
    """sha256 of the manifest file's bytes (None for a built-in): the approval key."""
    approved: bool = False
    """The user approved exactly this manifest (``~/.air/capabilities.json``, IMPL-CAP-1)."""

    @property
    def default_enabled(self) -> bool:
        return self.manifest.trust in _DEFAULT_ENABLED

    @property
    def prompt_posture(self) -> str:
        """``auto``: enabled by default; ``ask``: a person must approve ``enable`` first."""
        return "auto" if self.default_enabled else "ask"


class CapabilityRegistry:
    """The lifecycle of every capability of one session (SDD §9.5, §20.6).

    Args:
        record: writes one durable event (``EventIngestor.ingest_sync``).
        session_id: the session the events belong to.
        builtins: air's own manifests with their registrars.
        project_root: where ``.air/shared/capabilities/*.json`` (project_local) is looked for.
        user_dir: where ``*.json`` (user_installed) is looked for (default ``~/.air/capabilities``).
        which: finds a program on PATH (the doctor check).
        decisions: the user's approvals and enable/disable switches (none: defaults only).
        external: builds the Registrar of a project or user manifest (none: such a manifest
            has no implementation and fails at registration).
    """

    def __init__(
        self,
        *,
        record: Callable[[RuntimeEvent], object],
        session_id: str,
        builtins: Sequence[tuple[CapabilityManifestV1, Registrar]] = (),
        project_root: str | None = None,
        user_dir: str | None = None,
        which: Callable[[str], str | None] = shutil.which,
        decisions: CapabilityDecisions | None = None,
        external: ExternalRegistrar | None = None,
    ) -> None:
        self._record = record
        self.session_id = session_id
        self._builtins = {m.capability_id: (m, r) for m, r in builtins}
        self.project_root = project_root
        self.user_dir = user_dir or os.path.join(os.path.expanduser("~"), ".air", "capabilities")
        self.which = which
        self.decisions = decisions
        self.external = external
        self.validator = CapabilityManifestValidator(frozenset(self._builtins))
        self.records: dict[str, CapabilityRecord] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def discover(self) -> list[CapabilityManifestV1]:
        """Find the built-in, project-local and user-installed manifests (state discovered).

        A manifest file that is not valid JSON is recorded as failed and skipped.
        """
        found: list[CapabilityManifestV1] = []
        for manifest, _ in self._builtins.values():
            found += self._discovered(manifest, "builtin")
        sources = []
        if self.project_root:
            sources.append(
                (
                    os.path.join(self.project_root, ".air", "shared", "capabilities"),
                    CapabilityTrust.PROJECT_LOCAL,
                )
            )
        sources.append((self.user_dir, CapabilityTrust.USER_INSTALLED))
        for folder, ceiling in sources:
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if not name.endswith(".json") or os.path.islink(path) or not os.path.isfile(path):
                    continue
                found += self._load_file(path, ceiling)
        return found

    def _load_file(self, path: str, ceiling: CapabilityTrust) -> list[CapabilityManifestV1]:
        try:
            with open(path, "rb") as f:
                raw = f.read(1 << 20)
            data = json.loads(raw)
        except (OSError, ValueError, RecursionError) as exc:
            self._event(
                path, "?", ceiling.value, None, CapabilityState.FAILED, f"unreadable: {exc}"
            )
            return []
        if not isinstance(data, dict):
            self._event(path, "?", ceiling.value, None, CapabilityState.FAILED, "not an object")
            return []
        # a file's trust is where it was found, never what it claims (except a downgrade)
        trust = CapabilityTrust.UNTRUSTED if data.get("trust") == "untrusted" else ceiling
        data = {**data, "trust": trust.value}
        try:
            manifest = CapabilityManifestV1.model_validate(data)
        except ValidationError as exc:
            cid = str(data.get("capability_id", path))
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            self._event(
                cid,
                str(data.get("version", "?")),
                trust.value,
                None,
                CapabilityState.FAILED,
                reason,
            )
            return []
        return self._discovered(manifest, path, manifest_digest(raw))

    def _discovered(
        self, manifest: CapabilityManifestV1, source: str, digest: str | None = None
    ) -> list[CapabilityManifestV1]:
        cid = manifest.capability_id
        if cid in self.records and self.records[cid].state != CapabilityState.UPDATED:
            existing = self.records[cid]
            if existing.source != source:
                self._event(
                    cid,
                    manifest.version,
                    manifest.trust.value,
                    None,
                    CapabilityState.FAILED,
                    f"{source}: capability_id already provided by {existing.source}",
                )
            return []
        approved = self.decisions is not None and self.decisions.approved(digest)
        self.records[cid] = CapabilityRecord(manifest, source, digest=digest, approved=approved)
        self._move(cid, CapabilityState.DISCOVERED, f"found in {source}")
        return [manifest]

    def validate(self, manifest: CapabilityManifestV1) -> ValidationResult:
        """Validate a discovered manifest (→ validated, or failed with the errors)."""
        result = self.validator.validate(manifest)
        cid = manifest.capability_id
        if cid in self.records:
            if result.ok:
                self._move(cid, CapabilityState.VALIDATED)
            else:
                self._move(cid, CapabilityState.FAILED, "; ".join(result.errors))
        return result

    def doctor_check(self, capability_id: str) -> list[str]:
        """Check the manifest's dependencies on this machine (→ doctor_checked or failed).

        Returns:
            The problems found (empty when every required program is installed). A tool
            whose own ``requires`` are missing is left out of registration, not failed.
        """
        rec = self._get(capability_id)
        problems = [
            f"missing program: {dep}"
            for dep in rec.manifest.dependencies
            if not any(self.which(alt) for alt in dep.split("|"))
        ]
        rec.skipped_tools = {}
        for raw in rec.manifest.tools:
            missing = [r for r in raw.get("requires", []) if not self.which(r)]
            if missing:
                rec.skipped_tools[str(raw.get("name"))] = "missing " + ", ".join(missing)
        if problems:
            self._move(capability_id, CapabilityState.FAILED, "; ".join(problems))
        else:
            reason = (
                "tools left out: " + "; ".join(f"{k} ({v})" for k, v in rec.skipped_tools.items())
                if rec.skipped_tools
                else None
            )
            self._move(capability_id, CapabilityState.DOCTOR_CHECKED, reason)
        return problems

    def enable(self, capability_id: str, *, approved: bool = False) -> None:
        """Enable a doctor-checked (or disabled) capability.

        Raises:
            AirException(permission_denied): its trust needs a person's approval (``ask``
                posture) and ``approved`` is false.
        """
        rec = self._get(capability_id)
        if not rec.default_enabled and not approved:
            raise AirException.of(
                kind=ErrorKind.PERMISSION_DENIED,
                message=f"capability {capability_id} ({rec.manifest.trust.value}) needs approval "
                "before it is enabled",
                user_action=f"Review {rec.source} and enable it explicitly.",
            )
        self._move(capability_id, CapabilityState.ENABLED, "approved" if approved else "default")

    def disable(self, capability_id: str) -> None:
        """Disable a capability; tools already registered stay until the next session."""
        self._move(capability_id, CapabilityState.DISABLED)

    def register_tools(self, tool_registry: ToolRegistry) -> None:
        """Register the tools of every enabled capability (→ registered → active).

        A capability without a registrar (a manifest that brings no implementation air knows)
        or whose registrar fails ends failed; the others are unaffected.
        """
        for cid, rec in self.records.items():
            if rec.state != CapabilityState.ENABLED:
                continue
            registrar = self._registrar(rec)
            if registrar is None:
                self._move(cid, CapabilityState.FAILED, "no implementation is installed for it")
                continue
            definitions = [
                ToolDefinition.model_validate(
                    {k: v for k, v in raw.items() if k not in _NOT_DEFINITION}
                )
                for raw in rec.manifest.tools
                if str(raw.get("name")) not in rec.skipped_tools
            ]
            try:
                registrar(tool_registry, definitions)
            except AirException as exc:
                self._move(cid, CapabilityState.FAILED, str(exc))
                continue
            rec.tools = [d.name for d in definitions]
            self._move(cid, CapabilityState.REGISTERED)
            self._move(cid, CapabilityState.ACTIVE)

    def _registrar(self, rec: CapabilityRecord) -> Registrar | None:
        cid = rec.manifest.capability_id
        if rec.source == "builtin":
            entry = self._builtins.get(cid)
            return entry[1] if entry is not None else None
        if self.external is None:
            return None
        return self.external({str(t["name"]): str(t["command"]) for t in rec.manifest.tools})

    def decided(self, capability_id: str) -> bool:
        """Whether a doctor-checked capability is enabled in this project: a switch the user
        set wins (``disabled``; ``enabled`` counts only for an approved manifest where the
        trust asks), else its trust's default."""
        rec = self._get(capability_id)
        switch = self.decisions.switch(self.project_root, capability_id) if self.decisions else None
        if switch == "disabled":
            return False
        if rec.default_enabled:
            return True
        return switch == "enabled" and rec.approved

    def load(self, tool_registry: ToolRegistry) -> dict[str, CapabilityRecord]:
        """Discover, validate, doctor-check, enable what ``decided`` says and register.

        Returns:
            Every record, by capability id.
        """
        for manifest in self.discover():
            if not self.validate(manifest).ok:
                continue
            if self.doctor_check(manifest.capability_id):
                continue
            cid = manifest.capability_id
            rec = self.records[cid]
            if self.decided(cid):
                self.enable(cid, approved=not rec.default_enabled)
            elif self.decisions and self.decisions.switch(self.project_root, cid) == "disabled":
                self._move(cid, CapabilityState.DISABLED, "disabled by the user")
        self.register_tools(tool_registry)
        return dict(self.records)

    def state(self, capability_id: str) -> CapabilityState | None:
        rec = self.records.get(capability_id)
        return rec.state if rec else None

    # -- internals ---------------------------------------------------------------------------

    def _get(self, capability_id: str) -> CapabilityRecord:
        rec = self.records.get(capability_id)
        if rec is None:
            raise AirException.of(
                kind=ErrorKind.NOT_FOUND,
                message=f"no capability {capability_id!r} was discovered",
                user_action="Run discover first or check the capability id.",
            )
        return rec

    def _move(self, capability_id: str, to: CapabilityState, reason: str | None = None) -> None:
        rec = self._get(capability_id)
        if to not in _TRANSITIONS[rec.state]:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"capability {capability_id} cannot go from "
                f"{rec.state.value if rec.state else 'nothing'} to {to.value}",
                user_action="Follow the lifecycle: discover, validate, doctor check, enable, "
                "register.",
            )
        self._event(
            capability_id,
            rec.manifest.version,
            rec.manifest.trust.value,
            rec.state,
            to,
            reason,
            tools=rec.tools,
        )
        rec.state = to
        rec.reason = reason

    def _event(
        self,
        capability_id: str,
        version: str,
        trust: str,
        from_state: CapabilityState | None,
        to_state: CapabilityState,
        reason: str | None,
        *,
        tools: list[str] | None = None,
    ) -> None:
        self._record(
            new_event(
                "capability.state.changed",
                {
                    "capability_id": capability_id,
                    "version": version,
                    "trust": trust,
                    "from_state": from_state.value if from_state else None,
                    "to_state": to_state.value,
                    "reason": reason,
                    "tools": list(tools or []),
                },
                session_id=self.session_id,
                source=EventSource(kind="system", id="capabilities"),
            )
        )
