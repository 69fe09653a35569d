"""A host's artifacts and lines as they arrive, in the parent (IMPL-REMOTE-5), without ssh: the
parent's half against the real session store and redactor (the whole path, over this machine's
sshd, is in tests/remote/test_hostile_executor.py and ``bench/remote.py --output``).

A 200 MB command log came as one line of 267 MB: joined and scanned again at each 1 MiB read
(80 MB took 49 s of the Trio thread), then parsed, decoded and redacted whole on it. Now lines
are read once each, and an artifact comes in pieces the parent writes as they arrive: what it
stores equals redacting the whole, however the pieces were cut."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
import trio
import trio.testing

from air.contracts.ids import new_id
from air.contracts.tool import ToolCategory, ToolDefinition
from air.remote.artifacts import OPEN_MAX, RemoteArtifacts
from air.remote.hosts import HostConfig
from air.remote.session import ExecutorSession
from air.tools.run import ToolRun
from tests.tools.conftest import Env

SECRET = "sk-remote-0123456789abcdefghij"


def _run(env: Env) -> ToolRun:
    env.redactor.register(SECRET)
    definition = ToolDefinition(
        name="shell.run", description="d", category=ToolCategory.SHELL, input_schema={}
    )
    return ToolRun(new_id("tr"), definition, env.ctx(), env.registry)


def _bytes(path: str | Path) -> bytes:
    return Path(path).read_bytes()


def _files(root: str | Path) -> list[str]:
    return [p.name for p in Path(root).iterdir()] if Path(root).exists() else []


def _opened(name: str) -> dict[str, object]:
    return {"id": name, "type": "log", "slug": "stdout", "extension": ".log"}


def _part(name: str, data: bytes) -> dict[str, object]:
    return {"id": name, "content": base64.b64encode(data).decode()}


@pytest.mark.parametrize("cut", [1, 7, len(SECRET) // 2, 4096, 70_000])
async def test_pieces_are_stored_as_the_whole_redacted(env: Env, cut: int) -> None:
    text = ("line one\n" + f"token={SECRET} and more\n" * 3 + "é" * 40_000 + "\nend").encode()
    artifacts = RemoteArtifacts(_run(env))
    await artifacts.line("artifact.open", _opened("a1"))
    for at in range(0, len(text), cut):
        await artifacts.line("artifact.part", _part("a1", text[at : at + cut]))
    ref = await artifacts.line("artifact.commit", {"id": "a1"})
    assert ref is not None
    stored = _bytes(ref.path)
    assert stored == env.redactor.redact_bytes(text)
    assert SECRET.encode() not in stored
    assert "artifact.created" in env.types()


async def test_a_whole_artifact_line_of_an_earlier_executor_is_stored_too(env: Env) -> None:
    artifacts = RemoteArtifacts(_run(env))
    whole = {**_opened("a1"), **_part("a1", f"x {SECRET}\n".encode())}
    ref = await artifacts.line("artifact", whole)
    assert ref is not None
    assert _bytes(ref.path) == env.redactor.redact_bytes(f"x {SECRET}\n".encode())


async def test_lines_no_executor_sends_are_refused_and_leave_nothing(env: Env) -> None:
    artifacts = RemoteArtifacts(_run(env))
    with pytest.raises(KeyError):  # a piece of an artifact never opened
        await artifacts.line("artifact.part", _part("nope", b"x"))
    await artifacts.line("artifact.open", _opened("a1"))
    with pytest.raises(ValueError, match="opened twice"):
        await artifacts.line("artifact.open", _opened("a1"))
    with pytest.raises(ValueError, match="Only base64 data"):
        await artifacts.line("artifact.part", {"id": "a1", "content": "not base64!"})
    with pytest.raises(TypeError):
        await artifacts.line("artifact.part", {"id": "a1", "content": 12})
    for i in range(OPEN_MAX - 1):
        await artifacts.line("artifact.open", _opened(f"b{i}"))
    with pytest.raises(ValueError, match="one too many"):
        await artifacts.line("artifact.open", _opened("c"))
    artifacts.discard_open()  # what execute_remote does when the call ends
    assert "artifact.created" not in env.types()
    assert _files(env.session.artifacts.root) == []  # no temp file left


async def test_the_line_reader_takes_each_line_whatever_the_reads() -> None:
    host = HostConfig(name="h", source="test", host="127.0.0.1")
    small = [b'{"a":1}', b"", b"y" * 300, b'{"b":2}', b"tail without newline"]
    big = [b'{"a":1}', b"x" * 3_000_000, b"", b'{"b":2}', b"tail without newline"]
    for lines, cut in ((small, 1), (small, 7), (big, 1 << 16), (big, 4_000_000)):
        stream = b"\n".join(lines)
        session = ExecutorSession(host, "/w")
        send, receive = trio.testing.memory_stream_pair()
        got: list[bytes | None] = []

        async def reader(receive: trio.abc.ReceiveStream = receive) -> None:
            while (line := await session._line(receive)) is not None:  # noqa: B023
                got.append(line)  # noqa: B023

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            for at in range(0, len(stream), cut):
                await send.send_all(stream[at : at + cut])
            await send.aclose()
        assert got == lines[:-1], cut
        assert session.buffer == b"tail without newline"


async def test_a_line_that_never_ends_is_refused_at_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("air.remote.session.LINE_MAX", 100_000)
    session = ExecutorSession(HostConfig(name="h", source="test", host="127.0.0.1"), "/w")
    send, receive = trio.testing.memory_stream_pair()
    await send.send_all(b"x" * 120_000)  # and no newline: held in memory until its bound
    with trio.fail_after(10), pytest.raises(ValueError, match="a line of over 100000 bytes"):
        await session._line(receive)  # without the bound: waits for its newline


async def test_a_session_whose_client_cannot_start_leaves_no_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv("PATH", str(tmp_path / "no-ssh-here"))  # the ssh client is not found
    session = ExecutorSession(HostConfig(name="h", source="test", host="127.0.0.1"), "/w")
    with pytest.raises(FileNotFoundError):
        await session.open()
    assert os.listdir(tmp_path) == []  # its log went with it (close() needs a process)
