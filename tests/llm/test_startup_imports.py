"""What ``air run`` imports before its first model request (issue #10, start-up <= 250 ms):
the modules a run only needs later are not on that path (IMPL-FAST-2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _loaded_after(code: str) -> list[str]:
    """The ``air.*`` modules a fresh interpreter has loaded after running ``code``."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import sys
        print("\\n".join(sorted(m for m in sys.modules if m.startswith("air."))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_registering_the_cpp_tools_does_not_load_the_cpp_toolchain() -> None:
    loaded = _loaded_after(
        """
        from air.capabilities import CPP_CAPABILITY, builtin_capabilities
        from air.tools.cpp import cpp_executors
        from air.tools.cpp_definitions import CPP_TOOL_DEFINITIONS
        from air.tools.sandbox import SandboxRunner

        assert builtin_capabilities()
        assert set(cpp_executors(SandboxRunner())) == set(CPP_TOOL_DEFINITIONS)
        assert len(CPP_CAPABILITY.tools) == len(CPP_TOOL_DEFINITIONS)
        """
    )
    assert "air.tools.cpp" in loaded
    assert [m for m in loaded if m == "air.cpp" or m.startswith("air.cpp.")] == []


def test_the_first_cpp_call_loads_the_toolchain_it_needs() -> None:
    loaded = _loaded_after(
        """
        import asyncio, os, tempfile
        from types import SimpleNamespace
        from air.tools.cpp import cpp_executors
        from air.tools.sandbox import SandboxRunner

        root = tempfile.mkdtemp()
        with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
            f.write("project(x)\\n")
        detect = cpp_executors(SandboxRunner())["cpp.detect"]
        found = asyncio.run(detect({}, SimpleNamespace(workspace_realpath=root)))
        assert found["build_system"] == "cmake", found
        """
    )
    assert "air.cpp.project" in loaded


def test_the_provider_manager_comes_without_the_cassette_module() -> None:
    loaded = _loaded_after("from air.llm.manager import ProviderManager\n")
    assert "air.llm.manager" in loaded
    # a run against a real provider never needs the cassette module (IMPL-BOOT-4)
    assert "air.llm.cassette" not in loaded
    assert "air.llm.task_cassettes" not in _loaded_after("import air.cli.prepare\n")
