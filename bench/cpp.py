"""C++ toolchain benchmarks, each against a baseline measured in the same run.

Run: ``.venv/bin/python bench/cpp.py [--repeat K] [--units N] [--rounds R]``.

1. DiagnosticParser throughput: the suite's corpus (tests/cpp/corpus.py: every kind, gcc and
   clang text with colour, gcc JSON, ld and CMake output) is built once from the real tools,
   concatenated and repeated K times; ``parse_compiler_output`` over it vs merely reading the
   same text line by line (``splitlines`` and touching every line). Prints MB/s and the ratio
   (how many times slower than reading).
2. Build through air vs bare: a generated CMake tree of N translation units (each includes a
   few standard headers) is configured once; each round cleans it (``cmake --build --target
   clean``) and builds it, bare (``cmake --build``) and through ``cpp.build`` (ToolRegistry,
   PermissionEngine, bubblewrap sandbox, command/diagnostic/artifact/evidence records in a real
   session database). Prints the medians and the ratio. Goal: <= 1.1x bare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.contracts.tool_runs import ToolExecutionContext  # noqa: E402
from air.cpp.diagnostics import DiagnosticParser  # noqa: E402
from air.security.engine import PermissionEngine  # noqa: E402
from air.security.paths import PathClassifier  # noqa: E402
from air.security.redact import SecretRedactor  # noqa: E402
from air.session.manager import SessionManager  # noqa: E402
from air.session.project import ProjectStore  # noqa: E402
from air.tools import ToolRegistry, register_builtin_tools  # noqa: E402
from air.tools.cpp import register_cpp_tools  # noqa: E402
from tests.cpp.corpus import build_corpus  # noqa: E402


def parser_throughput(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        entries = build_corpus(Path(tmp) / "corpus")
        one = "".join(out for e in entries.values() for _, out in sorted(e.outputs.items()))
        text = one * repeat
        mb = len(text.encode()) / 1e6

        def read() -> int:
            n = 0
            for line in text.splitlines():
                n += len(line)
            return n

        parser = DiagnosticParser(tmp)
        reads = []
        parses = []
        found = 0
        for _ in range(5):
            t0 = time.perf_counter()
            read()
            reads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            found = len(parser.parse_compiler_output(text))
            parses.append(time.perf_counter() - t0)
        r, p = statistics.median(reads), statistics.median(parses)
        print(f"parser: {mb:.1f} MB, {found} diagnostics")
        print(f"  read line by line  {mb / r:8.1f} MB/s")
        print(f"  DiagnosticParser   {mb / p:8.1f} MB/s   ({found / p:,.0f} diagnostics/s)")
        print(f"  ratio parse/read   {p / r:8.1f}x")


_UNIT = """#include <map>
#include <string>
#include <vector>
#include <algorithm>

namespace gen {{
std::string unit{i}(const std::vector<int>& v) {{
    std::map<int, std::string> names;
    for (int x : v) names[x] = std::to_string(x * {i});
    std::string out;
    for (const auto& [k, s] : names) out += s + ",";
    std::sort(out.begin(), out.end());
    return out;
}}
}}  // namespace gen
"""


def _tree(root: Path, units: int) -> None:
    root.mkdir(parents=True)
    names = []
    for i in range(units):
        (root / f"unit{i}.cpp").write_text(_UNIT.format(i=i))
        names.append(f"unit{i}.cpp")
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(gen CXX)\nset(CMAKE_CXX_STANDARD 17)\n"
        f"add_library(gen {' '.join(names)})\n"
    )
    subprocess.run(
        ["cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _clean(root: Path) -> None:
    subprocess.run(
        ["cmake", "--build", "build", "--target", "clean"],
        cwd=root,
        check=True,
        capture_output=True,
    )


def build_overhead(units: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "proj"
        _tree(root, units)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        home = base / "home"
        home.mkdir()
        project = ProjectStore().initialize(root)
        session = SessionManager().open_session(project)
        redactor = SecretRedactor()
        engine = PermissionEngine(
            classifier=PathClassifier(home=str(home)),
            redactor=redactor,
            sink=session.ingestor.ingest,
        )
        registry = ToolRegistry(
            engine=engine, recorder=session.ingestor, artifacts=session.artifacts, redactor=redactor
        )
        sandbox = register_builtin_tools(registry)
        register_cpp_tools(registry, sandbox)
        ctx = ToolExecutionContext(
            session_id=session.session_id,
            task_id="bench",
            agent_id="ag_bench",
            project_root=str(root),
            workspace_root=str(root),
        )
        bare: list[float] = []
        air: list[float] = []

        async def through_air() -> float:
            t0 = time.perf_counter()
            result = await registry.call("cpp.build", {}, ctx)
            took = time.perf_counter() - t0
            assert result.status == "ok", result.error
            assert isinstance(result.output, dict)
            assert result.output["ok"], result.output
            return took

        try:
            for _ in range(rounds):
                _clean(root)
                t0 = time.perf_counter()
                subprocess.run(
                    ["cmake", "--build", "build"], cwd=root, check=True, capture_output=True
                )
                bare.append(time.perf_counter() - t0)
                _clean(root)
                air.append(trio.run(through_air))
        finally:
            session.close()
        b, a = statistics.median(bare), statistics.median(air)
        sandbox.check_available()  # air never runs a build unsandboxed
        print(f"build: {units} translation units, {rounds} rounds, cpp.build in bwrap")
        print(f"  bare cmake --build {b * 1000:8.0f} ms (median)")
        print(f"  cpp.build via air  {a * 1000:8.0f} ms (median)")
        print(f"  ratio air/bare     {a / b:8.2f}x   (goal <= 1.1x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="corpus copies parsed")
    parser.add_argument("--units", type=int, default=12, help="translation units built")
    parser.add_argument("--rounds", type=int, default=3, help="clean builds per side")
    args = parser.parse_args()
    os.environ.setdefault("LC_ALL", "C.UTF-8")
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        sys.exit("cmake and ninja are needed: run scripts/setup.sh")
    parser_throughput(args.repeat)
    build_overhead(args.units, args.rounds)


if __name__ == "__main__":
    main()
