"""Goes silent after the handshake and ignores the ``agent.get_state`` probe (logs it)."""

from air.testing.workers._proto import handshake, log, read_line

handshake()
while True:
    msg = read_line()
    if msg is None:
        break
    if msg.get("kind") == "control" and msg["payload"].get("type") == "agent.get_state":
        log("stall: probe received, not answering")
