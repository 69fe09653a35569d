"""Asks for a tool call and dies with exit code 1 before the answer arrives."""

import os

from air.testing.workers._proto import handshake, log, send

handshake()
send("tool.call", {"name": "fs.read", "input": {"path": "README.md"}})
log("crash_in_tool: dying in the middle of a tool call")
os._exit(1)
