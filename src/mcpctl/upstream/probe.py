"""Which remote transport a URL speaks: streamable HTTP, or the legacy HTTP+SSE transport.

The MCP specification's backwards-compatibility rule (2025-03-26 and later): a client POSTs an
InitializeRequest to the URL; a 400, 404 or 405 says the server may be an old HTTP+SSE server,
so the client GETs the URL expecting an event stream whose first event is `endpoint`.
`probe_transport` does exactly that, once, and answers "sse" only when that event comes; every
other outcome (a 2xx, a 401, a refused connection, no `endpoint` event) answers "http", so the
listing that follows reports the real problem. A session the POST opened is ended (DELETE).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

FALLBACK_STATUSES: Final = (400, 404, 405)
_INITIALIZE: Final = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "mcpctl-probe", "version": "1"}}}
_MAX_LINES: Final = 64          # an `endpoint` event comes first; comments (pings) may precede it


def probe_transport(url: str, headers: dict[str, str], timeout: float) -> str:
    """"http" or "sse" for `url` (with `headers`), by the specification's fallback signal."""
    import httpx2

    try:
        with httpx2.Client(headers=headers, timeout=timeout) as http:
            if not _post_says_fallback(http, url):
                return "http"
            return "sse" if _first_event_is_endpoint(http, url) else "http"
    except httpx2.HTTPError:
        return "http"


def _post_says_fallback(http: Any, url: str) -> bool:
    hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http.stream("POST", url, json=_INITIALIZE, headers=hdrs) as r:
        status, session = r.status_code, r.headers.get("mcp-session-id")
    if 200 <= status < 300 and session:
        with contextlib.suppress(Exception):
            http.delete(url, headers={"mcp-session-id": session})
    return status in FALLBACK_STATUSES


def _first_event_is_endpoint(http: Any, url: str) -> bool:
    with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as r:
        if r.status_code != 200 or not r.headers.get("content-type", "").startswith("text/event-stream"):
            return False
        fields = False          # an event under way (id:, data:, retry: may come before event:)
        for n, line in enumerate(r.iter_lines()):
            if line.startswith("event:"):
                return bool(line[len("event:"):].strip() == "endpoint")
            if n >= _MAX_LINES or (not line and fields):
                return False        # an event without a name: a default `message` event
            fields = fields or (bool(line) and not line.startswith(":"))
    return False
