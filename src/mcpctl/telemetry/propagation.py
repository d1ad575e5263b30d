"""The trace context passed on to HTTP upstreams as headers (standard library only).

The SDK's client puts the context of the upstream call's span in the request's `_meta`
(`traceparent`, `tracestate`), in the task that makes the call; the streamable-HTTP transport
POSTs it from a task of its own, where that context is not current. So the upstream's HTTP
client gets a request hook (`upstream_hooks`, only while tracing is on) that copies the two keys
of the JSON-RPC request's `_meta` to W3C headers, which an HTTP-instrumented upstream (or a proxy
in front of it) reads. A stdio upstream's channel reads the span its calls are made in here
(`CLIENT_SPAN`, `tracing.client_span`), set with the rest: one read on its call path, no import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Final

# while tracing is on, what a stdio upstream's call is made in (`tracing.client_span`); None: off
CLIENT_SPAN: list[Callable[[dict[str, Any]], AbstractContextManager[dict[str, Any]]] | None] = [None]
_KEYS: Final = (("traceparent", re.compile(rb'"traceparent":\s*"([0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2})"')),
                ("tracestate", re.compile(rb'"tracestate":\s*"([\x20-\x21\x23-\x5b\x5d-\x7e]{1,512})"')))


def set_active(client_span: Callable[[dict[str, Any]], AbstractContextManager[dict[str, Any]]] | None) -> None:
    """Tracing on (what a stdio upstream's call is made in) or off (None)."""
    CLIENT_SPAN[0] = client_span


def active() -> bool:
    return CLIENT_SPAN[0] is not None


async def _copy_trace_context(request: Any) -> None:
    body = request.content
    if b'"traceparent"' not in body:
        return
    for header, pattern in _KEYS:
        found = pattern.findall(body)
        if found:       # the last: `_meta` comes after the arguments, which may hold such a key too
            request.headers[header] = found[-1].decode("ascii")


def upstream_hooks() -> dict[str, list[Any]]:
    """httpx `event_hooks` for an HTTP upstream's client: the hook while tracing is on, else none."""
    return {"request": [_copy_trace_context]} if CLIENT_SPAN[0] is not None else {}
