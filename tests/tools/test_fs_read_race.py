"""fs.read / fs.list / fs.search against a real symlink-swap race: what is read is what was checked.

A thread flips a workspace path between a legitimate file (or directory) and a symlink to a
planted secret in the user's ``~/.ssh`` (outside the workspace) while the registry reads it
hundreds of times. The permission check sees the legitimate object on some tries and the link on
others; the read must never return the secret (issue #9 item 6: the old check-then-reopen
leaked it 13 times in 800).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException
from air.tools.safefs import read_beneath
from tests.tools.conftest import Env

CANARY = "planted-canary-7f3a9c-not-for-the-model"
TRIES = 800


def _out(res: Any) -> dict[str, Any]:
    assert isinstance(res.output, dict)
    return res.output


@contextmanager
def _flipping(step: Callable[[], None]) -> Iterator[None]:
    stop = threading.Event()
    flips = [0]

    def loop() -> None:
        while not stop.is_set():
            step()
            flips[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
    assert flips[0] > 10, "the flipper thread did not run"


def _plant_secret(env: Env) -> Path:
    ssh = env.home / ".ssh"
    ssh.mkdir(exist_ok=True)
    (ssh / "notes.txt").write_text(CANARY + "\n")
    (ssh / "id_ed25519").write_text(CANARY + "\n")
    return ssh


def _file_flipper(env: Env, name: str, secret: Path) -> Callable[[], None]:
    target = env.root / name
    link_tmp = env.root / f".{name}.link"
    file_tmp = env.root / f".{name}.file"

    def step() -> None:
        try:
            os.symlink(secret, link_tmp)
        except FileExistsError:
            pass
        os.rename(link_tmp, target)
        file_tmp.write_text("legit content\n")
        os.rename(file_tmp, target)

    return step


def _dir_flipper(env: Env, name: str, secret_dir: Path) -> Callable[[], None]:
    target = env.root / name
    real = env.root / f".{name}.real"
    link = env.root / f".{name}.link"

    def step() -> None:
        os.rename(target, real)
        os.symlink(secret_dir, link)
        os.rename(link, target)
        os.rename(target, link)
        os.unlink(link)
        os.rename(real, target)

    return step


async def test_fs_read_never_returns_a_swapped_in_secret(env: Env) -> None:
    secret = _plant_secret(env) / "id_ed25519"
    (env.root / "notes.txt").write_text("legit content\n")
    ctx = env.ctx(headless=True)
    leaks = ok = refused = 0
    with _flipping(_file_flipper(env, "notes.txt", secret)):
        for _ in range(TRIES):
            res = await env.registry.call("fs.read", {"path": "notes.txt"}, ctx)
            if res.status == "ok":
                content = _out(res)["content"]
                leaks += CANARY in content
                ok += "legit content" in content
            else:
                refused += 1
    assert leaks == 0
    # The race really ran both ways: some reads saw the file, some met the link.
    assert ok > 0, (ok, refused)
    assert refused > 0, (ok, refused)


@pytest.mark.slow
async def test_fs_read_through_a_swapped_directory_never_leaks(env: Env) -> None:
    ssh = _plant_secret(env)
    (env.root / "docs").mkdir()
    (env.root / "docs" / "notes.txt").write_text("legit content\n")
    ctx = env.ctx(headless=True)
    leaks = ok = 0
    with _flipping(_dir_flipper(env, "docs", ssh)):
        for _ in range(TRIES):
            res = await env.registry.call("fs.read", {"path": "docs/notes.txt"}, ctx)
            if res.status == "ok":
                leaks += CANARY in _out(res)["content"]
                ok += 1
    assert leaks == 0
    assert ok > 0


async def test_fs_list_never_lists_a_swapped_in_directory(env: Env) -> None:
    ssh = _plant_secret(env)
    (env.root / "listing").mkdir()
    (env.root / "listing" / "a.txt").write_text("a\n")
    ctx = env.ctx(headless=True)
    leaks = ok = 0
    with _flipping(_dir_flipper(env, "listing", ssh)):
        for _ in range(TRIES):
            res = await env.registry.call("fs.list", {"path": "listing"}, ctx)
            if res.status == "ok":
                names = {e["name"] for e in _out(res)["entries"]}
                leaks += bool(names & {"id_ed25519", "notes.txt"})
                ok += names == {"a.txt"}
    assert leaks == 0
    assert ok > 0


async def test_fs_search_never_searches_a_swapped_in_file(env: Env) -> None:
    secret = _plant_secret(env) / "id_ed25519"
    (env.root / "notes.txt").write_text("legit content\n")
    ctx = env.ctx(headless=True)
    leaks = 0
    with _flipping(_file_flipper(env, "notes.txt", secret)):
        for _ in range(200):
            res = await env.registry.call("fs.search", {"pattern": "canary|legit"}, ctx)
            if res.status == "ok":
                leaks += any(CANARY in m["text"] for m in _out(res)["matches"])
    assert leaks == 0


async def test_reads_refuse_links_and_special_files_with_a_clear_error(env: Env) -> None:
    ctx = env.ctx()
    os.symlink(env.root / "src" / "app.py", env.root / "alias.py")
    os.mkfifo(env.root / "pipe")
    for path in ("alias.py", "pipe", "src", "missing.txt"):
        res = await env.registry.call("fs.read", {"path": path}, ctx)
        assert res.status == "error", path
        assert res.error is not None
        assert res.error.user_action
    listed = await env.registry.call("fs.list", {"path": "src/app.py"}, ctx)
    assert listed.status == "error"
    listed = await env.registry.call("fs.list", {}, ctx)
    assert listed.status == "ok"
    kinds = {e["name"]: e["type"] for e in _out(listed)["entries"]}
    assert {k: kinds[k] for k in ("alias.py", "src", "pipe")} == {
        "alias.py": "link",
        "src": "dir",
        "pipe": "file",
    }
    outside = await env.registry.call("fs.read", {"path": str(env.outside / "victim.txt")}, ctx)
    assert outside.status == "ok", outside.error
    assert _out(outside)["content"] == "untouched\n"


def test_a_fifo_never_blocks_the_parent(tmp_path: Path) -> None:
    """A FIFO planted where a write tool reads the old content is refused, not waited on."""
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "pipe")
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(read_beneath(str(root), "pipe"))
        except AirException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # release the blocked reader before failing
        with open(root / "pipe", "wb"):
            pass
        thread.join(5)
    assert outcome, "read_beneath blocked on a FIFO"
    assert isinstance(outcome[0], AirException)
    assert outcome[0].error.kind == "permission_denied"
