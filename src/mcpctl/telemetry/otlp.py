"""The OTLP/HTTP span exporter (the `otel` extra), encoding the gateway's spans itself.

The exporter's own encoding (`encode_spans`: a protobuf object per span, per attribute and per
value, then serialized) costs some 25-35 µs a span, in the batch processor's thread but in the
gateway's process: as much CPU as the two spans of a call cost to make. A gateway's spans are
all alike (string attributes from a small vocabulary, no events, no links), so `encode` writes
their protobuf wire format directly: each span's fixed fields, its attributes from a cache of
encoded key-value pairs, and once per batch the resource and scope, as the exporter's own
encoding of one of its spans has them. A span it does not handle (another value type, events,
links, dropped counts) goes through the exporter's encoding, appended to the same request (two
serialized requests, concatenated, are one request with the spans of both). The gateway's own
spans arrive as their records (`tracing.Record`: the hex ids, the times, the attributes), which
`Encoder.record` writes as `Encoder.span` writes their `ReadableSpan`, without making one (3 µs a
span against 7). Sent as the exporter sends its own (`Exporter.export`: its HTTP client, its
retries, its size limit; a request it refuses goes to its own `export` as `ReadableSpan`s), over
`export.Transport` (one kept-alive connection) rather than its `requests` session where that applies.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http._common import _resolve_endpoint
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanContext

from mcpctl.telemetry.export import transport_for
from mcpctl.telemetry.records import Record, readable_span

log = logging.getLogger("mcpctl.telemetry")

_REMOTE_PARENT: Final = b"\x85\x01" + (0x300).to_bytes(4, "little")    # flags (16, fixed32): has/is remote
_LOCAL: Final = b"\x85\x01" + (0x100).to_bytes(4, "little")            # has is-remote, not remote
_STATUS: Final = {0: b"\x7a\x00", 1: b"\x7a\x02\x18\x01", 2: b"\x7a\x02\x18\x02"}     # (15) {code (3)}
_PAIRS_MAX: Final = 4096
_TIMES: Final = struct.Struct("<BQBQ").pack


def _varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SHORT_MAX: Final = 4096
_SHORT: Final = tuple(_varint(n) for n in range(_SHORT_MAX))     # the varint of a length below 4096 (a span's)


def _field(tag: bytes, body: bytes) -> bytes:
    """A length-delimited field: its tag, its length, `body`."""
    return tag + _varint(len(body)) + body


class Encoder:
    """Spans to an OTLP `ExportTraceServiceRequest`, serialized (see the module's text)."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], bytes] = {}       # (key, value) -> the encoded attribute field
        self._headers: dict[tuple[Any, Any], tuple[bytes, bytes]] = {}   # (resource, scope) -> their fields
        self._names: dict[tuple[str, int], bytes] = {}       # (name, kind) -> their encoded fields
        self._kinds: dict[tuple[str, int], bytes] = {}       # (name, id of the SpanKind) -> the same (a record's)
        self._sets: dict[tuple[Any, ...], bytes] = {}       # a record's attributes' keys and values -> their fields

    def encode(self, spans: Sequence[ReadableSpan | Record]) -> bytes:
        """`spans`: the SDK's, and the gateway's as the records its spans end as (`tracing.Span.end`)."""
        groups: dict[tuple[int, int], tuple[Any, Any, list[bytes]]] = {}    # by identity (a resource's hash is JSON)
        others: list[ReadableSpan] = []
        last: Any = None            # the tracing of the last record, whose group's parts are `parts`
        parts: list[bytes] = []
        for span in spans:
            if isinstance(span, tuple):
                encoded = self.record(span)
                if encoded is None:
                    others.append(readable_span(span))
                    continue
                n = len(encoded)    # a Span field (2) of the ScopeSpans: its tag, its length, itself
                if span[0] is last:
                    parts.extend((b"\x12", _SHORT[n] if n < _SHORT_MAX else _varint(n), encoded))
                    continue
                last, resource, scope = span[0], span[0].resource, span[0].scope
            else:
                encoded = self.span(span)
                if encoded is None:
                    others.append(span)
                    continue
                n, resource, scope = len(encoded), span.resource, span.instrumentation_scope
            group = groups.get((id(resource), id(scope)))
            if group is None:
                group = groups[(id(resource), id(scope))] = (resource, scope, [])
            group[2].extend((b"\x12", _SHORT[n] if n < _SHORT_MAX else _varint(n), encoded))
            if isinstance(span, tuple):
                parts = group[2]
        out = [self._group((resource, scope), encoded) for resource, scope, encoded in groups.values()]
        if others:
            out.append(encode_spans(others).SerializePartialToString())
        return b"".join(out)

    def _group(self, key: tuple[Any, Any], spans: list[bytes]) -> bytes:
        """One ResourceSpans (field 1 of the request) with one ScopeSpans holding `spans` (the
        parts of their Span fields: tag, length, message)."""
        resource_fields, scope_fields = self._header(key)
        scope_spans = scope_fields + b"".join(spans)                                  # spans: 2
        return _field(b"\x0a", resource_fields + _field(b"\x12", scope_spans))       # scope_spans: 2

    def _header(self, key: tuple[Any, Any]) -> tuple[bytes, bytes]:
        """The resource's and the scope's fields, as the exporter's own encoding writes them."""
        found = self._headers.get(key)
        if found is None:
            resource, scope = key
            probe = ReadableSpan("probe", SpanContext(1, 1, False), resource=resource, instrumentation_scope=scope)
            rs = encode_spans([probe]).resource_spans[0]
            ss = rs.scope_spans[0]
            del ss.spans[:]
            scope_fields = ss.SerializePartialToString()
            del rs.scope_spans[:]
            found = self._headers[key] = (rs.SerializePartialToString(), scope_fields)
        return found

    def span(self, span: ReadableSpan) -> bytes | None:
        """One Span message, or None if it is not one of the kind this encodes."""
        attrs, context, parent = span.attributes, span.context, span.parent
        if span.events or span.links or span.dropped_attributes or context is None or span.start_time is None \
                or span.end_time is None or span.status.description:
            return None
        encoded_attrs = self._attributes(attrs) if attrs else b""
        if encoded_attrs is None:
            return None
        state = context.trace_state
        return b"".join((
            b"\x0a\x10", context.trace_id.to_bytes(16, "big"),                     # trace_id: 1
            b"\x12\x08", context.span_id.to_bytes(8, "big"),                       # span_id: 2
            _field(b"\x1a", ",".join(f"{k}={v}" for k, v in state.items()).encode()) if state else b"",
            b"" if parent is None else b"\x22\x08" + parent.span_id.to_bytes(8, "big"),   # parent_span_id: 4
            self._name(span.name, span.kind.value),                                # name: 5, kind: 6
            b"\x39", span.start_time.to_bytes(8, "little"),                        # start (7, fixed64)
            b"\x41", span.end_time.to_bytes(8, "little"),                          # end (8, fixed64)
            encoded_attrs,                                                         # attributes: 9
            _STATUS[span.status.status_code.value],                                # status: 15
            _REMOTE_PARENT if parent is not None and parent.is_remote else _LOCAL,  # flags: 16
        ))

    def record(self, record: Record) -> bytes | None:
        """One Span message from a gateway span's record, as `span` writes it from its `ReadableSpan`;
        None if an attribute is not a string."""
        _, trace_id, span_id, parent, remote, _, state, name, kind, start, end, attrs, error = record
        encoded_attrs = self._attribute_set(attrs) if attrs else b""
        if encoded_attrs is None:
            return None
        named = self._kinds.get((name, id(kind)))        # id: a SpanKind's hash is a Python call
        if named is None:
            named = self._name(name, kind.value)
            if len(self._kinds) >= _PAIRS_MAX:
                self._kinds.clear()
            self._kinds[(name, id(kind))] = named
        return b"".join((
            b"\x0a\x10", bytes.fromhex(trace_id), b"\x12\x08", bytes.fromhex(span_id),
            _field(b"\x1a", state.encode()) if state else b"",
            b"" if parent is None else b"\x22\x08" + bytes.fromhex(parent),
            named,
            _TIMES(0x39, start, 0x41, end),       # start (7, fixed64), end (8, fixed64): one C call
            encoded_attrs,
            _STATUS[2 if error else 0],
            _REMOTE_PARENT if parent is not None and remote else _LOCAL,
        ))

    def _name(self, name: str, kind: int) -> bytes:
        """The name (5) and kind (6, the SDK's + 1) fields, cached: a gateway's names are few."""
        found = self._names.get((name, kind))
        if found is None:
            if len(self._names) >= _PAIRS_MAX:
                self._names.clear()
            found = self._names[(name, kind)] = _field(b"\x2a", name.encode("utf-8")) + b"\x30" + _varint(kind + 1)
        return found

    def _attribute_set(self, attrs: dict[str, Any]) -> bytes | None:
        """`_attributes` of a record's, cached by their keys then their values (one flat tuple, no
        tuple a pair): a gateway's spans repeat a few sets."""
        try:
            items = (*attrs, *attrs.values())
            found = self._sets.get(items)
        except TypeError:           # an unhashable value
            return self._attributes(attrs)
        if found is None:
            found = self._attributes(attrs)
            if found is not None:
                if len(self._sets) >= _PAIRS_MAX:
                    self._sets.clear()
                self._sets[items] = found
        return found

    def _attributes(self, attrs: Any) -> bytes | None:
        """The attribute fields (9) of string attributes, None if one is of another type."""
        pairs = self._pairs
        out = []
        for k, v in attrs.items():
            if not isinstance(v, str):
                return None
            found = pairs.get((k, v))
            if found is None:
                if len(pairs) >= _PAIRS_MAX:
                    pairs.clear()
                any_value = _field(b"\x0a", v.encode("utf-8"))                       # string_value: 1
                found = pairs[(k, v)] = _field(b"\x4a", _field(b"\x0a", k.encode("utf-8"))
                                                + _field(b"\x12", any_value))       # key: 1, value: 2
            out.append(found)
        return b"".join(out)


class Exporter(OTLPSpanExporter):
    """`OTLPSpanExporter` with the request encoded by `Encoder` (the exporter's own encoding if that
    fails); it takes the gateway's spans as their records (`tracing.Span.end`), as well as the SDK's."""

    takes_records = True

    def __init__(self, own_transport: bool = True) -> None:
        """`own_transport`: sent over `export.Transport` (a kept-alive connection) where it applies."""
        transport = transport_for(_resolve_endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces")) \
            if own_transport else None
        if transport is None:
            super().__init__()
        else:
            super().__init__(_transport=transport)
        self.encoder = Encoder()

    def export(self, spans: Sequence[ReadableSpan | Record]) -> SpanExportResult:
        try:
            data = self.encoder.encode(spans)
            client, limit = self._client, self._max_request_size
        except Exception:
            log.exception("telemetry: encoding spans failed (the exporter's own encoding is used)")
            return super().export(_readable(spans))
        if self._shutdown or 0 < limit < len(data):
            return super().export(_readable(spans))        # its warning, its refusal
        sent = client.export(data)
        return SpanExportResult.SUCCESS if sent.success else SpanExportResult.FAILURE


def _readable(spans: Sequence[ReadableSpan | Record]) -> list[ReadableSpan]:
    return [readable_span(s) if isinstance(s, tuple) else s for s in spans]
