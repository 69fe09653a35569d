"""Answers agent.start with worker.ready for protocol version 99, then hangs."""

from air.testing.workers._proto import forever, handshake

handshake(protocol_version=99)
forever()
