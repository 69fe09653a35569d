"""The plain console's lines into a pipe nobody reads never stall its session.

Found: ``air --plain | less`` (or any reader that stops): the plain console printed on its
Trio thread, a long answer filled the pipe, the print blocked, and nothing more happened: the
next message was never sent, no tool call served, every deadline ran on. Now its stdout is an
outlet (``air.cli.outlet.piped_stdout``): the session goes on, and the lines are written out
at the reader's pace when it ends.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from tests.headless import session_events
from tests.ui.real_air import KEY, ChatModel, git_repo, key_env

F_SETPIPE_SZ = 1031
LONG = "\n\n".join(f"Paragraph {i}: " + "words " * 30 for i in range(600))  # ~110 kB


def _answers(root: Path) -> int:
    if not list(root.glob(".air/local/sessions/*/session.db")):
        return 0  # not opened yet
    return sum(e["type"] == "assistant.message.created" for e in session_events(root))


def test_the_plain_console_goes_on_while_its_reader_reads_nothing(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    git_repo(root)
    model = ChatModel(LONG, "Second answer.")
    late = blocks_sse("anthropic", [("text", ["Second ", "answer."])], "end_turn", model="c")
    model.replies[3] = Reply(chunks=late, stall_after=4, stall_s=2.0)  # printed 1 meanwhile
    with StrictServer(api_key=KEY, model=model) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "air", "--plain"],
            cwd=root,
            env={**os.environ, **key_env(home, server.url)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, 4096)
        try:
            proc.stdin.write(b"hello\nagain\n")
            proc.stdin.close()  # the end of its input: it quits once both are answered
            deadline = time.monotonic() + 60
            while _answers(root) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _answers(root) == 2, "the second message waited on the unread pipe"
            out = proc.stdout.read()  # now read: everything, in order, then the end
            assert proc.wait(60) == 0
        finally:
            proc.kill()
            proc.wait()
    text = out.decode()
    assert text.index("Paragraph 599") < text.index("Second answer.")
