"""The sign-in's loopback listener (`upstream.login`), without the CLI or an authorization server."""

from __future__ import annotations

import anyio
import pytest

from mcpctl.upstream.login import LoopbackCallback


async def _get(port: int, target: str) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as s:
        await s.send(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        with anyio.fail_after(5):
            while True:
                try:
                    data += await s.receive()
                except anyio.EndOfStream:
                    return data


@pytest.mark.anyio
async def test_redirect_without_this_logins_state_is_ignored_and_the_real_one_answers() -> None:
    ignored: list[str] = []
    callback = LoopbackCallback(0, lambda: ignored.append("ignored"))
    async with callback.serving():
        callback.expect("https://auth.example/authorize?client_id=c&state=s3cret")
        forged = await _get(callback.port, "/callback?code=evil&state=other")
        elsewhere = await _get(callback.port, "/favicon.ico")
        real = await _get(callback.port, "/callback?code=good&state=s3cret")
        with anyio.fail_after(5):
            params = await callback.wait()
    assert forged.startswith(b"HTTP/1.1 400") and ignored == ["ignored"]
    assert elsewhere.startswith(b"HTTP/1.1 404")
    assert real.startswith(b"HTTP/1.1 200") and b"Signed in" in real
    assert params == {"code": "good", "state": "s3cret"}
    assert callback.redirect_uri == f"http://127.0.0.1:{callback.port}/callback"
