"""Path escapes × every write operation (fs.write, fs.edit, fs.patch, shell redirects): 0 escapes,
and a symlink flipped by another process during 10,000 edits never lets a write out."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from air.contracts.error import AirException
from air.contracts.permission import PermissionAction
from air.contracts.permission_records import PermissionRequestContext
from air.tools.fs import edit_file
from tests.tools.conftest import Env


def _escape_paths(env: Env) -> list[str]:
    root, out, home = env.root, env.outside, env.home
    os.symlink(out, root / "link_out")
    os.symlink(out / "victim.txt", root / "file_link")
    os.symlink(root / ".git", root / "gitlink")
    os.symlink("/etc", root / "etc_link")
    os.symlink(home, root / "home_link")
    (root / "sub").mkdir()
    os.symlink("../../outside", root / "sub" / "rel_link")
    os.link(out / "victim.txt", root / "hardlink.txt")
    base = [
        "../outside/victim.txt",
        "../outside/new.txt",
        "../../x",
        "src/../../outside/victim.txt",
        "./../outside/a",
        "sub/../../outside/b",
        str(out / "victim.txt"),
        str(out / "new.txt"),
        "/etc/passwd",
        "/etc/hosts",
        "/tmp/../etc/shadow",
        "/root/.bashrc",
        "/usr/bin/python3",
        "~/.bashrc",
        "~/.ssh/authorized_keys",
        "~/x.txt",
        "~",
        "~/.air/permissions.yaml",
        "link_out/victim.txt",
        "link_out/new.txt",
        "link_out/",
        "file_link",
        "sub/rel_link/victim.txt",
        "gitlink/config",
        "gitlink/hooks/pre-commit",
        "etc_link/passwd",
        "home_link/.bashrc",
        "hardlink.txt",
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/HEAD",
        ".git/info/exclude",
        ".GIT/config",
        ".Git/hooks/post-checkout",
        ".git./config",
        "src/../.git/config",
        ".git//config",
        "./.git/hooks/",
        ".air/shared/permissions.yaml",
        ".air/local/x",
        ".bashrc",
        ".zshrc",
        ".profile",
        ".envrc",
        ".env",
        "keys/id_rsa",
        "server.pem",
        "../proj/.git/config",
        str(root / ".git" / "config"),
        str(root) + "/../outside/v",
        "$HOME/x",
        "`id`/x",
        "link_out/../victim.txt",
        "src/../link_out/z",
        "home_link/",
        "/dev/sda",
        "/proc/self/mem",
        "/sys/kernel/x",
        "/boot/grub/grub.cfg",
        "/var/spool/cron/x",
        "/etc/cron.d/job",
        str(home / ".ssh" / "id_ed25519"),
        "../outside/../outside/victim.txt",
        "sub/rel_link/",
        "~root/.profile",
    ]
    return base


def _ctx(env: Env, paths: list[str], command: str | None = None) -> PermissionRequestContext:
    return PermissionRequestContext(
        session_id=env.session_id,
        task_id="task_1",
        tool_name="fs.write",
        permission_template="executor",
        project_root=str(env.root),
        workspace_root=str(env.root),
        write_paths=paths,
        command=command,
    )


def _snapshot(env: Env) -> dict[str, str]:
    snap: dict[str, str] = {}
    for base in (env.outside, env.home, env.root / ".git", env.root / ".air"):
        for dirpath, dirs, files in os.walk(base):
            # The session's own DB and artifacts change as the tools record; skip them.
            dirs[:] = [d for d in dirs if os.path.join(dirpath, d) != str(env.session_dir)]
            for name in files:
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    continue
                with open(full, "rb") as fh:
                    snap[full] = hashlib.sha256(fh.read()).hexdigest()
    return snap


async def test_escape_cases_times_every_write_operation(env: Env) -> None:
    (env.root / ".air" / "shared" / "permissions.yaml").write_text("rules: []\n")
    paths = _escape_paths(env)
    assert len(paths) >= 60
    before = _snapshot(env)
    ctx = env.ctx()
    auto = (PermissionAction.ALLOW, PermissionAction.ANNOUNCE_THEN_RUN)
    ran = 0
    for path in paths:
        await env.registry.call("fs.read", {"path": "src/app.py"}, ctx)
        results = [
            await env.registry.call("fs.write", {"path": path, "content": "PWNED"}, ctx),
            await env.registry.call(
                "fs.edit",
                {
                    "path": path,
                    "old_string": "untouched",
                    "new_string": "PWNED",
                    "expected_existing_sha256": "0" * 64,
                },
                ctx,
            ),
            await env.registry.call(
                "fs.patch",
                {"patch": f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-untouched\n+PWNED\n"},
                ctx,
            ),
        ]
        for res in results:
            assert res.status != "ok", (path, res.tool_name)
            ran += 1
        for command in (f"echo PWNED > {path}", f"echo PWNED >> '{path}'", f"cat x >& {path}"):
            decision = env.engine.evaluate_sync(_ctx(env, [], command))
            assert decision.action not in auto, command
            ran += 1
    assert ran == len(paths) * 6
    assert _snapshot(env) == before
    assert "PWNED" not in (env.outside / "victim.txt").read_text()


_FLIPPER = """
import os, sys
real, backup, outside = sys.argv[1:4]
while True:
    try:
        os.rename(real, backup)
        os.symlink(outside, real)
        os.unlink(real)
        os.rename(backup, real)
    except OSError:
        pass
"""


def test_symlink_flip_race_never_writes_outside(env: Env) -> None:
    real = env.root / "real"
    real.mkdir()
    (real / "t.txt").write_text("counter 0\n")
    (env.outside / "t.txt").write_text("counter 0\n")
    flipper = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(real), str(env.root / "real.bak"), str(env.outside)]
    )
    ok = refused = 0
    try:
        for i in range(10_000):
            # What fs.edit does: resolve, then write beneath the workspace with O_NOFOLLOW.
            try:
                target = os.path.realpath(real / "t.txt")
                text = Path(target).read_text()
                edit_file(str(env.root), target, text, f"counter {i + 1}\n")
                ok += 1
            except (AirException, OSError):
                refused += 1
    finally:
        flipper.kill()
        flipper.wait()
    assert ok + refused == 10_000
    assert ok > 0
    assert refused > 0
    assert (env.outside / "t.txt").read_text() == "counter 0\n"
    assert sorted(os.listdir(env.outside)) == ["t.txt", "victim.txt"]
