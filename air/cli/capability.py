"""``air capability list|approve NAME|enable NAME|disable NAME``: the user's capability choices.

Owns the command bodies. They discover, validate and doctor-check the built-in, project
(``.air/shared/capabilities/*.json``, read only once the project is trusted: IMPL-TRUST-1) and
user (``~/.air/capabilities/*.json``) manifests exactly as a session does, and record the
user's decisions in ``~/.air/capabilities.json`` (``air.capabilities.decisions``): an approval
of a manifest's exact bytes, and enable/disable per project. The next session enables what
they say (IMPL-CAP-1); every call of a capability's tool still gets a permission decision.
Nothing here records an event: no session is open.
"""

from __future__ import annotations

import os
from typing import Any

from air.cli.provider import find_project_root
from air.contracts.display import shown
from air.contracts.error import AirException, CliExit, ErrorKind

__all__ = ["run_capability"]


def _registry(root: str | None) -> Any:
    from air.capabilities.builtin import builtin_capabilities
    from air.capabilities.decisions import CapabilityDecisions
    from air.capabilities.registry import CapabilityRegistry

    registry = CapabilityRegistry(
        record=lambda _event: None,
        session_id="",
        builtins=builtin_capabilities(),
        project_root=root,
        decisions=CapabilityDecisions(),
    )
    for manifest in registry.discover():
        if registry.validate(manifest).ok:
            registry.doctor_check(manifest.capability_id)
    return registry


def _status(registry: Any, rec: Any) -> str:
    from air.contracts.capability import CapabilityState

    cid = rec.manifest.capability_id
    if rec.state == CapabilityState.FAILED:
        return f"failed: {rec.reason}"
    switch = registry.decisions.switch(registry.project_root, cid)
    if switch == "disabled":
        return "disabled"
    if registry.decided(cid):
        return "enabled"
    if rec.approved:
        return f"approved, not enabled (air capability enable {cid})"
    if switch == "enabled":
        return f"needs approval again: the manifest changed (air capability approve {cid})"
    return f"needs approval (air capability approve {cid})"


def _record(registry: Any, name: str) -> Any:
    rec = registry.records.get(name)
    if rec is None:
        known = ", ".join(sorted(registry.records)) or "none"
        raise AirException.of(
            kind=ErrorKind.NOT_FOUND,
            message=f"no capability named {shown(name)} (found: {known})",
            user_action="Pick a capability from `air capability list`.",
            metadata={"field": "NAME"},
        )
    return rec


def _usable(rec: Any) -> None:
    from air.contracts.capability import CapabilityState

    if rec.state == CapabilityState.FAILED:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"capability {rec.manifest.capability_id} failed: {rec.reason}",
            user_action=f"Fix {rec.source} (or install what it needs: `air doctor`).",
            metadata={"field": "NAME"},
        )


def run_capability(args: dict[str, Any]) -> int:
    """``air capability``.

    Raises:
        AirException: ``untrusted_config`` (a project not trusted yet), ``not_found`` (no such
            capability), ``validation_error`` (a failed manifest, enabling before approval).
    """
    from air.capabilities.decisions import CapabilityDecisions
    from air.session.trust import require_trust

    root = find_project_root(args["--project"])
    if root is not None:
        root = os.path.realpath(root)
        require_trust(root)  # before the project's manifests are read (IMPL-TRUST-1)
    registry = _registry(root)
    decisions = CapabilityDecisions()
    if args["list"]:
        for cid, rec in sorted(registry.records.items()):
            trust = rec.manifest.trust.value
            print(f"{cid}  {trust}  {_status(registry, rec)}")
            print(f"  from {shown(rec.source)}")
            for tool in rec.manifest.tools:
                command = f"  runs: {shown(str(tool['command']))}" if "command" in tool else ""
                print(f"  tool {shown(str(tool.get('name')))}{command}")
        return CliExit.OK
    rec = _record(registry, args["NAME"])
    _usable(rec)
    cid = rec.manifest.capability_id
    if args["approve"]:
        if rec.default_enabled:
            print(f"air: {cid} ({rec.manifest.trust.value}) needs no approval")
            return CliExit.OK
        decisions.approve(rec.digest, cid, rec.source)
        print(f"air: approved {cid} as it is now in {shown(rec.source)} (a change asks again)")
        print(f"air: recorded in {decisions.path}; enable it with `air capability enable {cid}`")
        return CliExit.OK
    if args["enable"]:
        if not rec.default_enabled and not rec.approved:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"capability {cid} ({rec.manifest.trust.value}) is not approved"
                + (" in its current form" if rec.digest else ""),
                user_action=f"Read {rec.source}, then `air capability approve {cid}`.",
                metadata={"field": "NAME"},
            )
        decisions.set_switch(root, cid, "enabled")
        print(f"air: enabled {cid} for the next session; each call of its tools still asks")
        return CliExit.OK
    decisions.set_switch(root, cid, "disabled")
    print(f"air: disabled {cid} for the next session")
    return CliExit.OK
