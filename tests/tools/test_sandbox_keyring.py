"""A sandboxed command cannot reach the kernel's keyrings (IMPL-SBX-1).

Keyrings are not namespaced by bubblewrap: a command inherited air's session keyring and
could search and read what the user's session keeps there (Kerberos tickets, network file
system credentials, file encryption keys). ``keyctl``, ``add_key`` and ``request_key`` are
unknown calls (ENOSYS) in the sandbox, as in Flatpak's and Docker's default filters. Run as
root and as nobody: a key is planted in this process's session keyring, which the probe and
its sandbox inherit.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools.sandbox_probe import IDENTITIES, Sandboxed

_ADD_KEY, _KEYCTL = 248, 250  # x86_64's numbers, as in READ_IT: the machines this suite runs on
_SESSION = -3  # KEY_SPEC_SESSION_KEYRING
_SEARCH, _READ, _INVALIDATE = 10, 11, 21
SECRET = b"AIRSBXSECRETKEYRING"

READ_IT = r"""python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def res(value):
    return "ok" if value >= 0 else os.strerror(ctypes.get_errno())
found = libc.syscall(250, 10, -3, b"user", b"air-sandbox-test", 0)
print("search", res(found))
if found > 0:
    buf = ctypes.create_string_buffer(64)
    size = libc.syscall(250, 11, found, buf, 64)
    print("read", buf.raw[: max(size, 0)].decode())
print("add_key", res(libc.syscall(248, b"user", b"planted", b"x", 1, -3)))
print("request_key", res(libc.syscall(249, b"user", b"air-sandbox-test", None, 0)))
PY"""


def _syscall() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    call = libc.syscall
    call.restype = ctypes.c_long
    return call


@pytest.fixture
def planted() -> Iterator[int]:
    """A key in this process's session keyring (the probe and its sandbox inherit it)."""
    syscall = _syscall()
    key = syscall(_ADD_KEY, b"user", b"air-sandbox-test", SECRET, len(SECRET), _SESSION)
    assert key > 0, os.strerror(ctypes.get_errno())
    yield key
    syscall(_KEYCTL, _INVALIDATE, key)


@pytest.fixture(params=IDENTITIES)
def box(request: pytest.FixtureRequest, tmp_path: Path, planted: int) -> Iterator[Sandboxed]:
    made = Sandboxed(tmp_path, request.param, {})
    yield made
    made.close()


def test_no_keyring_is_reachable(box: Sandboxed, planted: int) -> None:
    buf = ctypes.create_string_buffer(64)
    assert _syscall()(_KEYCTL, _READ, planted, buf, 64) == len(SECRET)  # air's own can
    out = box.run(READ_IT)
    assert out["exit_code"] == 0, out
    unknown = "Function not implemented"
    assert str(out["stdout"]).splitlines() == [
        f"search {unknown}",
        f"add_key {unknown}",
        f"request_key {unknown}",
    ], out
    assert SECRET.decode() not in str(out)
