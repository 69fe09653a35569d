"""The built-in capability manifests and their registrars (today: the C++ toolchain).

Owns ``CPP_CAPABILITY`` (the ``cpp`` manifest: the cpp.* tool definitions, the programs they
need, triggers and evidence types), ``builtin_capabilities(sandbox)`` (manifest, registrar)
pairs bound to the shell sandbox, and ``load_capabilities``, the one call a front end makes to
take every capability through its lifecycle into a ToolRegistry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from air.capabilities.command_tools import command_registrar
from air.capabilities.decisions import CapabilityDecisions
from air.capabilities.registry import CapabilityRecord, CapabilityRegistry, Registrar
from air.contracts.capability import CapabilityManifestV1, CapabilityTrust
from air.contracts.event import RuntimeEvent
from air.contracts.evidence import EvidenceKind
from air.contracts.tool import ToolDefinition
from air.tools.cpp import register_cpp_tools
from air.tools.cpp_definitions import CPP_TOOL_DEFINITIONS
from air.tools.registry import ToolRegistry
from air.tools.shell import SandboxRunner

__all__ = ["CPP_CAPABILITY", "builtin_capabilities", "load_capabilities"]

_REQUIRES = {
    "cpp.configure": ["cmake"],
    "cpp.build": ["cmake"],
    "cpp.test": ["ctest"],
    "cpp.cppcheck": ["cppcheck"],
    "cpp.clangd": ["clangd"],
}

CPP_CAPABILITY = CapabilityManifestV1(
    capability_id="cpp",
    name="C++ toolchain",
    version="1.0.0",
    trust=CapabilityTrust.BUILT_IN,
    tools=[
        {**d.model_dump(mode="json"), "requires": _REQUIRES.get(d.name, [])}
        for d in CPP_TOOL_DEFINITIONS.values()
    ],
    dependencies=[],
    triggers=["CMakeLists.txt", "Makefile", "build.ninja", "compile_commands.json"],
    evidence_types=[EvidenceKind.BUILD_OUTPUT.value, EvidenceKind.TEST_OUTPUT.value],
)


def builtin_capabilities(
    sandbox: SandboxRunner | None = None,
) -> list[tuple[CapabilityManifestV1, Registrar]]:
    """Every built-in manifest with its registrar (cpp tools bound to ``sandbox``)."""

    def cpp(registry: ToolRegistry, definitions: Sequence[ToolDefinition]) -> object:
        return register_cpp_tools(registry, sandbox, definitions)

    return [(CPP_CAPABILITY, cpp)]


def load_capabilities(
    registry: ToolRegistry,
    *,
    record: Callable[[RuntimeEvent], object],
    session_id: str,
    project_root: str | None = None,
    sandbox: SandboxRunner | None = None,
    user_dir: str | None = None,
    decisions: CapabilityDecisions | None = None,
) -> dict[str, CapabilityRecord]:
    """Take every capability through discover → ... → active and register its tools; the
    user's decisions (``~/.air/capabilities.json`` unless given) say which project and user
    capabilities are enabled (IMPL-CAP-1)."""
    return CapabilityRegistry(
        record=record,
        session_id=session_id,
        builtins=builtin_capabilities(sandbox),
        project_root=project_root,
        user_dir=user_dir,
        decisions=decisions or CapabilityDecisions(),
        external=lambda commands: command_registrar(commands, sandbox),
    ).load(registry)
