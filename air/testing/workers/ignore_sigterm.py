"""Ignores SIGTERM and hangs forever while sending heartbeats (only SIGKILL ends it)."""

import signal
import time

from air.testing.workers._proto import handshake, send

signal.signal(signal.SIGTERM, signal.SIG_IGN)
start = handshake()
while True:
    send(
        "event",
        {
            "type": "agent.heartbeat",
            "version": 1,
            "payload": {"state": "running", "turn": 0, "tokens": 0},
        },
    )
    time.sleep(0.05)
