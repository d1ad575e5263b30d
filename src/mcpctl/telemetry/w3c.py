"""The W3C trace context as the gateway's spans hold it: lowercase hex strings, read from a
`traceparent` (`_fields`) and drawn for new spans and traces (`_span_id`, `_trace_id`: sliced
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


class _Ids:
    """Span and trace ids as lowercase hex, sliced from one block of `os.urandom` (0.25 µs an id,
    against 0.4 for `random.getrandbits` and a format, 0.55 for `os.urandom(8).hex()`). The
    event loop's thread draws them (the gateway's spans are made there); a forked child starts
    a block of its own (`reset`), as `random` reseeds in one."""

    __slots__ = ("at", "block")

    def __init__(self) -> None:
        self.block, self.at = "", 0

    def reset(self) -> None:
        self.block, self.at = "", 0


_IDS = _Ids()
os.register_at_fork(after_in_child=_IDS.reset)


def _span_id() -> str:
    ids = _IDS          # `take(16)`, inline: a frame less on the call path (an id a span)
    at = ids.at
    if at + 16 > len(ids.block):
        ids.block, at = os.urandom(4096).hex(), 0
    ids.at = at + 16
    found = ids.block[at:at + 16]
    return found if found != _ZERO_SPAN else _span_id()


def _trace_id() -> str:
    ids = _IDS          # `take(32)`, inline
    at = ids.at
    if at + 32 > len(ids.block):
        ids.block, at = os.urandom(4096).hex(), 0
    ids.at = at + 32
    found = ids.block[at:at + 32]
    return found if found != _ZERO_TRACE else _trace_id()


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
