"""fs.patch applies exactly what ``git apply`` would (issue #9 item 9), on real git.

The property test generates a file and an edit of it, lets real ``git diff --no-index`` write
the patch (``-- `` lines, ``\\ No newline at end of file``, several hunks), then applies it to a
base that is the original, or the original shifted (offsets), or changed (rejections): through
the registry's fs.patch, and with plain ``git apply`` on a copy. The bytes must be identical, or
both must reject (fs.patch with a clear error and nothing written).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException
from tests.tools.conftest import Env

LINES = ["a", "b", "c", "-- x", "--- y", "+++ z", "-", "", " lead", "@@ q", "\\ n", "t\tab", "end "]
GIT_ENV_KEYS = ("PATH",)


def _plain_env(home: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in GIT_ENV_KEYS if k in os.environ}
    env.update(
        HOME=home,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CEILING_DIRECTORIES=os.path.dirname(home),
    )
    return env


def _make_patch(before: bytes, after: bytes, context: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        for side, data in (("A", before), ("B", after)):
            os.mkdir(os.path.join(tmp, side))
            with open(os.path.join(tmp, side, "f.txt"), "wb") as fh:
                fh.write(data)
        done = subprocess.run(
            ["git", "diff", "--no-index", "--no-color", f"-U{context}", "A/f.txt", "B/f.txt"],
            cwd=tmp,
            env=_plain_env(tmp),
            capture_output=True,
            check=False,
        )
    text = done.stdout.decode()
    return text.replace("a/A/f.txt", "a/f.txt").replace("b/B/f.txt", "b/f.txt")


def _reference(base: bytes, patch: str) -> bytes | None:
    """Plain git apply on a copy: the new bytes, or None when git rejects the patch."""
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "w")
        os.mkdir(work)
        with open(os.path.join(work, "f.txt"), "wb") as fh:
            fh.write(base)
        done = subprocess.run(
            ["git", "apply", "-"],
            input=patch.encode(),
            cwd=work,
            env=_plain_env(tmp),
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            return None
        with open(os.path.join(work, "f.txt"), "rb") as fh:
            return fh.read()


def _git_apply_checks(root: Path, patch: str) -> bool:
    """Plain ``git apply --check`` in the repository, reading its and the user's config."""
    done = subprocess.run(
        ["git", "apply", "--check", "-"],
        input=patch.encode(),
        cwd=root,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _join(lines: list[str], newline: bool) -> bytes:
    text = "\n".join(lines)
    return (text + "\n" if newline and lines else text).encode()


@st.composite
def _case(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, int]:
    line = st.sampled_from(LINES)
    original = draw(st.lists(line, min_size=1, max_size=24))
    edited = list(original)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["del", "ins", "rep"]))
        pos = draw(st.integers(0, max(len(edited) - 1, 0)))
        if op == "del" and edited:
            del edited[pos]
        elif op == "ins":
            edited.insert(pos, draw(line))
        elif edited:
            edited[pos] = draw(line)
    before = _join(original, draw(st.booleans()))
    after = _join(edited, draw(st.booleans()))
    base_kind = draw(
        st.sampled_from(["same", "same", "same", "shift", "shift", "append", "change"])
    )
    base_lines = list(original)
    if base_kind == "shift":
        base_lines = draw(st.lists(line, min_size=1, max_size=5)) + base_lines
    elif base_kind == "append":
        base_lines = base_lines + draw(st.lists(line, min_size=1, max_size=5))
    elif base_kind == "change":
        pos = draw(st.integers(0, len(base_lines) - 1))
        base_lines[pos] = draw(line) + "!"
    newline = before.endswith(b"\n") if base_kind != "append" else draw(st.booleans())
    base = before if base_kind == "same" else _join(base_lines, newline)
    return before, after, base, draw(st.sampled_from([0, 1, 2, 3, 3]))


def _call(env: Env, name: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        return await env.registry.call(name, args, env.ctx(headless=True))

    return trio.run(go)


@pytest.mark.slow
def test_fs_patch_matches_git_apply_on_generated_patches(env: Env) -> None:
    seen = {"cases": 0, "applied": 0, "rejected": 0, "no_newline": 0, "dashdash": 0, "multi": 0}
    target = env.root / "f.txt"

    @settings(
        max_examples=210,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(_case())
    def check(case: tuple[bytes, bytes, bytes, int]) -> None:
        before, after, base, context = case
        if before == after:
            return
        patch = _make_patch(before, after, context)
        assert patch.startswith("diff --git a/f.txt b/f.txt\n"), patch
        expected = _reference(base, patch)
        target.write_bytes(base)
        res = _call(env, "fs.patch", {"patch": patch})
        seen["cases"] += 1
        seen["no_newline"] += "\\ No newline at end of file" in patch
        seen["dashdash"] += "\n--- y" in patch.split("@@", 1)[1] or "\n--- x" in patch
        seen["multi"] += patch.count("\n@@ ") > 1
        if expected is None:
            seen["rejected"] += 1
            assert res.status == "error", patch
            assert res.error.kind == "tool_error"
            assert "git apply" in res.error.message
            assert target.read_bytes() == base
        else:
            seen["applied"] += 1
            assert res.status == "ok", (patch, res.error)
            assert target.read_bytes() == expected, patch

    check()
    assert seen["cases"] >= 200, seen
    assert seen["applied"] >= 90, seen
    assert seen["rejected"] >= 10, seen
    assert seen["no_newline"] >= 20, seen
    assert seen["dashdash"] >= 10, seen
    assert seen["multi"] >= 5, seen


async def test_removing_a_dash_dash_line_really_removes_it(env: Env) -> None:
    (env.root / "notes.md").write_text("keep\n-- signature\nkeep too\n")
    patch = "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,2 @@\n keep\n--- signature\n keep too\n"
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status == "ok", res.error
    assert (env.root / "notes.md").read_text() == "keep\nkeep too\n"


async def test_files_without_a_trailing_newline_are_patched(env: Env) -> None:
    (env.root / "last.txt").write_bytes(b"one\ntwo")
    patch = (
        "--- a/last.txt\n+++ b/last.txt\n@@ -1,2 +1,2 @@\n one\n-two\n"
        "\\ No newline at end of file\n+three\n\\ No newline at end of file\n"
    )
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status == "ok", res.error
    assert (env.root / "last.txt").read_bytes() == b"one\nthree"


async def test_new_files_and_several_files_in_one_patch(env: Env) -> None:
    patch = (
        "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('hello')\n+print('bye')\n"
    )
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status == "ok", res.error
    assert (env.root / "pkg" / "new.py").read_text() == "x = 1\ny = 2\n"
    assert (env.root / "src" / "app.py").read_text() == "print('bye')\n"
    assert res.output is not None
    assert [a["path"] for a in res.output["applied"]] == ["pkg/new.py", "src/app.py"]


async def test_what_fs_patch_does_not_do_is_refused_and_nothing_is_written(env: Env) -> None:
    (env.root / "gone.txt").write_text("bye\n")
    cases = {
        "delete": "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        "exec": "diff --git a/run.sh b/run.sh\nnew file mode 100755\n"
        "--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo hi\n",
        "symlink": "diff --git a/ln b/ln\nnew file mode 120000\n"
        "--- /dev/null\n+++ b/ln\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
        # git creates `sneaky` from a section without ---/+++ lines: not among the checked paths
        "unchecked": "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('hello')\n"
        "+print('x')\ndiff --git a/sneaky b/sneaky\nnew file mode 100644\n",
        "outside": "--- a/../outside/victim.txt\n+++ b/../outside/victim.txt\n"
        "@@ -1 +1 @@\n-untouched\n+PWNED\n",
    }
    for name, patch in cases.items():
        res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
        assert res.status != "ok", name
        assert res.error is not None
        assert res.error.user_action, name
    assert (env.root / "gone.txt").read_text() == "bye\n"
    assert (env.root / "src" / "app.py").read_text() == "print('hello')\n"
    for name in ("run.sh", "ln", "sneaky"):
        assert not (env.root / name).exists(), name
        assert not (env.root / name).is_symlink(), name
    assert (env.outside / "victim.txt").read_text() == "untouched\n"


async def test_git_apply_reads_no_repository_or_user_config(
    env: Env, monkeypatch: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    home = tmp_path / "evilhome"
    home.mkdir()
    config = f"[apply]\n\twhitespace = error\n[core]\n\tfsmonitor = touch {marker}\n"
    (home / ".gitconfig").write_text(config)
    repo_config = env.root / ".git" / "config"
    repo_config.write_text(repo_config.read_text() + config)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    patch = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('hello')\n+print('x')   \n"
    # With either config read, git apply would refuse the trailing whitespace.
    assert not _git_apply_checks(env.root, patch)
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status == "ok", res.error
    assert (env.root / "src" / "app.py").read_text() == "print('x')   \n"
    assert not marker.exists()


async def test_a_symlinked_target_is_refused(env: Env) -> None:
    os.symlink(env.outside / "victim.txt", env.root / "v.txt")
    shutil.copy(env.outside / "victim.txt", env.root / "real.txt")
    patch = "--- a/v.txt\n+++ b/v.txt\n@@ -1 +1 @@\n-untouched\n+PWNED\n"
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status != "ok"
    assert (env.outside / "victim.txt").read_text() == "untouched\n"


async def test_a_file_changed_while_git_applies_is_not_overwritten(
    env: Env, monkeypatch: Any
) -> None:
    import air.tools.git_apply as git_apply_module  # fs.patch imports it at its call (IMPL-BOOT-16)
    from air.tools.git_apply import apply_in_copy as original

    def racing(*args: Any) -> Any:
        result = original(*args)
        (env.root / "src" / "app.py").write_text("edited meanwhile\n")
        return result

    monkeypatch.setattr(git_apply_module, "apply_in_copy", racing)
    patch = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('hello')\n+print('x')\n"
    res = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert res.status == "error"
    assert res.error is not None
    assert "changed while" in res.error.message
    assert (env.root / "src" / "app.py").read_text() == "edited meanwhile\n"


def test_links_and_modes_git_made_in_the_copy_are_refused(tmp_path: Path) -> None:
    from air.tools.git_apply import apply_in_copy

    root = tmp_path / "ws"
    root.mkdir()
    head = "--- /dev/null\n+++ b/{0}\n@@ -0,0 +1 @@\n+x\n"
    link = "diff --git a/ln b/ln\nnew file mode 120000\n" + head.format("ln")
    execu = "diff --git a/r.sh b/r.sh\nnew file mode 100755\n" + head.format("r.sh")
    for patch, path in ((link, "ln"), (execu, "r.sh")):
        with pytest.raises(AirException, match="contents only"):
            apply_in_copy(str(root), patch, [path], False)
    assert list(root.iterdir()) == []
