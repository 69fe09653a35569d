"""After the handshake, sends a ``control`` message (a parent→worker kind), then hangs."""

from air.testing.workers._proto import forever, handshake, send

handshake()
send("control", {"type": "agent.cancel", "reason": "workers do not send controls"})
forever()
