"""cpp.* tools against examples/cpp-stats: real cmake, ninja, g++, ctest, cppcheck, bwrap and a
real session database."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException, ErrorKind
from air.contracts.tool_runs import ToolResultEnvelope
from air.cpp.process import LocalCommandRunner, read_workspace_file
from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput, CppProjectDetector
from air.cpp.testing import parse_catch2_output, parse_gtest_output, parse_junit
from air.security.redact import REDACTED
from tests.cpp.conftest import EXAMPLE
from tests.cpu_limited import run_cpu_limited
from tests.gitrepo import git
from tests.tools.conftest import Env, assert_payloads_valid


async def _call(env: Env, name: str, **input: Any) -> ToolResultEnvelope:
    return await env.registry.call(name, input, env.ctx(agent_id="ag_1"))


def _o(envelope: ToolResultEnvelope) -> dict[str, Any]:
    assert isinstance(envelope.output, dict), envelope.error
    return envelope.output


def _fix_summary(root: Path) -> None:
    src = root / "summary" / "summary.cpp"
    src.write_text(
        src.read_text().replace("#include <numeric>", "#include <algorithm>\n#include <numeric>")
    )


def _fix_spread(root: Path) -> None:
    src = root / "spread" / "spread.cpp"
    src.write_text(src.read_text().replace("(values.size() - 1)", "values.size()"))


async def test_detect_reports_cmake_and_the_tools(cpp_env: Env) -> None:
    env = await _call(cpp_env, "cpp.detect")
    assert env.status == "ok", env.error
    assert _o(env)["build_system"] == "cmake"
    assert _o(env)["tools"]["cmake"]
    assert _o(env)["compile_commands"] is None


async def test_build_streams_diagnostics_into_the_session_and_records_evidence(
    cpp_env: Env,
) -> None:
    result = await _call(cpp_env, "cpp.build")
    assert result.status == "ok", result.error
    out = _o(result)
    assert out["ok"] is False
    first = out["diagnostics"][0]
    assert first["file"] == "summary/summary.cpp"
    assert first["line"] == 14
    assert "sort" in first["message"]
    assert out["signature"] == first["semantic_signature"]
    rows = cpp_env.rows("diagnostics")
    errors = [r["semantic_signature"] for r in rows if r["severity"] == "error"]
    assert errors[0] == out["signature"]
    build_cmd = [
        r for r in cpp_env.rows("command_runs") if r["command"].startswith("cmake --build")
    ]
    assert len(build_cmd) == 1
    assert all(r["command_run_id"] in {c["id"] for c in cpp_env.rows("command_runs")} for r in rows)
    assert json.loads(build_cmd[0]["diagnostic_ids_json"]) == [
        r["diagnostic_id"] for r in rows if r["command_run_id"] == build_cmd[0]["id"]
    ]
    # streamed: each diagnostic is recorded before its command completes
    events = cpp_env.events()
    done = next(
        i
        for i, e in enumerate(events)
        if e.type == "command.completed" and e.payload["command_run_id"] == build_cmd[0]["id"]
    )
    assert all(i < done for i, e in enumerate(events) if e.type == "diagnostic.created")
    evidence = cpp_env.payloads("evidence.created")
    assert evidence[-1]["kind"] == "build_output"
    assert evidence[-1]["location_json"]["ok"] is False
    assert_payloads_valid(events)


async def test_test_tool_reports_each_ctest_case_and_the_gtest_failure(cpp_env: Env) -> None:
    _fix_summary(cpp_env.root)
    built = await _call(cpp_env, "cpp.build")
    assert _o(built)["ok"] is True, built.output
    tested = await _call(cpp_env, "cpp.test")
    assert tested.status == "ok", tested.error
    out = _o(tested)
    assert out["ok"] is False
    assert out["failed"] == ["spread.variance"]
    assert out["passed"] == 3
    variance = next(t for t in out["tests"] if t["name"] == "spread.variance")
    (failure,) = variance["failures"]
    assert failure["framework"] == "gtest"
    assert failure["file"].endswith("spread/spread_test.cpp")
    assert "Expected" in failure["message"]
    _fix_spread(cpp_env.root)
    assert _o(await _call(cpp_env, "cpp.build"))["ok"] is True
    passed = await _call(cpp_env, "cpp.test")
    assert _o(passed)["ok"] is True
    assert _o(passed)["passed"] == 4
    assert [e.kind.value for e in passed.evidence_refs] == ["test_output"]
    assert passed.evidence_refs[0].evidence_ref_id == _o(passed)["evidence_ref_id"]
    completed = cpp_env.payloads("tool.completed")[-1]
    assert completed["evidence_ref_ids"] == [_o(passed)["evidence_ref_id"]]
    kinds = [(e["kind"], e["location_json"]["ok"]) for e in cpp_env.payloads("evidence.created")]
    assert kinds[-1] == ("test_output", True)
    assert ("test_output", False) in kinds
    reports = [a for a in cpp_env.rows("artifacts") if a["type"] == "report"]
    assert reports  # the JUnit file kept as an artifact


async def test_commands_run_inside_the_shell_sandbox(cpp_env: Env) -> None:
    victim = cpp_env.outside / "victim.txt"
    (cpp_env.root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(escape NONE)\n"
        f'file(WRITE "{victim}" "overwritten")\n'
    )
    result = await _call(cpp_env, "cpp.configure")
    assert result.status == "ok", result.error
    # the sandbox sees a private /tmp: the write lands there and vanishes with it
    assert victim.read_text() == "untouched\n"
    started = cpp_env.payloads("command.started")
    assert started[-1]["command"].startswith("cmake -S . -B build -G Ninja")


async def test_build_dir_outside_the_workspace_is_refused(cpp_env: Env) -> None:
    for bad in ("../elsewhere", "/tmp/b", ".git/x", ".air/b"):
        result = await _call(cpp_env, "cpp.build", build_dir=bad)
        # the PermissionEngine denies a command whose target leaves the project (its -B/-S
        # options are write targets); what it lets through, the tool refuses itself
        assert result.status in ("error", "denied"), bad
        assert result.error is not None
        assert result.error.kind in ("validation_error", "permission_denied"), bad
        assert result.error.user_action
    os.symlink(cpp_env.outside, cpp_env.root / "out")
    before = sorted(os.listdir(cpp_env.outside))
    result = await _call(cpp_env, "cpp.build", build_dir="out")
    assert result.status in ("error", "denied")
    assert result.error is not None
    assert "outside" in result.error.message or result.status == "denied", result.error
    assert sorted(os.listdir(cpp_env.outside)) == before, "nothing is built through the link"


async def test_cppcheck_findings_become_diagnostics(cpp_env: Env) -> None:
    (cpp_env.root / "summary" / "leak.cpp").write_text(
        "int leak() { int a[3] = {0, 1, 2}; return a[5]; }\n"
    )
    result = await _call(cpp_env, "cpp.cppcheck", paths=["summary"])
    assert result.status == "ok", result.error
    found = _o(result)["diagnostics"]
    bounds = [d for d in found if d["code"] == "arrayIndexOutOfBounds"]
    assert bounds
    assert bounds[0]["file"] == "summary/leak.cpp"
    assert bounds[0]["line"] == 1
    rows = cpp_env.rows("diagnostics")
    assert any(r["tool"] == "cppcheck" and r["code"] == "arrayIndexOutOfBounds" for r in rows)


async def test_make_is_the_fallback_without_ninja(tmp_path: Path) -> None:
    root = tmp_path / "p"
    shutil.copytree(EXAMPLE / "spread", root)
    (root / "check.h").write_text((EXAMPLE / "check.h").read_text())
    (root / "spread_test.cpp").write_text(
        (root / "spread_test.cpp").read_text().replace("../check.h", "check.h")
    )
    which = lambda name: None if name == "ninja" else shutil.which(name)  # noqa: E731
    out = await CMakeConfigurator(LocalCommandRunner(), which=which).configure(
        CppCmakeConfigureInput(workspace=str(root), export_compile_commands=True)
    )
    assert out.ok, out.diagnostics
    assert out.generator == "Unix Makefiles"
    assert (root / "build" / "Makefile").is_file()
    assert out.compile_commands == "build/compile_commands.json"
    # a configured build dir keeps its generator even when ninja is available
    again = await CMakeConfigurator(LocalCommandRunner()).configure(
        CppCmakeConfigureInput(workspace=str(root))
    )
    assert again.generator == "Unix Makefiles"
    assert again.ok


def test_tool_output_files_are_read_without_following_symlinks(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    os.symlink(secret, ws / "build" / "junit.xml")
    with pytest.raises(Exception, match="refused to read"):
        read_workspace_file(str(ws), "build/junit.xml")
    os.symlink(tmp_path, ws / "link")
    with pytest.raises(Exception, match="outside the workspace"):
        read_workspace_file(str(ws), "link/secret.txt")
    assert read_workspace_file(str(ws), "build/none.xml") is None


def test_a_directory_swapped_for_a_link_before_the_open_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's directory is checked (its real path inside the workspace), then the file
    opened by name: a command running beside the call (``--isolation main``) that swaps the
    directory for a link between the two made the parent read what the link names."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "build").mkdir(parents=True)
    outside.mkdir()
    (ws / "build" / "CMakeCache.txt").write_text("CMAKE_GENERATOR:INTERNAL=Ninja\n")
    (outside / "CMakeCache.txt").write_text("PLANTED-SECRET\n")
    assert (
        read_workspace_file(str(ws), "build/CMakeCache.txt") == b"CMAKE_GENERATOR:INTERNAL=Ninja\n"
    )
    opened = os.open

    def swapping(path: Any, *args: Any, **kw: Any) -> int:
        if str(path).endswith("CMakeCache.txt"):  # after the check, before the open
            os.rename(ws / "build", ws / "build.old")
            os.symlink(outside, ws / "build")
        return opened(path, *args, **kw)

    monkeypatch.setattr(os, "open", swapping)
    with pytest.raises(AirException, match="a link where the file was checked"):
        read_workspace_file(str(ws), "build/CMakeCache.txt")


@pytest.mark.parametrize(
    ("codec", "declared"), [("utf-8", "UTF-8"), ("utf-16", "UTF-16"), ("utf-16-be", "UTF-16BE")]
)
def test_junit_with_entities_is_refused(codec: str, declared: str) -> None:
    """In any encoding expat reads: a byte search for ``<!DOCTYPE`` missed a UTF-16 one, whose
    entities then expanded up to expat's own limit (8 MiB of text from a few hundred bytes)."""
    entities = '<!ENTITY a "aaaa">' + "".join(
        f'<!ENTITY {b} "{("&" + a + ";") * 10}">' for a, b in zip("abcdef", "bcdefg", strict=True)
    )
    bomb = f'<?xml version="1.0" encoding="{declared}"?><!DOCTYPE x [{entities}]>'
    bomb += '<testsuite name="&g;"/>'
    with pytest.raises(AirException, match="DTD or entities"):
        parse_junit(bomb.encode(codec))


def test_junit_in_an_encoding_expat_cannot_read_is_a_tool_error() -> None:
    """A multi-byte codec pyexpat has no decoder for raised ValueError, no AirException."""
    doc = '<?xml version="1.0" encoding="UTF-16-BE"?><testsuite name="x"/>'
    with pytest.raises(AirException, match="does not parse") as refused:
        parse_junit(doc.encode("utf-16-be"))
    assert refused.value.kind is ErrorKind.TOOL_ERROR


def test_gtest_and_catch2_outputs_are_understood() -> None:
    gtest = (
        "[==========] Running 2 tests from 1 test suite.\n"
        "[ RUN      ] MathTest.Adds\n"
        "[       OK ] MathTest.Adds (0 ms)\n"
        "[ RUN      ] MathTest.Divides\n"
        "/src/math_test.cc:17: Failure\n"
        "Expected equality of these values:\n"
        "  divide(6, 3)\n"
        "    Which is: 3\n"
        "  2\n"
        "[  FAILED  ] MathTest.Divides (0 ms)\n"
    )
    (f,) = parse_gtest_output(gtest)
    assert (f["test"], f["file"], f["line"]) == ("MathTest.Divides", "/src/math_test.cc", 17)
    assert "Which is: 3" in f["message"]
    catch = (
        "-------------------------------------------------------------------------------\n"
        "divides evenly\n"
        "-------------------------------------------------------------------------------\n"
        "/src/math_test.cpp:9\n"
        "...............................................................................\n"
        "\n"
        "/src/math_test.cpp:11: FAILED:\n"
        "  REQUIRE( divide(6, 3) == 2 )\n"
        "with expansion:\n"
        "  3 == 2\n"
        "\n"
        "===============================================================================\n"
        "test cases: 2 | 1 passed | 1 failed\n"
    )
    (c,) = parse_catch2_output(catch)
    assert (c["test"], c["file"], c["line"]) == ("divides evenly", "/src/math_test.cpp", 11)
    assert "REQUIRE( divide(6, 3) == 2 )" in c["message"]


def test_a_tests_long_output_is_read_in_time_linear_in_it() -> None:
    """A test prints what it likes into ctest's JUnit file (up to the 16 MiB air reads): 4 Mi
    lines under one GoogleTest failure grew its message a line at a time, copying it again for
    each (hours); read in a child with a generous CPU limit rather than timed."""
    done = run_cpu_limited(
        "from air.cpp.testing import parse_catch2_output, parse_gtest_output\n"
        "(f,) = parse_gtest_output('a.cc:1: Failure\\n' + 'x\\n' * 4_000_000)\n"
        "(c,) = parse_catch2_output('a.cc:1: FAILED:\\n' + 'x\\n' * 4_000_000)\n"
        "print(len(f['message']), len(c['message']))\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["7999999", "7999999"]


async def test_cppcheck_uses_the_compile_database_when_configured(cpp_env: Env) -> None:
    _fix_summary(cpp_env.root)
    (cpp_env.root / "spread" / "spread.cpp").write_text(
        (cpp_env.root / "spread" / "spread.cpp").read_text()
        + "int out_of_bounds() { int a[2] = {0, 1}; return a[2]; }\n"
    )
    configured = await _call(cpp_env, "cpp.configure")
    assert _o(configured)["compile_commands"] == "build/compile_commands.json"
    result = await _call(cpp_env, "cpp.cppcheck")
    out = _o(result)
    assert out["used_compile_commands"] is True
    assert out["ok"] is False
    assert any(
        d["code"] == "arrayIndexOutOfBounds" and d["file"] == "spread/spread.cpp"
        for d in out["diagnostics"]
    )
    started = cpp_env.payloads("command.started")[-1]["command"]
    assert "--project=build/compile_commands.json" in started


def test_detector_sees_make_ninja_and_an_existing_compile_database(tmp_path: Path) -> None:
    make = tmp_path / "make"
    make.mkdir()
    (make / "Makefile").write_text("all:\n\tc++ -c a.cpp\n")
    (make / "a.cpp").write_text("int a;\n")
    (make / "build").mkdir()
    (make / "build" / "compile_commands.json").write_text("[]")
    found = CppProjectDetector(which=lambda n: f"/usr/bin/{n}" if n != "clangd" else None).detect(
        str(make)
    )
    assert (found.build_system, found.makefile, found.cmake_lists) == ("make", True, False)
    assert found.compile_commands == "build/compile_commands.json"
    assert found.tools["clangd"] is None
    assert found.sources == 1
    ninja = tmp_path / "ninja"
    ninja.mkdir()
    (ninja / "build.ninja").write_text("")
    assert CppProjectDetector().detect(str(ninja)).build_system == "ninja"
    with pytest.raises(AirException) as caught:
        CppProjectDetector().detect(str(tmp_path / "missing"))
    assert caught.value.kind == "validation_error"


async def test_a_sandboxed_command_outlives_an_idle_trio_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap --die-with-parent kills the sandbox when the thread that forked it exits; Trio's
    worker threads exit when idle (10 s, here 0.2 s), so the fork must not happen in one."""
    import trio._core._thread_cache as thread_cache

    from air.cpp.process import run_argv
    from air.tools.cpp_runner import WatchedCommand, sandboxed_spawn
    from air.tools.limits import ResourceLimits
    from air.tools.sandbox import SandboxRunner, sandbox_environment
    from air.tools.sandbox_spawn import CommandSpace

    sandbox = SandboxRunner()
    sandbox.check_available()  # bubblewrap is needed (scripts/setup.sh installs it)
    monkeypatch.setattr(thread_cache, "IDLE_TIMEOUT", 0.2)
    env = sandbox_environment(os.environ)
    with CommandSpace(ResourceLimits()) as space:
        spawn = sandboxed_spawn(
            sandbox,
            "sleep 1.5; echo done",
            str(tmp_path),
            str(tmp_path),
            env,
            space,
            WatchedCommand(),
        )
        code, out, _err, timed_out = await run_argv(
            (), spawn=spawn, cwd=str(tmp_path), timeout_s=30
        )
    assert (code, out, timed_out) == (0, b"done\n", False)


async def test_a_runaway_output_is_kept_to_its_bound_and_counted(tmp_path: Path) -> None:
    """The toolchain holds each stream's first ``keep`` bytes (64 MiB in use) and counts the
    rest: a build step that prints without end (a Makefile's, which passes it on as it comes)
    no longer grows the parent's memory with it; before, every byte was held until the command
    ended. What streams live still sees all of it."""
    from air.cpp.process import run_argv

    seen = {"stdout": 0, "stderr": 0}

    async def live(name: str, text: str) -> None:
        seen[name] += len(text)

    script = "head -c 3000000 /dev/zero | tr '\\0' x; echo err >&2"
    code, out, err, timed_out = await run_argv(
        ["sh", "-c", script], cwd=str(tmp_path), timeout_s=60, on_output=live, keep=1_000_000
    )
    assert (code, timed_out, err) == (0, False, b"err\n")
    note = b"\n[air kept the first 1,000,000 bytes: 2,000,000 more were not kept]\n"
    assert out == b"x" * 1_000_000 + note
    assert seen == {"stdout": 3_000_000, "stderr": 4}


async def test_a_runaway_stream_of_diagnostics_is_kept_to_its_bound_and_counted(
    tmp_path: Path,
) -> None:
    """Each kept diagnostic is a durable ``diagnostic.created``: a step printing them without
    end grew the session's event log with every one. The first ``DIAGNOSTICS_KEPT`` are kept and
    handed on; the rest are counted, and the build's summary counts them all."""
    from air.cpp.build import CppBuildOutput
    from air.cpp.diagnostics import DIAGNOSTICS_KEPT, DiagnosticCollector, DiagnosticStream
    from air.cpp.process import run_argv

    handed: list[str] = []

    async def record(diagnostic: Any) -> None:
        handed.append(diagnostic.message)

    stream, collector = DiagnosticStream(str(tmp_path)), DiagnosticCollector(record)

    async def parse(_name: str, text: str) -> None:
        await collector.deliver(stream.feed(text) if text else [])

    errors, warnings = DIAGNOSTICS_KEPT + 300, 200
    script = (
        f'for i in $(seq {errors}); do echo "a.cpp:$i:1: error: e$i"; done; '
        f'for i in $(seq {warnings}); do echo "a.cpp:$i:1: warning: w$i"; done'
    )
    await run_argv(["sh", "-c", script], cwd=str(tmp_path), timeout_s=60, on_output=parse)
    await collector.deliver(stream.close())
    assert len(handed) == len(collector.diagnostics) == DIAGNOSTICS_KEPT
    assert handed[0] == "e1"
    assert collector.not_kept == {"error": 300, "warning": warnings}
    summary = CppBuildOutput(
        ok=False,
        exit_code=2,
        diagnostics=collector.diagnostics,
        build_dir="build",
        not_kept=collector.not_kept,
    ).to_json()
    assert (summary["errors"], summary["warnings"]) == (errors, warnings)


def _cmake_step(root: Path, script: str) -> None:
    """``root`` a CMake project (no language) whose one target runs ``script`` with sh."""
    root.mkdir(exist_ok=True)
    (root / "step.sh").write_text(script)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(step NONE)\n"
        "add_custom_target(step ALL COMMAND sh ${CMAKE_SOURCE_DIR}/step.sh)\n"
    )


@pytest.mark.parametrize("tool", ["cpp.build", "cpp.cmake_configure"])
async def test_a_command_counts_the_diagnostics_it_did_not_keep(tmp_path: Path, tool: str) -> None:
    """A real CMake build whose step prints 1,100 errors, a CMakeLists.txt printing 1,100
    warnings: 1,000 handed on, all counted in the summary."""
    from air.cpp.build import CppBuilder, CppBuildInput

    root = tmp_path / "noisy"
    _cmake_step(root, 'for i in $(seq 1100); do echo "a.cpp:$i:1: error: e$i"; done; exit 1\n')
    handed: list[object] = []

    async def record(diagnostic: object) -> None:
        handed.append(diagnostic)

    summary: dict[str, Any]
    if tool == "cpp.build":
        built = await CppBuilder(LocalCommandRunner()).build(
            CppBuildInput(workspace=str(root), timeout_s=120), record
        )
        assert not built.ok
        summary = built.to_json()
        counted = {"errors": 1100, "warnings": 0}
    else:
        with (root / "CMakeLists.txt").open("a") as f:
            f.write('foreach(i RANGE 1 1100)\n  message(WARNING "w${i}")\nendforeach()\n')
        configured = await CMakeConfigurator(LocalCommandRunner()).configure(
            CppCmakeConfigureInput(workspace=str(root), timeout_s=120), record
        )
        assert configured.ok
        summary = configured.to_json()
        counted = {"errors": 0, "warnings": 1100}
    assert len(handed) == 1000
    assert {k: summary[k] for k in counted} == counted


async def test_a_builds_live_output_is_redacted_and_kept_to_its_live_budget(
    tmp_path: Path,
) -> None:
    """A build step's output streams live (``command.*.delta`` events, tool events) redacted,
    up to ``LIVE_CHARS`` a stream, then one note: before, every chunk of a step printing without
    end was redacted on the Trio thread and sent live, three times over. The log artifact holds
    all of it, redacted."""
    from air.tools.cpp import register_cpp_tools
    from air.tools.output import LIVE_CHARS

    env = Env(tmp_path)
    register_cpp_tools(env.registry, env.runner)
    secret = "cpp-live-secret-XYZ"
    env.redactor.register(secret)
    line = f"step {secret} " + "x" * 60 + "\n"
    lines = 3 * LIVE_CHARS // len(line)
    _cmake_step(env.root, f"yes '{line.rstrip()}' | head -n {lines}\n")
    try:
        built = await _call(env, "cpp.build", timeout_s=120)
        assert _o(built)["ok"] is True, built
        (run,) = [r for r in env.rows("command_runs") if r["command"].startswith("cmake --build")]
        stored = env.session.artifacts.read(run["stdout_artifact_id"]).content.decode()
        assert secret not in stored
        assert stored.count(REDACTED) >= lines
        live = "".join(
            e.payload["data"]
            for e in await env.published()
            if e.type == "command.stdout.delta" and e.payload["command_run_id"] == run["id"]
        )
        assert secret not in live
        assert live.startswith(stored[:LIVE_CHARS])
        shown, note = live[:LIVE_CHARS], live[LIVE_CHARS:]
        assert shown == stored[:LIVE_CHARS]
        # past the budget the output is counted as printed, not redacted (a secret is longer)
        found = re.fullmatch(
            r"\n\[(\d+) more characters of stdout were not streamed: see its log artifact\]\n", note
        )
        assert found is not None, note
        assert len(stored) - LIVE_CHARS <= int(found[1]) <= lines * len(line) - LIVE_CHARS
    finally:
        env.close()


async def test_build_outputs_never_show_up_in_git(cpp_env: Env) -> None:
    (cpp_env.root / ".gitignore").unlink()  # a project that ignores nothing
    _fix_summary(cpp_env.root)
    assert _o(await _call(cpp_env, "cpp.build", build_dir="out/debug"))["ok"] is True
    status = git(cpp_env.root, "status", "--porcelain", "--untracked-files=all")
    assert "out/" not in status
    assert "summary/summary.cpp" in status


async def test_a_task_without_a_write_area_builds_and_tests_in_its_view_only(
    cpp_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cpp.build then cpp.test of a read-only task (issue 22 item 3): configured, built and
    tested across calls in the task's view; the project gets no build dir, no .gitignore, no
    JUnit file."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(cpp_env.tmp))  # the view goes with the test
    _fix_summary(cpp_env.root)
    _fix_spread(cpp_env.root)
    git(cpp_env.root, "add", "-A", "--", ".", ":!.air")
    git(cpp_env.root, "commit", "-qm", "fixed")
    before = sorted(p.name for p in cpp_env.root.iterdir())
    ctx = cpp_env.ctx(agent_id="ag_1", write_area=[])
    built = await cpp_env.registry.call("cpp.build", {}, ctx)
    assert _o(built)["ok"] is True, _o(built)
    tested = await cpp_env.registry.call("cpp.test", {}, ctx)
    assert _o(tested)["ok"] is True, _o(tested)
    assert _o(tested)["passed"] >= 2
    assert sorted(p.name for p in cpp_env.root.iterdir()) == before
    assert git(cpp_env.root, "status", "--porcelain", "--ignored", "--", ".", ":!.air") == ""


async def test_a_long_diagnostic_keeps_no_part_of_a_secret_across_its_cut(cpp_env: Env) -> None:
    """A diagnostic's message is kept to 4,000 characters: redacted before the cut (cut first,
    a registered value that began just before it kept its first characters in the event)."""
    secret = "hunter2-registered-value"
    cpp_env.redactor.register(secret)
    src = cpp_env.root / "summary" / "summary.cpp"
    src.write_text(f"#error {'x' * 3983}{secret} after\n" + src.read_text())
    result = await _call(cpp_env, "cpp.build")
    assert _o(result)["ok"] is False
    [message] = [
        d["message"] for d in cpp_env.payloads("diagnostic.created") if "#error" in d["message"]
    ]
    assert message == ("#error " + "x" * 3983 + REDACTED)[:4000]
    assert secret[:5] not in message


async def test_a_key_printed_by_a_build_or_a_test_keeps_no_line_in_their_tails(
    tmp_path: Path,
) -> None:
    """A build step and a test that print a private key longer than the tails their results
    keep (the build's 4,000 characters, ctest's 3,000, a test's own 2,000): the tails were cut
    from the raw output and redacted afterwards, so they began inside the key block, without
    its first line, and kept its lines. Now the output is redacted whole, then cut."""
    from air.tools.cpp import register_cpp_tools

    body = [f"{i:02d}" + "Kq9" * 20 + "x" for i in range(90)]  # 64 characters a line
    key = "\n".join(["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----"])
    env = Env(tmp_path)
    register_cpp_tools(env.registry, env.runner)
    root = env.root
    (root / "key.txt").write_text(key + "\n")
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(leak NONE)\nenable_testing()\n"
        "add_custom_target(step ALL COMMAND cat ${CMAKE_SOURCE_DIR}/key.txt)\n"
        'add_test(NAME leak COMMAND sh -c "cat ${CMAKE_SOURCE_DIR}/key.txt; exit 1")\n'
    )
    try:
        built = await _call(env, "cpp.build", timeout_s=120)
        assert _o(built)["ok"] is True, built
        tested = await _call(env, "cpp.test", timeout_s=120)
        out = _o(tested)
        assert out["failed"] == ["leak"]
        shown = json.dumps([_o(built), out])
        stored = json.dumps([e.model_dump(mode="json") for e in env.events()])
    finally:
        env.close()
    assert "Kq9Kq9" not in shown
    assert "Kq9Kq9" not in stored
    assert REDACTED in out["tests"][0]["output"]


async def test_a_build_never_reads_the_task_s_denied_paths(tmp_path: Path) -> None:
    """A build runs what the project says, which may read any file: the task's denied paths
    are hidden from it as from every command (a build step printing them shows nothing)."""
    from air.tools.cpp import register_cpp_tools

    env = Env(tmp_path)
    register_cpp_tools(env.registry, env.runner)
    (env.root / "secrets").mkdir()
    (env.root / "secrets" / "plan.txt").write_text("denied-plan\n")
    _cmake_step(env.root, "cat ${0%/*}/secrets/plan.txt 2>&1; echo built\n")
    try:
        ctx = env.ctx(agent_id="ag_1", denied_paths=["secrets"])
        built = await env.registry.call("cpp.build", {"timeout_s": 120}, ctx)
        shown = json.dumps([_o(built), [e.model_dump(mode="json") for e in env.events()]])
    finally:
        env.close()
    assert "built" in shown
    assert "denied-plan" not in shown
