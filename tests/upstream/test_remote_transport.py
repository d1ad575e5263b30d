"""`upstream.probe.remote_transport`: what `create server --url` records without asking the server."""

from __future__ import annotations

import pytest

from mcpctl.upstream.probe import Remote, remote_transport, sse_url


def test_without_probing_the_url_says_which_transport() -> None:
    assert sse_url("https://h/sse?key=1") and not sse_url("https://h/mcp")
    assert remote_transport({"url": "https://h/sse"}, None, probe=False) == Remote("sse", False, False)
    assert remote_transport({"url": "https://h/mcp"}, None, probe=False) == Remote("http", False, False)


def test_a_secret_that_cannot_be_read_here_falls_back_to_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPCTL_TEST_NO_SUCH_TOKEN", raising=False)
    spec = {"url": "https://h/sse", "headers": {"Authorization": "Bearer ${env:MCPCTL_TEST_NO_SUCH_TOKEN}"}}
    assert remote_transport(spec, 1.0, probe=True) == Remote("sse", False, False)
