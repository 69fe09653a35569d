"""After the handshake, writes a line that is not JSON, then hangs."""

from air.testing.workers._proto import forever, handshake, send

handshake()
send("", {}, raw=b"this is not json {\n")
forever()
