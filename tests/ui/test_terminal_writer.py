"""``TerminalWriter`` on a real pipe with a 4 KiB buffer nobody reads at first: queued in
order, ``behind`` past its limit, told once when the reader has read it all, a reader gone
raised by the next frame, and the console's screen draws whole when told."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from air.ui_urwid.terminal import ConsoleScreen
from air.ui_urwid.terminal_writer import TerminalWriter

F_SETPIPE_SZ = 1031


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    return read, write


def _read_all(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += os.read(fd, 1 << 16)
    return data


def test_frames_wait_in_order_and_the_caller_is_told_once_caught_up() -> None:
    read, write = _pipe()
    caught_up = threading.Event()
    calls: list[float] = []

    def told() -> None:
        calls.append(time.monotonic())
        caught_up.set()

    writer = TerminalWriter(write, told, limit=10_000)
    frames = [bytes([65 + i % 26]) * 3000 for i in range(10)]  # 30 kB into a 4 KiB pipe
    try:
        for frame in frames:
            writer.put(frame)  # never waits on the pipe
        assert writer.behind()  # past 10 kB queued: the console skips its frames
        assert not caught_up.wait(0.3)  # nobody reads: nothing to tell
        assert _read_all(read, 30_000) == b"".join(frames)
        assert caught_up.wait(5)
        time.sleep(0.1)
        assert len(calls) == 1
        assert not writer.behind()
        writer.put(b"next")
        assert _read_all(read, 4) == b"next"
        time.sleep(0.1)
        assert len(calls) == 1  # told only after a skipped frame
    finally:
        writer.close(5)
        os.close(read)
        os.close(write)


def test_a_reader_gone_is_raised_by_the_next_frame_and_close_drains() -> None:
    read, write = _pipe()
    writer = TerminalWriter(write, lambda: None)
    writer.put(b"x" * 100)
    assert _read_all(read, 100) == b"x" * 100
    os.close(read)
    writer.put(b"y" * 100)  # the thread's write fails (EPIPE)
    writer.close(5)  # the thread has ended on it
    with pytest.raises(BrokenPipeError):
        writer.put(b"z")
    os.close(write)

    read, write = _pipe()
    writer = TerminalWriter(write, lambda: None)
    writer.put(b"q" * 20_000)
    done = threading.Thread(target=writer.close)
    done.start()
    assert _read_all(read, 20_000) == b"q" * 20_000  # close waits until it is written out
    done.join(5)
    assert not done.is_alive()
    os.close(read)
    os.close(write)


def test_the_screen_told_it_caught_up_draws_whole() -> None:
    screen = ConsoleScreen()
    screen._resized = False
    screen._draw_all()
    assert screen._resized  # as after SIGWINCH: the next frame is drawn whole
    assert screen._resize_pipe_rd.recv(16) == b"R"  # and the loop is woken for it
