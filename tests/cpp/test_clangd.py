"""ClangdClient against the real clangd on examples/cpp-stats; a clangd that ignores SIGTERM
(and a server that never answers) is gone after cancel."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.error import AirException
from air.cpp.clangd import (
    ClangdQueryInput,
    LspFraming,
    _read_text,
    clangd_command,
    open_clangd,
)
from air.cpp.process import LocalCommandRunner
from air.cpp.project import CMakeConfigurator, CppCmakeConfigureInput
from tests.cpp.conftest import EXAMPLE
from tests.tools.conftest import Env


async def _configured(tmp_path: Path) -> Path:
    root = tmp_path / "stats"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".air"))
    out = await CMakeConfigurator(LocalCommandRunner()).configure(
        CppCmakeConfigureInput(workspace=str(root), export_compile_commands=True)
    )
    assert out.compile_commands == "build/compile_commands.json"
    return root


def _gone(pgid: int) -> bool:
    """No live process is left in group ``pgid`` once SIGKILL has landed (bounded wait)."""
    for _ in range(100):
        if _group_empty(pgid):
            return True
        time.sleep(0.05)
    return False


def _group_empty(pgid: int) -> bool:
    """No live process (zombies waiting for PID 1 to reap them are dead) is in group ``pgid``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return False
    return True


async def test_a_query_on_a_real_file_answers(tmp_path: Path) -> None:
    root = await _configured(tmp_path)
    pids: list[int] = []
    with trio.fail_after(60):
        async with open_clangd(
            str(root), ["/bin/bash", "-c", clangd_command("build")], on_pid=pids.append
        ) as client:
            broken = await client.query(ClangdQueryInput("summary/summary.cpp"))
            line = "summary/summary_test.cpp"
            test_src = (root / line).read_text().splitlines()
            row = next(i for i, t in enumerate(test_src) if "stats::mean(" in t)
            col = test_src[row].index("stats::mean(") + len("stats::") + 1
            out = await client.query(ClangdQueryInput(line, line=row + 1, column=col))
    assert any("sort" in d["message"] and d["severity"] == "error" for d in broken.diagnostics)
    assert out.diagnostics == []
    assert out.definition == [{"file": "summary/summary.cpp", "line": 7, "column": 8}]
    assert "summary/summary_test.cpp" in {r["file"] for r in out.references}
    assert len(out.references) >= 2
    assert out.hover is not None
    assert "mean" in out.hover
    assert _gone(pids[0])


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "server.sh"
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


async def test_a_clangd_that_ignores_sigterm_is_gone_after_cancel(tmp_path: Path) -> None:
    root = await _configured(tmp_path)
    # TERM is ignored by the wrapper and (inherited) by clangd; after clangd exits the wrapper
    # lingers: only SIGKILL ends it
    server = _script(
        tmp_path, "trap '' TERM\nclangd --log=error --compile-commands-dir=build\nsleep 1000"
    )
    pids: list[int] = []
    answered = False
    with trio.fail_after(60):
        with trio.move_on_after(30) as scope:
            async with open_clangd(str(root), [server], on_pid=pids.append) as client:
                out = await client.query(ClangdQueryInput("spread/spread.cpp"))
                answered = out.file == "spread/spread.cpp"
                scope.cancel(reason="the caller cancels")
                await trio.sleep_forever()
    assert answered
    assert _gone(pids[0])


async def test_a_server_that_never_answers_is_gone_after_cancel(tmp_path: Path) -> None:
    server = _script(tmp_path, "trap '' TERM\nexec sleep 1000")
    pids: list[int] = []
    with trio.fail_after(30):
        with trio.move_on_after(0.5):
            async with open_clangd(str(tmp_path), [server], init_timeout_s=600, on_pid=pids.append):
                pytest.fail("a server that never answers cannot initialize")
    assert pids
    assert _gone(pids[0])


def test_a_file_swapped_after_its_check_is_never_read(tmp_path: Path) -> None:
    """``ClangdClient.query`` checks the file's real path inside the workspace, then reads it
    and hands the text to clangd, whose diagnostics quote it. A command running beside the call
    that swaps the file (or a directory above it) for a link to a secret between the two, or
    for a FIFO, is refused at the read: what was opened must be the path checked."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "id_rsa").write_text("PLANTED-SECRET\n")
    checked = str(ws / "src" / "a.cpp")
    (ws / "src" / "a.cpp").write_text("int main() {}\n")
    assert _read_text(checked) == "int main() {}\n"
    os.unlink(checked)
    os.symlink(outside / "id_rsa", checked)  # the file itself, swapped for a link
    with pytest.raises(AirException, match="not a file inside"):
        _read_text(checked)
    os.unlink(checked)
    os.rename(ws / "src", ws / "src.old")
    os.symlink(outside, ws / "src")  # a directory above it, swapped for a link
    (outside / "a.cpp").write_text("PLANTED-SECRET\n")
    with pytest.raises(AirException, match="not a file inside"):
        _read_text(checked)
    os.unlink(ws / "src")
    os.rename(ws / "src.old", ws / "src")
    os.mkfifo(checked)  # nothing writes it: an open without O_NONBLOCK would hang
    with pytest.raises(AirException, match="not a file inside"):
        _read_text(checked)


def test_lsp_framing_is_bounded_and_strict() -> None:
    framing = LspFraming(limit=100)
    msg = LspFraming.encode({"jsonrpc": "2.0", "id": 1, "result": None})
    assert framing.feed(msg[:5]) == []
    assert framing.feed(msg[5:] + msg) == [{"jsonrpc": "2.0", "id": 1, "result": None}] * 2
    with pytest.raises(AirException, match="limit"):
        LspFraming(limit=10).feed(msg)
    with pytest.raises(AirException, match="without Content-Length"):
        LspFraming().feed(b"X: 1\r\n\r\n{}")
    with pytest.raises(AirException, match="not an object"):
        LspFraming().feed(b"Content-Length: 2\r\n\r\n[]")


async def _ask(env: Env, file: str, line: int, column: int, **ctx: Any) -> dict[str, Any]:
    """One ``cpp.clangd`` call through the registry; its output, once it succeeded."""
    with trio.fail_after(120):
        result = await env.registry.call(
            "cpp.clangd",
            {"file": file, "line": line, "column": column},
            env.ctx(agent_id="ag_1", **ctx),
        )
    assert result.status == "ok", result.error
    assert isinstance(result.output, dict)
    return result.output


async def test_cpp_clangd_tool_configures_and_answers_through_the_sandbox(cpp_env: Env) -> None:
    out = await _ask(cpp_env, "spread/spread.cpp", 7, 8)
    assert out["configured"]["compile_commands"] == "build/compile_commands.json", out
    assert out["definition"] == [{"file": "spread/spread.h", "line": 6, "column": 8}], out
    assert "variance" in (out["hover"] or "")
    bad = await cpp_env.registry.call(
        "cpp.clangd", {"file": "../outside.cpp"}, cpp_env.ctx(agent_id="ag_1")
    )
    assert bad.status in ("error", "denied")


async def test_a_reviews_clangd_configures_in_its_view_only(
    cpp_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review (the reviewer template, write area None) may ask clangd; the CMake configure
    the call needs writes the task's read-only view, never the project (IMPL-SBX-3)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(cpp_env.tmp))  # the view goes with the test
    before = sorted(p.name for p in cpp_env.root.iterdir())
    out = await _ask(cpp_env, "spread/spread.cpp", 7, 8, permission_template="reviewer")
    assert out["definition"] == [{"file": "spread/spread.h", "line": 6, "column": 8}], out
    assert sorted(p.name for p in cpp_env.root.iterdir()) == before  # no build/ in the project


async def test_the_memory_bound_applies_and_a_dead_clangd_is_a_clear_error(tmp_path: Path) -> None:
    root = await _configured(tmp_path)
    pids: list[int] = []
    with trio.fail_after(30), pytest.raises(AirException) as caught:
        async with open_clangd(
            str(root),
            ["/bin/bash", "-c", clangd_command("build", memory_mb=16)],
            init_timeout_s=20,
            on_pid=pids.append,
        ):
            pytest.fail("clangd cannot start in 16 MiB of address space")
    assert caught.value.kind == "tool_error"
    assert "exited" in caught.value.error.message
    assert _gone(pids[0])


async def test_clangd_and_its_configure_never_read_the_user_s_credential_files(
    cpp_env: Env,
) -> None:
    """IMPL-SBX-3 in both of the tool's sandboxes: cmake's configure and clangd's own reads (an
    ``#include`` of ``.env``) see an empty file; the file on the host is unchanged."""
    (cpp_env.root / ".env").write_text("int planted_value = 7;\n")
    (cpp_env.root / ".gitignore").write_text("build/\n.env\n")
    cmake = cpp_env.root / "CMakeLists.txt"
    cmake.write_text(
        cmake.read_text()
        + 'file(READ "${CMAKE_SOURCE_DIR}/.env" SEEN)\n'
        + 'file(WRITE "${CMAKE_BINARY_DIR}/seen.txt" "[${SEEN}]")\n'
    )
    (cpp_env.root / "spread" / "leak.cpp").write_text(
        '#include "../.env"\nint use() { return planted_value; }\n'
    )
    out = await _ask(cpp_env, "spread/leak.cpp", 2, 21)
    assert (cpp_env.root / "build" / "seen.txt").read_text() == "[]"  # configure saw nothing
    assert out["definition"] == [], out  # clangd found no planted_value in an empty .env
    assert "planted_value" in str(out["diagnostics"])  # ... and says it is undeclared
    assert (cpp_env.root / ".env").read_text() == "int planted_value = 7;\n"
