"""A fault-injecting TCP proxy on 127.0.0.1 for the remote drop tests (issue #27 item 6).

Owns ``FaultProxy``: it listens on a port of its own and forwards every connection to a target
port, until told otherwise: ``reset()`` ends every open connection with an RST on both sides
(``SO_LINGER`` 0: the ssh client and sshd each see "connection reset", no FIN), ``black_hole()``
stops forwarding on every open connection and keeps the sockets open (no FIN, no RST: neither
end can tell, as behind a dead router), and holds every connection opened after it (accepted,
not forwarded: a sweep over a fresh connection cannot get through either) until ``restore()``,
which forwards those held new connections from then on (the router is back; the connections
cut by the black hole stay dead).
"""

from __future__ import annotations

import socket
import struct

import trio

__all__ = ["FaultProxy"]

_LINGER_RST = struct.pack("ii", 1, 0)


class _Link:
    def __init__(self, client: trio.SocketStream, server: trio.SocketStream) -> None:
        self.client = client
        self.server = server
        self.scope = trio.CancelScope()
        self.held: list[trio.SocketStream] = []
        """Sockets kept open (not forwarded, never closed) after ``black_hole``."""


class FaultProxy:
    """``async with FaultProxy(target_port) as proxy``: connect to ``proxy.port``."""

    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.host = host
        self.port = 0
        self.links: list[_Link] = []
        self.connections = 0
        self.restored: trio.Event | None = None
        """Set while a black hole holds new connections; they pass once it is set."""
        self._nursery: trio.Nursery | None = None
        self._listeners: list[trio.SocketListener] = []

    async def __aenter__(self) -> FaultProxy:
        self._cm = trio.open_nursery()
        self._nursery = await self._cm.__aenter__()
        self._listeners = await trio.open_tcp_listeners(0, host=self.host)
        self.port = self._listeners[0].socket.getsockname()[1]
        self._nursery.start_soon(trio.serve_listeners, self._serve, self._listeners)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        await self._cm.__aexit__(None, None, None)
        for link in self.links:
            for stream in (link.client, link.server):
                stream.socket.close()

    async def _serve(self, client: trio.SocketStream) -> None:
        if self.restored is not None:
            await self.restored.wait()
        server = await trio.open_tcp_stream(*self.target)
        link = _Link(client, server)
        self.links.append(link)
        self.connections += 1
        with link.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump, client, server)
                nursery.start_soon(self._pump, server, client)
        if not link.held:
            await trio.aclose_forcefully(client)
            await trio.aclose_forcefully(server)
        else:
            await trio.sleep_forever()  # keep both ends open and silent

    @staticmethod
    async def _pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
            await sink.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def reset(self) -> None:
        """RST both ends of every open connection."""
        for link in self.links:
            for stream in (link.client, link.server):
                try:
                    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
                except OSError:
                    pass
                stream.socket.close()
            link.scope.cancel()
        self.links = []

    def black_hole(self) -> None:
        """Stop forwarding on every open connection (both sockets stay open and silent); hold
        new ones until ``restore()``."""
        self.restored = trio.Event()
        for link in self.links:
            link.held = [link.client, link.server]
            link.scope.cancel()
        self.links = []

    def restore(self) -> None:
        """Forward new connections again, the held ones too (those cut stay dead)."""
        if self.restored is not None:
            self.restored.set()
            self.restored = None
