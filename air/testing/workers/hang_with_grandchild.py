"""A worker that completes the handshake, leaves a setsid grandchild, then hangs heartbeating.

``IGNORE_TERM=1`` in the environment makes it ignore SIGTERM (only SIGKILL ends it)."""

import os
import signal
import time

from air.testing.workers._proto import handshake, send

if os.environ.get("IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
handshake()
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", "3600"])
    os._exit(0)
os.waitpid(child, 0)
while True:
    send(
        "event",
        {
            "type": "agent.heartbeat",
            "version": 1,
            "payload": {"state": "running", "turn": 0, "tokens": 0},
        },
    )
    time.sleep(0.2)
