"""A gateway span as it ended (`Record`), and as the SDK's spans reach span processors (`readable_span`).

`tracing.Span.end` makes the record, `otlp.Encoder.record` encodes it: the two meet here, below both.
"""

from __future__ import annotations

from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

# What the exporter's thread needs of an ended span and nothing more: (its tracing (`resource`,
# `scope`), trace id, span id, parent span id or None (lowercase hex), the parent is remote, trace
# flags, tracestate header, name, kind, start ns, end ns, attributes, error).
Record = tuple[Any, str, str, str | None, bool, int, str, str, SpanKind, int, int, dict[str, Any], bool]

_OK: Final = Status(StatusCode.UNSET)
_ERROR: Final = Status(StatusCode.ERROR)
_EMPTY_STATE: Final = TraceState()


def trace_state(header: str) -> TraceState:
    return TraceState.from_header([header]) if header else _EMPTY_STATE


def readable_span(record: Record) -> ReadableSpan:
    """`record` as the SDK's spans reach span processors and exporters."""
    t, trace_hex, span_hex, parent, remote, flags, state, name, kind, start, end, attributes, error = record
    trace_id, found_state = int(trace_hex, 16), trace_state(state)
    return ReadableSpan(
        name=name, context=SpanContext(trace_id, int(span_hex, 16), False, TraceFlags(flags), found_state),
        parent=None if parent is None else SpanContext(trace_id, int(parent, 16), remote, TraceFlags(flags),
                                                       found_state),
        resource=t.resource, attributes=attributes, kind=kind, status=_ERROR if error else _OK,
        start_time=start, end_time=end, instrumentation_scope=t.scope)
