"""The W3C trace context as the gateway's spans hold it: lowercase hex strings, read from a
`traceparent` (`_fields`) and drawn for new spans and traces (`_span_id`, `_trace_id`: cut
from one block of `os.urandom`). Used by `tracing`, which makes OpenTelemetry objects of them
only when asked."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from mcpctl.telemetry.records import trace_state

if TYPE_CHECKING:
    from opentelemetry.context import Context

_TRACEPARENT: Final = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_FLAGS: Final = tuple(f"-{i:02x}" for i in range(256))     # a traceparent's last field, by its value
_ZERO_TRACE: Final = "0" * 32
_ZERO_SPAN: Final = "0" * 16


# Span and trace ids as lowercase hex, drawn ahead: one block of `os.urandom` written as hex with a
# space between ids and split (C, no Python loop), into a list the call path pops (a C call, no
# frame: some 1.0k instructions an id, counted by callgrind, against 2.5k for a slice of a hex
# block taken in a function). The event loop's thread
# draws them (the gateway's spans are made there); a forked child draws a block of its own
# (`_reset`), as `random` reseeds in one. An all-zero id (invalid) is never handed out.
_SPAN_IDS: list[str] = []
_TRACE_IDS: list[str] = []


def _reset() -> None:
    _SPAN_IDS.clear()
    _TRACE_IDS.clear()


os.register_at_fork(after_in_child=_reset)


def _span_id() -> str:
    """A new span id (the call path inlines it: `_SPAN_IDS.pop() if _SPAN_IDS else _span_id()`)."""
    if not _SPAN_IDS:
        ids = os.urandom(4096).hex(" ", 8).split(" ")
        _SPAN_IDS.extend(ids if _ZERO_SPAN not in ids else [i for i in ids if i != _ZERO_SPAN])
    return _SPAN_IDS.pop()


def _trace_id() -> str:
    """A new trace id (inlined as `_span_id` is)."""
    if not _TRACE_IDS:
        ids = os.urandom(4096).hex(" ", 16).split(" ")
        _TRACE_IDS.extend(ids if _ZERO_TRACE not in ids else [i for i in ids if i != _ZERO_TRACE])
    return _TRACE_IDS.pop()


def _fields(traceparent: Any, tracestate: Any) -> tuple[str, str, int, str] | None:
    """A W3C `traceparent` (and `tracestate`) as a remote parent's (trace id, span id, flags,
    tracestate header), None if it is not a valid one."""
    if not isinstance(traceparent, str):
        return None
    m = _TRACEPARENT.fullmatch(traceparent.strip())
    if m is None or m[1] == "ff" or (m[1] == "00" and m[5]):
        return None
    trace_id, span_id = m[2], m[3]
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    state = trace_state(tracestate).to_header() if isinstance(tracestate, str) and tracestate else ""
    return trace_id, span_id, int(m[4], 16), state


def _meta_fields(meta: dict[str, Any]) -> tuple[str, str, int, str] | None:
    return _fields(meta.get("traceparent"), meta.get("tracestate")) if "traceparent" in meta else None


def _parent_fields(ctx: Any) -> tuple[str, str, int, str] | None:
    """The client's trace context: `_meta`'s keys, else the HTTP request's headers (None: a new trace)."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict) and "traceparent" in meta:
        return _meta_fields(meta)
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None or not headers.get("traceparent"):
        return None
    return _fields(headers.get("traceparent"), headers.get("tracestate"))


def _parse(traceparent: Any, tracestate: Any) -> SpanContext | None:
    """A W3C `traceparent` (and `tracestate`) as a remote parent, None if it is not a valid one."""
    found = _fields(traceparent, tracestate)
    return None if found is None else _remote(found)


def _remote(fields: tuple[str, str, int, str]) -> SpanContext:
    trace_id, span_id, flags, state = fields
    return SpanContext(int(trace_id, 16), int(span_id, 16), True, TraceFlags(flags), trace_state(state))


def parent_context(ctx: Any) -> Context | None:
    """The client's trace context (`_meta`, else the HTTP headers) as an OpenTelemetry context (None: a new trace)."""
    found = _parent_fields(ctx)
    return None if found is None else trace.set_span_in_context(NonRecordingSpan(_remote(found)))
