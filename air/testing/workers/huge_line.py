"""After the handshake, writes one 10 MiB line, then hangs."""

from air.testing.workers._proto import forever, handshake, send

handshake()
send("", {}, raw=b'{"v":1,"junk":"' + b"x" * (10 * 1024 * 1024) + b'"}\n')
forever()
