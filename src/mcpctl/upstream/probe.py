"""Which remote transport a URL speaks: streamable HTTP, or the legacy HTTP+SSE transport.

The MCP specification's backwards-compatibility rule (2025-03-26 and later): a client POSTs an
InitializeRequest to the URL; a 400, 404 or 405 says the server may be an old HTTP+SSE server,
so the client GETs the URL expecting an event stream whose first event is `endpoint`.
`probe_remote` does exactly that, once, and answers "sse" only when that event comes; every
other outcome (a 2xx, a 401, a refused connection, no `endpoint` event) answers "http", so the
listing that follows reports the real problem. A session the POST opened is ended (DELETE).

It answers one more question: whether the server asked for an OAuth sign-in (a 401 with a `WWW-Authenticate: Bearer` challenge, to the POST or to the SSE GET), which
`create server --url` records as `auth: {type: oauth}`. `remote_transport` is what `create server
--url` asks: the probe's answer, or, without probing, the URL's (`sse_url`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final, NamedTuple
from urllib.parse import urlsplit

FALLBACK_STATUSES: Final = (400, 404, 405)
_INITIALIZE: Final = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "mcpctl-probe", "version": "1"}}}
_MAX_LINES: Final = 64          # an `endpoint` event comes first; comments (pings) may precede it


def sse_url(url: str) -> bool:
    """An SSE endpoint by its URL: the path ends in /sse, whatever the query (`/sse?key=…`)."""
    try:
        return urlsplit(url).path.rstrip("/").endswith("/sse")
    except ValueError:
        return False


class Remote(NamedTuple):
    transport: str          # http | sse
    oauth: bool             # the server asked for a sign-in
    asked: bool             # the server answered it (not the URL)


def remote_transport(spec: dict[str, Any], connect_timeout: float | None, *, probe: bool) -> Remote:
    """http or sse for a --url server: asked of the server (POST initialize; a 400/404/405 and an
    `endpoint` event on GET mean SSE), or, without asking (or when its URL or headers name a secret
    that cannot be read here), by the URL (a path ending in /sse); and whether it asked for an
    OAuth sign-in (a 401 with a Bearer challenge)."""
    by_url = Remote("sse" if sse_url(spec["url"]) else "http", False, False)
    if not probe:
        return by_url
    from mcpctl.errors import SecretError
    from mcpctl.resources import secrets

    try:
        url = secrets.resolve(spec["url"], where="--url")
        headers = secrets.resolve_map(spec.get("headers") or {}, where="--header")
    except SecretError:
        return by_url
    return Remote(*probe_remote(url, headers, connect_timeout or 30.0), asked=True)


def probe_remote(url: str, headers: dict[str, str], timeout: float) -> tuple[str, bool]:
    """("http" or "sse", whether the server asked for an OAuth sign-in)."""
    import httpx2

    challenged = [False]
    try:
        with httpx2.Client(headers=headers, timeout=timeout) as http:
            if not _post_says_fallback(http, url, challenged):
                return "http", challenged[0]
            return ("sse" if _first_event_is_endpoint(http, url, challenged) else "http"), challenged[0]
    except httpx2.HTTPError:
        return "http", challenged[0]


def _challenge(r: Any) -> bool:
    return bool(r.status_code == 401 and r.headers.get("www-authenticate", "").lower().startswith("bearer"))


def _post_says_fallback(http: Any, url: str, challenged: list[bool]) -> bool:
    hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http.stream("POST", url, json=_INITIALIZE, headers=hdrs) as r:
        status, session = r.status_code, r.headers.get("mcp-session-id")
        challenged[0] = _challenge(r)
    if 200 <= status < 300 and session:
        with contextlib.suppress(Exception):
            http.delete(url, headers={"mcp-session-id": session})
    return status in FALLBACK_STATUSES


def _first_event_is_endpoint(http: Any, url: str, challenged: list[bool]) -> bool:
    with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as r:
        challenged[0] = challenged[0] or _challenge(r)
        if r.status_code == 401 and challenged[0] and url.rstrip("/").endswith("/sse"):
            return True             # an SSE endpoint behind a sign-in (the path says which transport)
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
