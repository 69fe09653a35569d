"""IMPL-CPP-5 in the sandbox: a non-cpp command (shell.run's ``guard_build_dirs``) sees the
cpp tools' build dirs read-only and cannot rename them or their parents away; a cpp tool's own
command writes them. Real bwrap, as root and as nobody (``box``)."""

from __future__ import annotations

from tests.tools.sandbox_probe import Sandboxed, chown_tree


def test_a_command_sees_the_cpp_tools_build_dirs_read_only(box: Sandboxed) -> None:
    out = box.run(
        "echo ok > build/spread/CTestTestfile.cmake || echo file-refused; "
        "rm -rf build/spread; mv build/spread build/moved || echo dir-pinned; "
        "mv build b2 || echo parent-pinned; touch build/beside && echo beside-ok",
        claim=("build/spread",),
        guard=True,
    )
    said = str(out["stdout"]).split()
    assert said == ["file-refused", "dir-pinned", "parent-pinned", "beside-ok"], out
    assert "Read-only file system" in str(out["stderr"])
    assert (box.workspace / "build/spread").is_dir()
    assert not (box.workspace / "build/spread/CTestTestfile.cmake").exists()
    # a cpp tool's own command (no guard) writes it
    out = box.run("echo ok > build/spread/CTestTestfile.cmake")
    assert out["exit_code"] == 0, out


def test_what_a_command_writes_under_a_scratch_overlay_never_reaches_the_dir(
    box: Sandboxed,
) -> None:
    build = box.workspace / "build"
    build.mkdir()
    (build / "CTestTestfile.cmake").write_text("add_test(real ./real_test)\n")
    if box.unprivileged:
        chown_tree(box.workspace)
    out = box.run(
        "echo 'add_test(ok /bin/true)' > build/CTestTestfile.cmake && echo x > build/junit.xml "
        "&& cat build/CTestTestfile.cmake",
        cover="build",
    )
    assert out["exit_code"] == 0, out
    assert "add_test(ok /bin/true)" in str(out["stdout"])  # the command saw its own writes
    assert out["thrown_away"] == ["CTestTestfile.cmake", "junit.xml"]
    assert (build / "CTestTestfile.cmake").read_text() == "add_test(real ./real_test)\n"
    assert not (build / "junit.xml").exists()
