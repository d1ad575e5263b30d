"""The gateway's own span batch and HTTP transport (`telemetry.export`): batching, the schedule,
flush on close, a full queue, the exporter's headers and compression over one kept-alive
connection, a failed POST warned about and never raised, nothing written to stdout."""

from __future__ import annotations

import gzip
import http.server
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from gwkit import LoopbackHTTP
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from mcpctl.telemetry.export import Batcher, Transport, _setting, transport_for

WAIT = 10.0


class Got(SpanExporter):
    """Records what is exported; `each` is set after every export, `enough` once `want` items arrived."""

    takes_records = True

    def __init__(self, want: int = 1, block: threading.Event | None = None) -> None:
        self.batches: list[list[Any]] = []
        self.want, self.block = want, block
        self.enough, self.entered, self.closed = threading.Event(), threading.Event(), False

    def export(self, spans: Any) -> SpanExportResult:
        self.entered.set()
        if self.block is not None:
            assert self.block.wait(WAIT)
        self.batches.append(list(spans))
        if sum(map(len, self.batches)) >= self.want:
            self.enough.set()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.closed = True


def _env(**kw: int) -> dict[str, str]:
    return {f"OTEL_BSP_{k.upper()}": str(v) for k, v in kw.items()}


def test_a_batch_is_exported_once_it_is_full_not_before_the_schedule() -> None:
    got = Got(want=8)
    batcher = Batcher(got, _env(schedule_delay=600_000, max_export_batch_size=4))
    try:
        for i in range(8):
            batcher.emit(i)
        assert got.enough.wait(WAIT), got.batches
        assert got.batches == [[0, 1, 2, 3], [4, 5, 6, 7]]      # oldest first, at most the export size
    finally:
        batcher.shutdown()


def test_the_schedule_sends_a_partial_batch() -> None:
    got = Got(want=3)
    batcher = Batcher(got, _env(schedule_delay=20, max_export_batch_size=512))
    try:
        for i in range(3):
            batcher.emit(i)
        assert got.enough.wait(WAIT)
        assert [x for b in got.batches for x in b] == [0, 1, 2]
    finally:
        batcher.shutdown()


def test_close_flushes_what_is_left_and_shuts_the_exporter_down() -> None:
    got = Got(want=3)
    batcher = Batcher(got, _env(schedule_delay=600_000))
    for i in range(3):
        batcher.emit(i)
    assert not got.batches
    batcher.shutdown()
    assert got.batches == [[0, 1, 2]] and got.closed
    batcher.emit(9)                 # after close: ignored
    assert batcher.force_flush() is False and got.batches == [[0, 1, 2]]


def test_force_flush_exports_now() -> None:
    got = Got()
    batcher = Batcher(got, _env(schedule_delay=600_000))
    try:
        batcher.emit("a")
        assert batcher.force_flush() and got.batches == [["a"]]
    finally:
        batcher.shutdown()


def test_a_full_queue_drops_the_oldest_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    got = Got(block=release)
    batcher = Batcher(got, _env(schedule_delay=600_000, max_queue_size=4, max_export_batch_size=4))
    try:
        with caplog.at_level(logging.WARNING, "mcpctl.telemetry"):
            for i in range(4):
                batcher.emit(i)
            assert got.entered.wait(WAIT)       # the worker took 0-3 and is blocked exporting them
            for i in range(4, 10):
                batcher.emit(i)
            release.set()
            batcher.shutdown()
    finally:
        release.set()
        batcher.shutdown()
    sent = [x for b in got.batches for x in b]
    assert sent == [0, 1, 2, 3, 6, 7, 8, 9], sent
    messages = [r.getMessage() for r in caplog.records]
    assert any("span queue is full" in m for m in messages) and any("2 spans dropped" in m for m in messages)


def test_an_exporter_that_raises_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            raise RuntimeError("boom")

    batcher = Batcher(Broken(), _env(schedule_delay=600_000))
    with caplog.at_level(logging.ERROR, "mcpctl.telemetry"):
        batcher.emit(1)
        assert batcher.force_flush()
    batcher.shutdown()
    assert any("exporting spans failed" in r.getMessage() for r in caplog.records)


def test_settings_as_the_sdk_reads_them(caplog: pytest.LogCaptureFixture) -> None:
    assert _setting({}, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE") == 512
    assert _setting({"OTEL_BSP_SCHEDULE_DELAY": "250"}, "OTEL_BSP_SCHEDULE_DELAY") == 250
    with caplog.at_level(logging.WARNING, "mcpctl.telemetry"):
        assert _setting({"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE") == 2048
        assert _setting({"OTEL_BSP_EXPORT_TIMEOUT": "x"}, "OTEL_BSP_EXPORT_TIMEOUT") == 30000
    assert len(caplog.records) == 2
    batcher = Batcher(Got(), _env(max_queue_size=8, max_export_batch_size=64))
    assert batcher.size == 8 and batcher.queue.maxlen == 8
    batcher.shutdown()


def test_tracing_appends_records_to_the_batchers_deque() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.tracing import Tracing

    got = Got(want=3)
    provider = TracerProvider()
    batcher = Batcher(got, _env(schedule_delay=600_000, max_export_batch_size=3))
    provider.add_span_processor(batcher)
    tracing = Tracing(provider)
    assert tracing.queue is batcher.queue and tracing.below == 2 and tracing.sink == batcher.emit
    for i in range(3):
        tracing.start(f"s{i}", SpanKind.SERVER, None).end()
    assert got.enough.wait(WAIT)
    assert [type(r) for r in got.batches[0]] == [tuple] * 3 and [r[7] for r in got.batches[0]] == ["s0", "s1", "s2"]
    tracing.close()
    assert got.closed


def test_a_batcher_over_an_exporter_of_readable_spans_gets_readable_spans() -> None:
    """Records go straight into the Batcher's deque only when its exporter encodes them itself."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.tracing import Tracing

    class Plain(Got):
        takes_records = False

    got = Plain(want=1)
    provider = TracerProvider()
    batcher = Batcher(got, _env(schedule_delay=600_000, max_export_batch_size=1))
    provider.add_span_processor(batcher)
    tracing = Tracing(provider)
    assert not batcher.takes_records and tracing.queue is None
    tracing.start("plain", SpanKind.SERVER, None).end()
    assert got.enough.wait(WAIT)
    assert [(type(s), s.name) for s in got.batches[0]] == [(ReadableSpan, "plain")]
    tracing.close()


# -- the transport ---------------------------------------------------------------------------------

class _Collector(LoopbackHTTP):
    """An HTTP/1.1 endpoint (connections kept alive) recording each POST's headers and body."""

    def __init__(self, status: int = 200) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.connections = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                outer.connections += 1

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.posts.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._serve(Handler)


@pytest.fixture
def collector() -> Iterator[_Collector]:
    c = _Collector()
    yield c
    c.close()


def _exporter(monkeypatch: pytest.MonkeyPatch, url: str, **env: str) -> Any:
    from mcpctl.telemetry.otlp import Exporter

    for k in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
              "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return Exporter()


def _records(n: int) -> list[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.tracing import Tracing

    tracing = Tracing(TracerProvider())
    out: list[Any] = []
    tracing.sink, tracing.queue = out.append, None
    for i in range(n):
        span = tracing.start(f"tools/call s{i}", SpanKind.SERVER, None, {"mcpctl.outcome": "ok"})
        span.end()
    return out


def test_exports_share_one_kept_alive_connection_with_the_configured_headers(
        collector: _Collector, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = _exporter(monkeypatch, collector.url, OTEL_EXPORTER_OTLP_TRACES_HEADERS="x-team=blue,authorization=Bearer%20k")
    assert isinstance(exporter._client._transport, Transport)
    assert exporter.export(_records(2)) == SpanExportResult.SUCCESS
    assert exporter.export(_records(1)) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert len(collector.posts) == 2 and collector.connections == 1
    headers, body = collector.posts[0]
    assert headers["x-team"] == "blue" and headers["authorization"] == "Bearer k"
    assert headers["content-type"] == "application/x-protobuf"
    assert b"tools/call s0" in body and b"tools/call s1" in body
    assert capsys.readouterr().out == ""


def test_gzip_as_configured(collector: _Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = _exporter(monkeypatch, collector.url, OTEL_EXPORTER_OTLP_TRACES_COMPRESSION="gzip")
    exporter.export(_records(1))
    exporter.shutdown()
    headers, body = collector.posts[0]
    assert headers["content-encoding"] == "gzip" and b"tools/call s0" in gzip.decompress(body)


def test_a_collector_that_closed_the_connection_is_reached_anew(
        collector: _Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = _exporter(monkeypatch, collector.url)
    exporter.export(_records(1))
    transport = exporter._client._transport
    assert transport._conn is not None and transport._conn.sock is not None
    transport._conn.sock.close()            # as if the collector had closed it while idle
    transport._conn.sock = None
    from opentelemetry.sdk.trace.export import SpanExportResult

    assert exporter.export(_records(1)) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert len(collector.posts) == 2


def test_a_failed_post_is_logged_not_raised(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    refused = _Collector(status=400)            # a 4xx: not retried
    try:
        exporter = _exporter(monkeypatch, refused.url)
        with caplog.at_level(logging.ERROR):
            assert exporter.export(_records(1)) == SpanExportResult.FAILURE
        exporter.shutdown()
    finally:
        refused.close()
    assert any("Failed to export" in r.getMessage() for r in caplog.records)
    gone = _Collector()
    url = gone.url
    gone.close()                                # nothing listens: a connection error
    exporter = _exporter(monkeypatch, url, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="0.5")
    assert exporter.export(_records(1)) == SpanExportResult.FAILURE
    exporter.shutdown()
    assert capsys.readouterr().out == ""


def test_the_exporters_own_transport_where_this_one_does_not_apply() -> None:
    assert isinstance(transport_for("http://127.0.0.1:4318/v1/traces", {}), Transport)
    assert transport_for("http://127.0.0.1:4318/v1/traces",
                         {"OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER": "x"}) is None
    assert transport_for("grpc://collector:4317", {}) is None
    https = transport_for("https://collector.example:4318/v1/traces", {})
    assert isinstance(https, Transport) and https.context is not None
    # a CA file that is not there: the exporter's own transport, which reports it on each export as before
    assert transport_for("https://collector.example:4318/v1/traces",
                         {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}) is None


def test_https_is_verified_with_the_configured_ca(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A collector over TLS whose certificate the configured CA signed: reached, kept alive."""
    import ssl

    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    collector = _Collector()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    collector.server.socket = server_ctx.wrap_socket(collector.server.socket, server_side=True)
    try:
        url = collector.url.replace("http://", "https://")
        exporter = _exporter(monkeypatch, url, OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE=str(ca_file))
        assert isinstance(exporter._client._transport, Transport)
        from opentelemetry.sdk.trace.export import SpanExportResult

        assert exporter.export(_records(1)) == SpanExportResult.SUCCESS
        assert exporter.export(_records(1)) == SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        collector.close()
    assert len(collector.posts) == 2 and collector.connections == 1


def test_a_proxy_for_the_endpoint_keeps_the_exporters_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert transport_for("http://collector.example:4318/v1/traces", {}) is None
