"""The sandbox holds no privilege (issue 9 item 2), as root and as an unprivileged user.

Real bwrap through ``open_sandboxed`` (the spawn shell.run uses): no capability at all, the
no-new-privileges bit set, a uid other than 0, no remount, no write outside the workspace, no
raw socket, no nested user namespace.
"""

from __future__ import annotations

import os
import uuid

from tests.tools.sandbox_probe import Sandboxed


def _status(box: Sandboxed) -> dict[str, str]:
    out = box.run("cat /proc/self/status")
    fields = (line.split(":", 1) for line in str(out["stdout"]).splitlines() if ":" in line)
    return {k: v.strip() for k, v in fields}


def test_no_capability_and_no_new_privileges(box: Sandboxed) -> None:
    status = _status(box)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[cap], 16) == 0, (cap, status[cap])
    assert status["NoNewPrivs"] == "1"
    uid = box.run("id -u")
    assert uid["exit_code"] == 0
    assert str(uid["stdout"]).strip() != "0"
    nested = box.run("unshare --user --map-root-user true")
    assert nested["exit_code"] != 0


def test_remount_and_writes_outside_the_workspace_fail(box: Sandboxed) -> None:
    tag = uuid.uuid4().hex
    real_home = os.path.expanduser("~")
    bashrc = box.home / ".bashrc"
    before = bashrc.read_bytes()
    targets = [
        f"/var/tmp/air-sbx-{tag}",
        f"/etc/air-sbx-{tag}",
        "/etc/passwd",
        "/etc/hosts",
        f"/usr/air-sbx-{tag}",
        f"/air-sbx-{tag}",
        f"{real_home}/.bashrc",
        str(bashrc),
    ]
    try:
        for remount in ("/", "/usr", "/etc"):
            out = box.run(f"mount -o remount,rw {remount}")
            assert out["exit_code"] != 0, (remount, out)
        # `: >>` opens for writing and writes nothing: harmless even where it would succeed.
        for target in targets:
            out = box.run(f": >> {target}")
            assert out["exit_code"] != 0, (target, out)
        assert bashrc.read_bytes() == before
        for leftover in (f"/var/tmp/air-sbx-{tag}", f"/etc/air-sbx-{tag}", f"/usr/air-sbx-{tag}"):
            assert not os.path.lexists(leftover)
        # the HOME a command sees is fresh, writable and not air's own
        out = box.run("echo $HOME; touch ~/made && ls -A ~")
        assert out["exit_code"] == 0, out
        assert str(out["stdout"]).split() == ["/home/air", "made"]
        assert not (box.home / "made").exists()
    finally:
        for leftover in (f"/var/tmp/air-sbx-{tag}", f"/etc/air-sbx-{tag}", f"/usr/air-sbx-{tag}"):
            if os.path.lexists(leftover):
                os.unlink(leftover)


def test_raw_sockets_and_privileged_calls_fail(box: Sandboxed) -> None:
    raw = box.run("python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)'")
    assert raw["exit_code"] != 0
    assert "PermissionError" in str(raw["stderr"]) or "not permitted" in str(raw["stderr"])
    for command in ("hostname evil", "chown 0:0 .", "mknod node c 1 3", "chroot / true"):
        out = box.run(command)
        assert out["exit_code"] != 0, (command, out)
