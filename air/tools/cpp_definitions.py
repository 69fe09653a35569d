"""The cpp.* tools' definitions: ``CPP_TOOL_DEFINITIONS`` (name, description, input schema and
declared permissions of each tool, the ones the built-in C++ capability manifest declares) and
``permission_command`` (the command line the PermissionEngine classifies for a call: what the
tool will run). Pure data, importable without the toolchain (IMPL-FAST-2).
"""

from __future__ import annotations

from typing import Any

from air.contracts.ids import JsonObject
from air.contracts.tool import ToolCategory, ToolDefinition, ToolPermissionSpec

__all__ = ["CPP_TOOL_DEFINITIONS", "permission_command"]

_BUILD_DIR = {"type": "string", "minLength": 1, "maxLength": 200}
_SOURCE_DIR = {"type": "string", "minLength": 1, "maxLength": 200}
_TIMEOUT = {"type": "number", "minimum": 1, "maximum": 3600}


def _schema(properties: dict[str, Any]) -> JsonObject:
    return {"type": "object", "additionalProperties": False, "properties": properties}


CPP_TOOL_DEFINITIONS: dict[str, ToolDefinition] = {
    d.name: d
    for d in (
        ToolDefinition(
            name="cpp.detect",
            description="Tell what kind of C++ project the workspace is (CMake, Make, Ninja, "
            "compile_commands.json) and which compilers and tools are installed.",
            category=ToolCategory.PROJECT,
            input_schema=_schema({}),
        ),
        ToolDefinition(
            name="cpp.configure",
            description="Configure a CMake project (Ninja preferred, Make fallback) into a build "
            "directory inside the workspace; returns CMake's parsed errors.",
            category=ToolCategory.BUILD,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "source_dir": _SOURCE_DIR,
                    "build_type": {
                        "type": "string",
                        "enum": ["Debug", "Release", "RelWithDebInfo", "MinSizeRel"],
                    },
                    "export_compile_commands": {"type": "boolean"},
                    "generator": {"type": "string", "enum": ["Ninja", "Unix Makefiles"]},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.build",
            description="Build a CMake project (configuring it first when needed); returns the "
            "parsed compiler, linker and CMake diagnostics with their semantic signatures.",
            category=ToolCategory.BUILD,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "source_dir": _SOURCE_DIR,
                    "target": {"type": "string", "minLength": 1, "maxLength": 200},
                    "jobs": {"type": "integer", "minimum": 1, "maximum": 64},
                    "export_compile_commands": {"type": "boolean"},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.test",
            description="Run ctest in a built directory; returns every test's result and the "
            "failing assertions (GoogleTest and Catch2 output understood).",
            category=ToolCategory.TEST,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "regex": {"type": "string", "minLength": 1, "maxLength": 200},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.clangd",
            description="Ask clangd about one file: its diagnostics and, at a 1-based "
            "line/column, the definition, references and hover text of the symbol there.",
            category=ToolCategory.STATIC_ANALYSIS,
            input_schema={
                **_schema(
                    {
                        "file": {"type": "string", "minLength": 1, "maxLength": 500},
                        "line": {"type": "integer", "minimum": 1},
                        "column": {"type": "integer", "minimum": 1},
                        "build_dir": _BUILD_DIR,
                        "memory_mb": {"type": "integer", "minimum": 256, "maximum": 16384},
                        "timeout_s": {"type": "number", "minimum": 1, "maximum": 600},
                    }
                ),
                "required": ["file"],
            },
            permissions=ToolPermissionSpec(execute=True),
        ),
        ToolDefinition(
            name="cpp.cppcheck",
            description="Run cppcheck over the compile database (or the given paths) and "
            "return its findings as diagnostics.",
            category=ToolCategory.STATIC_ANALYSIS,
            input_schema=_schema(
                {
                    "build_dir": _BUILD_DIR,
                    "paths": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "enable": {"type": "string", "minLength": 1, "maxLength": 100},
                    "timeout_s": _TIMEOUT,
                }
            ),
            permissions=ToolPermissionSpec(execute=True),
        ),
    )
}


def permission_command(name: str) -> Any:
    """The command the PermissionEngine classifies for a cpp tool call (what it will run)."""

    def paths(input: JsonObject) -> tuple[list[str], list[str], str | None]:
        import shlex  # at the permission check, not before the first request (IMPL-BOOT-8)

        build_dir = str(input.get("build_dir", "build"))
        source = str(input.get("source_dir", "."))
        command = {
            "cpp.configure": ["cmake", "-S", source, "-B", build_dir],
            "cpp.build": ["cmake", "--build", build_dir],
            "cpp.test": ["ctest", "--test-dir", build_dir],
            "cpp.cppcheck": ["cppcheck", "--xml", "."],
            "cpp.clangd": ["clangd", "--log=error"],
        }.get(name)
        reads = [source] if name in ("cpp.configure", "cpp.build") else []
        if name == "cpp.clangd" and isinstance(input.get("file"), str):
            reads = [str(input["file"])]
        return reads, [], shlex.join(command) if command else None

    return paths
