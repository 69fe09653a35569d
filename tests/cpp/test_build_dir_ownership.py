"""IMPL-CPP-5: the cpp tools' build dirs are theirs. fs.write never writes in one (a command
sees them read-only, cpp.test's tests write them only behind a throwaway overlay:
tests/tools/test_sandbox_build_dirs.py), and one the cpp tools did not make (shipped by the
repository, prepared by a command) is made afresh: `air run --headless` refuses a change whose
real tests fail however the build dir was forged, and accepts the honest fix whose agent runs a
test binary through shell.run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.cpp.project import mark_build_dir
from air.tools.build_dirs import claim_build_dir, refuse_build_dir_write
from air.tree_walk import make_dirs, remove_tree
from tests.cpp.test_example import _air, _claim, _db, _project, _use
from tests.gitrepo import git
from tests.tools.conftest import Env

B = {"source_dir": "spread", "build_dir": "build/spread"}
T = {"build_dir": "build/spread"}
COMMENT = {
    "path": "spread/spread.cpp",
    "old_string": "double squares = 0.0;",
    "new_string": "double squares = 0.0;  // sum of squared deviations",
}
FORGE = 'file(WRITE build/spread/CTestTestfile.cmake "add_test(ok /bin/true)\\n")\n'


def test_a_build_dir_the_cpp_tools_did_not_make_is_made_afresh(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    planted = ws / "build"
    planted.mkdir(parents=True)
    (planted / "CMakeCache.txt").write_text("CMAKE_CXX_COMPILER_LAUNCHER:STRING=/bin/true\n")
    assert claim_build_dir(str(ws), "build") is False
    assert list(planted.iterdir()) == []
    (planted / "CMakeCache.txt").write_text("by cmake\n")
    assert claim_build_dir(str(ws), "build") is True  # its own: kept
    assert (planted / "CMakeCache.txt").exists()
    planted.rename(ws / "aside")
    (ws / "aside").rename(planted)  # the same inode back: still its own
    assert claim_build_dir(str(ws), "build") is True
    subprocess.run(["rm", "-rf", str(planted)], check=True)
    planted.mkdir()  # another dir at the same path
    (planted / "CTestTestfile.cmake").write_text("add_test(ok /bin/true)\n")
    assert claim_build_dir(str(ws), "build") is False
    assert not (planted / "CTestTestfile.cmake").exists()
    (ws / "src" / "b").mkdir(parents=True)
    (ws / "src" / "b" / "main.cpp").write_text("int main() {}\n")
    (ws / "out").symlink_to("src")
    with pytest.raises(AirException) as caught:
        claim_build_dir(str(ws), "out/b")  # never a dir reached through a link
    assert caught.value.error.kind == "policy_error"
    assert (ws / "src" / "b" / "main.cpp").exists()  # nothing removed through it


def test_no_directory_is_made_through_a_link_put_in_the_way_after_the_check(
    tmp_path: Path,
) -> None:
    """``safe_build_dir`` checked ``out/b/build`` leads inside; a command then put a link at
    ``out``. The build dir's parents were made with ``os.makedirs`` (following it: ``b``
    made outside), and cmake's configure marked the dir with its ``.gitignore`` there too.
    Now both walk a component at a time without following a link: refused, nothing made."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "out").symlink_to(outside)
    with pytest.raises(AirException) as caught:
        claim_build_dir(str(ws), "out/b/build")
    assert caught.value.error.kind == "policy_error"
    with pytest.raises(AirException) as marked:
        mark_build_dir(str(ws), "out/b/build")
    assert marked.value.error.kind == "policy_error"
    assert list(outside.iterdir()) == []
    (ws / "out").unlink()
    (ws / "out").mkdir()
    mark_build_dir(str(ws), "out/b/build")  # without the link: made and marked
    assert (ws / "out" / "b" / "build" / ".gitignore").read_text().endswith("\n*\n")
    assert claim_build_dir(str(ws), "out/b/build") is False


def test_the_persons_build_dir_in_the_project_itself_is_adopted_never_removed(
    tmp_path: Path,
) -> None:
    """A task without a workspace of its own (``main`` isolation, a lone non-git writer) works
    in the person's project: the build dir there holds their configuration and hours of
    objects. It was removed at the first cpp tool call; it is now owned as it is."""
    project = tmp_path / "project"
    build = project / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n")
    (build / "big.o").write_bytes(b"\x7fELF")
    assert claim_build_dir(str(project), "build", adopt=True) is True
    assert sorted(p.name for p in build.iterdir()) == ["CMakeCache.txt", "big.o"]
    with pytest.raises(AirException):  # adopted: the cpp tools' from now on
        refuse_build_dir_write(str(project), str(build / "CMakeCache.txt"))
    assert claim_build_dir(str(project), "fresh", adopt=True) is False  # none there: made
    assert (project / "fresh").is_dir()
    (project / "elsewhere").mkdir()
    (project / "linked").symlink_to("elsewhere")
    with pytest.raises(AirException) as caught:
        claim_build_dir(str(project), "linked/b", adopt=True)  # never through a link
    assert caught.value.error.kind == "policy_error"


def test_a_planted_build_dir_1500_deep_is_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    deep = ws / "build" / os.path.join(*["d"] * 1_500)
    make_dirs(str(deep))
    (deep / "CTestTestfile.cmake").write_text("add_test(ok /bin/true)\n")
    try:
        assert claim_build_dir(str(ws), "build") is False  # shutil.rmtree: RecursionError
        assert list((ws / "build").iterdir()) == []
    finally:
        remove_tree(str(ws), ignore_errors=True)  # pytest's own cleanup recurses


def test_the_cpp_tools_adopt_only_in_the_project_itself(tmp_path: Path) -> None:
    from air.contracts.tool_runs import ToolExecutionContext
    from air.tools.cpp import _claim_in

    project, worktree = tmp_path / "project", tmp_path / "worktree"
    for root in (project, worktree):
        (root / "build").mkdir(parents=True)
        (root / "build" / "CMakeCache.txt").write_text("theirs\n")

    def ctx(workspace: Path) -> ToolExecutionContext:
        return ToolExecutionContext.model_validate(
            {"session_id": "s", "project_root": str(project), "workspace_root": str(workspace)}
        )

    assert _claim_in(ctx(project), str(project), "build") is True
    assert (project / "build" / "CMakeCache.txt").exists()
    assert _claim_in(ctx(worktree), str(worktree), "build") is False  # a task's own: afresh
    assert not (worktree / "build" / "CMakeCache.txt").exists()


def test_the_dirs_of_a_removed_workspace_hold_no_fd(tmp_path: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    for i in range(40):
        (tmp_path / f"ws{i}").mkdir()
    claim_build_dir(str(tmp_path / "ws0"), "build")
    before = open_fds()
    for i in range(1, 40):
        claim_build_dir(str(tmp_path / f"ws{i}"), "build")
        shutil.rmtree(tmp_path / f"ws{i}")
    assert open_fds() <= before + 1


@pytest.mark.slow
async def test_fs_write_refuses_a_cpp_build_dir(cpp_env: Env) -> None:
    ctx = cpp_env.ctx(agent_id="ag_1")
    built = await cpp_env.registry.call("cpp.build", {"source_dir": "spread"}, ctx)
    assert built.status == "ok", built.error
    path = "build/CTestTestfile.cmake"
    read = await cpp_env.registry.call("fs.read", {"path": path}, ctx)
    assert read.status == "ok", read.error
    first = (cpp_env.root / path).read_text().splitlines()[0]
    patch = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{first}\n+add_test(ok /bin/true)\n"
    for tool, forged in (
        ("fs.write", {"path": path, "content": "add_test(ok /bin/true)\n"}),
        ("fs.edit", {"path": path, "old_string": first, "new_string": "add_test(ok /bin/true)"}),
        ("fs.patch", {"patch": patch}),
    ):
        out = await cpp_env.registry.call(tool, forged, ctx)
        assert out.error is not None, (tool, out)
        assert out.error.kind == "policy_error", (tool, out.error)
        assert "only the cpp tools write" in out.error.message
    assert "add_test(ok" not in (cpp_env.root / "build/CTestTestfile.cmake").read_text()


def _batch(tmp_path: Path, turns: list[str]) -> tuple[Path, Path]:
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "version: 1\nname: forged\ndefaults: {constraints: "
        "{max_turns: 10, retry_budget: 0, hard_timeout_ms: 120000}}\n"
        "tasks:\n"
        "  - id: fix-spread\n    title: claims a fix\n    description: d\n"
        "    scope: {write_area: ['spread/spread.cpp']}\n"
    )
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    read = _use("t0", "fs.read", {"path": "spread/spread.cpp"})
    done = _claim("All good.", {"changes_made": True})
    (cassettes / "fix-spread.jsonl").write_text("\n".join([read, *turns, done]) + "\n")
    return batch, cassettes


def _outcome(root: Path) -> tuple[str, dict[str, object] | None]:
    conn = _db(root)
    (status,) = conn.execute("SELECT status FROM tasks WHERE id = 'fix-spread'").fetchone()
    failed = conn.execute("SELECT payload_json FROM events WHERE type = 'task.failed'").fetchone()
    return status, json.loads(failed[0])["error"] if failed else None


def _refused_with_the_real_failure(root: Path, batch: Path, cassettes: Path) -> None:
    proc = _air(root, batch, cassettes)
    assert proc.returncode != 0, proc.stderr
    status, error = _outcome(root)
    assert status == "failed"
    assert error is not None
    assert error["kind"] == "verification_failed"
    assert error["semantic_signature"] == "ctest:spread.variance"


@pytest.mark.slow
def test_a_ctest_file_forged_by_a_command_does_not_complete_the_task(tmp_path: Path) -> None:
    root = _project(tmp_path)
    fixed = (
        (root / "spread/spread.cpp")
        .read_text()
        .replace(COMMENT["old_string"], COMMENT["new_string"])
    )
    batch, cassettes = _batch(
        tmp_path,
        [
            _use("t1", "fs.edit", COMMENT),
            _use("t2", "cpp.build", B),
            _use("t3", "fs.write", {"path": "spread/spread.cpp", "content": FORGE}),
            _use("t4", "shell.run", {"command": "cmake -P spread/spread.cpp"}),
            _use("t5", "fs.write", {"path": "spread/spread.cpp", "content": fixed}),
            _use("t6", "cpp.build", B),
            _use("t7", "cpp.test", T),
        ],
    )
    _refused_with_the_real_failure(root, batch, cassettes)
    (exit_code,) = (
        _db(root)
        .execute("SELECT exit_code FROM command_runs WHERE command = 'cmake -P spread/spread.cpp'")
        .fetchone()
    )
    assert exit_code != 0  # file(WRITE) in the build dir: a read-only file system


@pytest.mark.slow
def test_a_ctest_file_forged_by_the_tests_own_code_does_not_complete_the_task(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    original = (root / "spread/spread.cpp").read_text()
    fixed = original.replace(COMMENT["old_string"], COMMENT["new_string"])
    forging = original + (
        "\n#include <cstdio>\nstatic int forged = [] {\n"
        '  if (FILE* f = std::fopen("CTestTestfile.cmake", "w")) {\n'
        '    std::fputs("add_test(ok /bin/true)\\n", f);\n    std::fclose(f);\n  }\n'
        "  return 0;\n}();\n"
    )
    batch, cassettes = _batch(
        tmp_path,
        [
            _use("t1", "fs.write", {"path": "spread/spread.cpp", "content": forging}),
            _use("t2", "cpp.build", B),
            _use("t3", "cpp.test", T),  # spread_test rewrites its CTestTestfile.cmake
            _use("t4", "fs.write", {"path": "spread/spread.cpp", "content": fixed}),
            _use("t5", "cpp.build", B),
            _use("t6", "cpp.test", T),
        ],
    )
    _refused_with_the_real_failure(root, batch, cassettes)


@pytest.mark.slow
def test_a_build_dir_the_repository_ships_does_not_complete_the_task(tmp_path: Path) -> None:
    root = _project(tmp_path)
    shipped = root / "build" / "spread"
    shipped.mkdir(parents=True)
    (shipped / "CMakeCache.txt").write_text(
        "CMAKE_GENERATOR:INTERNAL=Unix Makefiles\nCMAKE_MAKE_PROGRAM:FILEPATH=/usr/bin/make\n"
        "CMAKE_PROJECT_NAME:STATIC=spread\n"
    )
    (shipped / "Makefile").write_text("all:\n\t@true\n")
    (shipped / "CTestTestfile.cmake").write_text("add_test(ok /bin/true)\n")
    git(root, "add", "-f", "build")
    git(root, "commit", "-qm", "ship a build dir")  # the one helper: it names a committer
    batch, cassettes = _batch(
        tmp_path,
        [_use("t1", "fs.edit", COMMENT), _use("t2", "cpp.build", B), _use("t3", "cpp.test", T)],
    )
    _refused_with_the_real_failure(root, batch, cassettes)


@pytest.mark.slow
def test_the_honest_fix_with_a_test_binary_run_by_shell_completes(tmp_path: Path) -> None:
    root = _project(tmp_path)
    fix = {
        "path": "spread/spread.cpp",
        "old_string": "return squares / (values.size() - 1);",
        "new_string": "return squares / values.size();",
    }
    batch, cassettes = _batch(
        tmp_path,
        [
            _use("t1", "fs.edit", fix),
            _use("t2", "cpp.build", B),
            _use("t3", "shell.run", {"command": "./build/spread/spread_test variance"}),
            _use("t4", "cpp.build", B),
            _use("t5", "cpp.test", T),
        ],
    )
    proc = _air(root, batch, cassettes)
    assert proc.returncode == 0, proc.stderr
    status, _ = _outcome(root)
    assert status == "completed"
    (exit_code,) = (
        _db(root)
        .execute("SELECT exit_code FROM command_runs WHERE command LIKE '%spread_test variance%'")
        .fetchone()
    )
    assert exit_code == 0
