"""Leaves a grandchild that double-forked and called setsid, then returns a valid result."""

import os
import time

from air.testing.workers._proto import handshake, log, send

start = handshake()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", "3600"])
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.1)
log("double_fork: grandchild left behind")
spec = start["task_spec"]
send(
    "worker.result",
    {
        "task_id": spec["id"],
        "agent_id": start["runtime"]["agent_id"],
        "agent_type": "reviewer",
        "status": "completed",
        "summary": "left a daemon behind",
        "result": {"verdict": "approved", "findings": []},
    },
)
