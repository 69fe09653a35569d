"""bwrap binds the ``.git`` entry air checked, not what its path holds later; ``.air`` is hidden.

Another command running in the same workspace could swap ``.git`` (or ``.air``) for a relative
symlink to a secret between air's check and bwrap's mount; bwrap would then mount the secret
inside the sandbox. ``.air`` is no longer bound at all (an empty tmpfs hides it, only where it
resolves inside the workspace). ``pin_protected`` opens ``.git`` once
(``O_PATH | O_NOFOLLOW``) and the sandbox binds that fd, so the swap exposes nothing. The race
window is reproduced exactly: pin, swap, then spawn.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from air.tools.sandbox import SandboxRunner, pin_protected, sandbox_environment


def test_a_swap_after_the_check_exposes_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".air").mkdir(parents=True)
    (ws / ".air" / "state.txt").write_text("air's own\n")
    (ws / ".git").write_text("gitdir: /nonexistent\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("AIRSBXSECRETPINNED\n")
    (tmp_path / "gitfile").write_text("AIRSBXSECRETGITFILE\n")
    pinned = pin_protected(str(ws))
    try:
        assert set(pinned) == {str(ws / ".git")}
        # the swap a concurrent command would do: relative symlinks to the secret
        (ws / ".air").rename(ws / ".air-old")
        # ".." exists at the same path outside and inside the sandbox: a path-based bind
        # would mount the outside directory, secret and all, over the inside one
        (ws / ".air").symlink_to("..")
        (ws / ".git").rename(ws / ".git-old")
        (ws / ".git").symlink_to("../gitfile")
        runner = SandboxRunner()
        argv = runner.argv(
            f"cat {ws}/.git; ls {ws}/.air; cat {secret}/key.txt",
            workspace=str(ws),
            cwd=str(ws),
            network=False,
            pinned=pinned,
        )
        done = subprocess.run(
            argv,
            env=sandbox_environment(os.environ),
            pass_fds=tuple(pinned.values()),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for fd in pinned.values():
            os.close(fd)
    assert "AIRSBXSECRET" not in done.stdout + done.stderr, done
    # bwrap either mounts what air checked or notices the swap and refuses to start
    assert done.stdout.splitlines()[:1] == ["gitdir: /nonexistent"] or (
        "Race condition" in done.stderr
    ), done
    assert "state.txt" not in done.stdout, done


def test_symlinked_entries_are_not_pinned(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (ws / ".air").symlink_to("../elsewhere")
    (ws / ".git").symlink_to("../elsewhere")
    assert pin_protected(str(ws)) == {}
