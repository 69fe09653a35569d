"""``FaultProxy`` (air/testing/fault_proxy.py), the link the drops matrix breaks, against a real
echo server on 127.0.0.1: it forwards; ``reset()`` is an RST at the client; ``black_hole()``
silences open connections and holds new ones; ``restore()`` forwards the held ones, never the
silenced ones."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from air.testing.fault_proxy import FaultProxy

QUIET_S = 0.3
"""How long a silent link is watched for a byte that must not come."""


async def _echo(stream: trio.SocketStream) -> None:
    try:
        while data := await stream.receive_some(65536):
            await stream.send_all(data)
    except trio.BrokenResourceError:
        pass


async def _ping(stream: trio.SocketStream, data: bytes) -> bytes | None:
    await stream.send_all(data)
    with trio.move_on_after(QUIET_S):
        return await stream.receive_some(65536)
    return None


async def test_forward_reset_black_hole_and_restore() -> None:
    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(partial(trio.serve_tcp, _echo, 0, host="127.0.0.1"))
        port = listener.socket.getsockname()[1]
        async with FaultProxy(port) as proxy:
            first = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            assert await _ping(first, b"a") == b"a"
            proxy.reset()
            with pytest.raises(trio.BrokenResourceError):  # ECONNRESET, not an end of stream
                await first.receive_some(1)

            cut = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            assert await _ping(cut, b"c") == b"c"
            proxy.black_hole()
            assert await _ping(cut, b"d") is None  # no byte, no FIN, no RST
            held = await trio.open_tcp_stream("127.0.0.1", proxy.port)  # accepted, then silence
            assert await _ping(held, b"e") is None
            proxy.restore()
            with trio.fail_after(10):
                assert await held.receive_some(65536) == b"e"
            assert await _ping(cut, b"f") is None
            fresh = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            assert await _ping(fresh, b"g") == b"g"
            for stream in (cut, held, fresh):
                await stream.aclose()
        nursery.cancel_scope.cancel()
