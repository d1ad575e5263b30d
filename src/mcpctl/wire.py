"""How an HTTP response of the gateway reaches its socket: a head that says how long the body is
goes out in one write with the body.

uvicorn's h11 protocol writes a response's head when the app starts the response and its body
when the app sends it: two writes, even when the body follows at once (a JSON-RPC answer). A
replica killed between the two leaves its client a head that promises a body that never comes
(`Content-Length: 6159`, then the connection closed), which neither the client nor a load
balancer can tell from an answer cut short, so neither retries: a load balancer retries a request
only when the replica closed the connection before answering a byte (envoy's `reset`, nginx's
`proxy_next_upstream error`). `HeadWithBody` holds such a head until the next write on the
connection, or the end of the loop's current turn, whichever comes first, and writes them
together: a replica killed before its answer has then sent none of it, and the request goes to
another replica (tests/team/test_replicas.py, the kill test). A head without a length (a stream)
goes out at once, as before, and so does everything else.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

_LENGTH = b"\r\ncontent-length:"


class HeadWithBody(asyncio.Transport):
    """A connection's transport (`asyncio.Transport`) that writes a response head of known
    length together with the write that follows it (see the module docstring)."""

    def __init__(self, transport: asyncio.BaseTransport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        # asyncio's or uvloop's: both have a Transport's methods (uvloop's is not its subclass)
        self._transport = cast(asyncio.Transport, transport)
        self._loop = loop
        self._held = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held:
            held, self._held = self._held, b""
            self._transport.write(held + data)
        elif data[:5] == b"HTTP/" and _LENGTH in bytes(data).lower():
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
        elif data:
            self._transport.write(data)

    def _flush(self) -> None:
        if self._held:
            held, self._held = self._held, b""
            self._transport.write(held)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = b""
        self._transport.abort()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()
