"""Metrics and traces (issue 36; `mcpctl.telemetry`, docs/team.md).

- `/metrics` of a real `mcpctl serve --transport http` (MCPCTL_METRICS=1), scraped after known
  traffic, has the exact counts; without the token it is a 401.
- One trace from a client's span through the gateway to a streamable-HTTP upstream (a real
  process): the spans arrive in an in-memory exporter, and the upstream sees the same trace id in
  `_meta` and in its HTTP headers.
- Off by default: no telemetry object, nothing of prometheus_client or the OpenTelemetry SDK imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gwkit import Kit, LoopbackHTTP, http_upstream, text_of, wait_tools
from inproc import Harness
from test_serve_http import http_client, http_gateway_process

from ci_support import SLACK

pytestmark = pytest.mark.anyio


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=20 * SLACK) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _calls(samples: dict[Any, float], server: str, tool: str, outcome: str) -> float:
    key = ("mcpctl_calls_total", frozenset({("server", server), ("tool", tool), ("outcome", outcome)}))
    return samples.get(key, 0.0)


def _flat(data: bytes) -> list[tuple[bytes, bytes]]:
    """An OTLP export's spans, each with its resource and scope, in span-id order (to compare two encodings)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    req.ParseFromString(data)
    return sorted((s.span_id, rs.resource.SerializeToString(deterministic=True) + ss.scope.SerializeToString()
                   + s.SerializeToString(deterministic=True))
                  for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans)


async def test_metrics_count_the_calls_a_scrape_finds(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    monkeypatch.setenv("MCPCTL_METRICS", "1")
    oks, fails = 5, 3
    with http_gateway_process(kit, "p") as gw:
        metrics_url = gw.url.removesuffix("/mcp") + "/metrics"
        assert _get(metrics_url)[0] == 401
        assert _get(metrics_url, "not-the-token")[0] == 401
        async with http_client(gw.url, gw.token, "auto") as c:
            await wait_tools(c, {"alpha__echo", "alpha__fail"})
            for i in range(oks):
                assert text_of(await c.call_tool("alpha__echo", {"text": f"n{i}"})) == f"n{i}"
            for _ in range(fails):
                assert (await c.call_tool("alpha__fail", {})).is_error
            await c.call_tool("search_tools", {"query": "echo"})
        status, text = _get(metrics_url, gw.token)
    assert status == 200, text
    samples = _samples(text)
    assert _calls(samples, "alpha", "echo", "ok") == oks
    assert _calls(samples, "alpha", "fail", "tool_error") == fails
    assert _calls(samples, "mcpctl", "search_tools", "ok") == 1
    assert samples[("mcpctl_call_duration_seconds_count", frozenset({("server", "alpha"), ("tool", "echo")}))] == oks
    assert samples[("mcpctl_search_duration_seconds_count", frozenset())] == 1
    assert samples[("mcpctl_upstream_up", frozenset({("server", "alpha")}))] == 1
    assert samples[("mcpctl_sessions", frozenset())] >= 1
    assert samples[("mcpctl_parked_calls", frozenset())] == 0
    assert gw.token not in text and "n0" not in text       # never a token or an argument


def test_labels_are_bounded_to_the_catalogue() -> None:
    from mcpctl.telemetry.metrics import Metrics

    m = Metrics("p")
    m._servers, m._tools = frozenset({"alpha"}), frozenset({"alpha/echo"})
    assert m.labels("alpha/echo") == ("alpha", "echo")
    assert m.labels("alpha/made-up-123") == ("alpha", "other")
    assert m.labels("nobody/echo") == ("other", "other")
    assert m.labels(None) == ("other", "other")
    m.observe("alpha/x1", "weird outcome", 0.01)
    text = m.exposition()[0].decode()
    assert 'mcpctl_calls_total{outcome="other",server="alpha",tool="other"} 1.0' in text


def test_a_tool_that_joins_the_catalogue_gets_its_own_label() -> None:
    from types import SimpleNamespace

    from mcpctl.telemetry.metrics import Metrics

    catalogue = SimpleNamespace(version=1, tools=[SimpleNamespace(canonical_id="alpha/echo")])
    gw = SimpleNamespace(catalogue=catalogue, views=SimpleNamespace(project=SimpleNamespace(servers=["alpha"])))
    m = Metrics("p")
    m._gw = gw
    m.observe("alpha/new", "ok", 0.01)
    catalogue.tools.append(SimpleNamespace(canonical_id="alpha/new"))
    catalogue.version = 2
    m.observe("alpha/new", "ok", 0.01)
    text = m.exposition()[0].decode()
    assert 'mcpctl_calls_total{outcome="ok",server="alpha",tool="other"} 1.0' in text
    assert 'mcpctl_calls_total{outcome="ok",server="alpha",tool="new"} 1.0' in text


# -- traces ----------------------------------------------------------------------------------------


def _reset_tracer_provider() -> None:
    """OpenTelemetry's global provider can be set once per process: a test resets it, as
    OpenTelemetry's own test utilities do, so other tests see no provider; and the SDK's proxy
    tracer, which keeps the real tracer it found, is made anew (else the SDK's clients in later
    tests would still start traces of their own and put them in `_meta`)."""
    import mcp.shared._otel as sdk_otel
    from opentelemetry import trace
    from opentelemetry.util._once import Once

    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    sdk_otel._tracer = trace.get_tracer("mcp-python-sdk")


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpctl.telemetry.tracing import Tracing

    _reset_tracer_provider()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing.install(provider)
    try:
        yield tracing, exporter
    finally:
        tracing.close()
        _reset_tracer_provider()


def _trace_id(traceparent: str) -> str:
    return traceparent.split("-")[1]


async def test_one_trace_from_the_client_through_the_gateway_to_an_http_upstream(
        kit: Kit, gw: Harness, spans: Any) -> None:
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry import Telemetry

    tracing, exporter = spans
    with http_upstream(kit, "alpha", "--ask-tools") as alpha:
        kit.project("p", [alpha])
        async with gw.serve("p") as g:
            Telemetry(None, tracing).attach(g.gateway)
            async with g.client("auto") as c:
                await wait_tools(c, {"alpha__echo"})
                exporter.clear()
                with tracing.provider.get_tracer("test client").start_as_current_span("client") as client_span:
                    assert text_of(await c.call_tool("alpha__echo", {"text": "traced"})) == "traced"
                seen = (await c.call_tool("alpha__state", {})).structured_content
    trace_id = format(client_span.get_span_context().trace_id, "032x")
    meta, headers = seen["echo_meta"], seen["echo_headers"]
    assert _trace_id(meta["traceparent"]) == trace_id, meta
    assert headers.get("traceparent") == meta["traceparent"], headers   # the HTTP upstream's headers too
    done = [s for s in exporter.get_finished_spans() if format(s.context.trace_id, "032x") == trace_id]
    server = [s for s in done if s.kind == SpanKind.SERVER and s.name == "tools/call alpha/echo"]
    assert len(server) == 1, [(s.name, s.kind) for s in done]
    call = server[0]
    assert call.attributes is not None
    assert {k: call.attributes.get(k) for k in ("mcpctl.server", "mcpctl.tool", "mcpctl.outcome")} == {
        "mcpctl.server": "alpha", "mcpctl.tool": "echo", "mcpctl.outcome": "ok"}
    assert "traced" not in repr(dict(call.attributes))              # never an argument
    upstream = [s for s in done if s.kind == SpanKind.CLIENT and s.parent is not None
                and s.parent.span_id == call.context.span_id]
    assert len(upstream) == 1, [(s.name, s.kind) for s in done]
    assert meta["traceparent"].split("-")[2] == format(upstream[0].context.span_id, "016x")


def test_the_trace_context_is_read_from_meta_then_from_http_headers() -> None:
    from opentelemetry import trace

    from mcpctl.telemetry.tracing import parent_context

    tid = "4bf92f3577b34da6a3ce929d0e0e4736"

    class Ctx:
        def __init__(self, meta: Any, headers: Any) -> None:
            self.meta = meta
            self.request = type("R", (), {"headers": headers})()

    def traced(ctx: Ctx) -> str | None:
        found = parent_context(ctx)
        return None if found is None else format(trace.get_current_span(found).get_span_context().trace_id, "032x")

    header = {"traceparent": f"00-{tid}-00f067aa0ba902b7-01"}
    other = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert traced(Ctx(None, header)) == tid
    assert traced(Ctx(other, header)) == "0af7651916cd43dd8448eb211c80319c"
    assert traced(Ctx(None, {"traceparent": "garbage"})) is None
    assert traced(Ctx(None, {})) is None


# -- off by default --------------------------------------------------------------------------------


def test_off_unless_configured() -> None:
    from mcpctl.telemetry import Settings, start

    assert not Settings.from_env({}).enabled
    assert start(object(), {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}) is None
    assert Settings.from_env({"MCPCTL_METRICS_PORT": "9464"}).metrics
    assert Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}).otlp


async def test_a_gateway_without_settings_has_no_telemetry(kit: Kit, gw: Harness) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    async with gw.serve("p") as g, g.client() as c:
        await wait_tools(c, {"alpha__echo"})
        await c.call_tool("alpha__echo", {"text": "x"})
        assert g.gateway.log_call.observe is None


def test_serving_without_settings_imports_neither_library() -> None:
    code = ("import os, sys\n"
            "from mcpctl import telemetry\n"
            "assert telemetry.start(object(), {}) is None\n"
            "import mcpctl.gateway.run, mcpctl.gateway.front\n"
            "print(','.join(m for m in ('prometheus_client', 'opentelemetry.sdk') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MCPCTL_METRICS", "MCPCTL_TRACING"))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK,
                       check=True, env=env)
    assert r.stdout.strip() == ""


# -- a real `mcpctl serve`: the HTTP headers in, a port of its own for the metrics -------------------


def _metrics_port(stderr: Any) -> int:
    """The port `MCPCTL_METRICS_PORT=0` chose, from the gateway's log ("metrics at http://…:PORT/metrics")."""
    import re
    import time

    log_path = re.search(r"log: (\S+)", stderr.read_text())
    assert log_path is not None
    deadline = time.monotonic() + 20 * SLACK
    while True:
        m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", Path(log_path[1]).read_text())
        if m:
            return int(m[1])
        assert time.monotonic() < deadline, "the metrics port was never logged"
        time.sleep(0.05)


async def test_serve_continues_the_clients_traceparent_header_and_serves_metrics_on_a_port_of_its_own(
        kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    monkeypatch.setenv("MCPCTL_TRACING", "1")
    monkeypatch.setenv("MCPCTL_METRICS_PORT", "0")
    with http_upstream(kit, "alpha", "--ask-tools") as alpha:
        kit.project("p", [alpha])
        with http_gateway_process(kit, "p") as gw:
            headers = {"traceparent": f"00-{tid}-00f067aa0ba902b7-01", "tracestate": "vendor=1"}

            async def traced(request: Any) -> None:      # the client's own trace, as HTTP headers
                request.headers.update(headers)

            async with http_client(gw.url, gw.token, "auto", http={"event_hooks": {"request": [traced]}}) as c:
                await wait_tools(c, {"alpha__echo"})
                assert text_of(await c.call_tool("alpha__echo", {"text": "traced"})) == "traced"
                seen = (await c.call_tool("alpha__state", {})).structured_content
            port = _metrics_port(gw.stderr)
            status, text = _get(f"http://127.0.0.1:{port}/metrics")
    meta, sent = seen["echo_meta"], seen["echo_headers"]
    assert _trace_id(meta["traceparent"]) == tid and meta.get("tracestate") == "vendor=1", meta
    assert meta["traceparent"] != headers["traceparent"]        # the gateway's span is the upstream's parent
    assert sent == {"traceparent": meta["traceparent"], "tracestate": "vendor=1"}, sent
    assert status == 200
    assert _calls(_samples(text), "alpha", "echo", "ok") == 1


def test_gauges_read_the_gateway_and_the_log_writer_at_scrape_time() -> None:
    import logging
    from types import SimpleNamespace

    from mcpctl.telemetry.metrics import Metrics

    up = SimpleNamespace(name="alpha", state="up", on_state=lambda u: None)
    spool = SimpleNamespace(pending_bytes=lambda: 2048)
    gw = SimpleNamespace(
        catalogue=SimpleNamespace(version=1, tools=[]), views=SimpleNamespace(project=SimpleNamespace(servers=["alpha"])),
        pool=SimpleNamespace(upstreams={"alpha": up}, unavailable={"beta": "not found"}),
        sessions=SimpleNamespace(count=lambda: 3), asks=SimpleNamespace(parked={"x": 1}))
    m = Metrics("p")
    m.log_writer = SimpleNamespace(spool=spool, down=True)
    m.watch(gw)
    try:
        for state in ("up", "down", "up", "down", "up"):      # came up again twice
            up.state = state
            up.on_state(up)
        logging.getLogger("mcpctl.audit.pgwriter").warning("invocation log: the database is unreachable")
        logging.getLogger("mcpctl.db.pool").error("boom")
        samples = _samples(m.exposition()[0].decode())
    finally:
        m.close()
    assert samples[("mcpctl_upstream_up", frozenset({("server", "alpha")}))] == 1
    assert samples[("mcpctl_upstream_up", frozenset({("server", "beta")}))] == 0
    assert samples[("mcpctl_upstream_restarts_total", frozenset({("server", "alpha")}))] == 2
    assert samples[("mcpctl_sessions", frozenset())] == 3
    assert samples[("mcpctl_parked_calls", frozenset())] == 1
    assert samples[("mcpctl_log_spool_bytes", frozenset())] == 2048
    assert samples[("mcpctl_database_down", frozenset())] == 1
    assert samples[("mcpctl_warnings_total", frozenset({("area", "audit")}))] == 1
    assert samples[("mcpctl_errors_total", frozenset({("area", "db")}))] == 1


async def test_the_metrics_endpoint_answers_get_and_head_and_passes_everything_else_on() -> None:
    from mcpctl.telemetry.endpoint import MetricsEndpoint
    from mcpctl.telemetry.metrics import Metrics

    passed: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        passed.append(scope["path"])

    async def answer(method: str, path: str = "/metrics") -> tuple[int, bytes]:
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        await MetricsEndpoint(app, Metrics("p"))({"type": "http", "method": method, "path": path}, None, send)  # type: ignore[arg-type]
        return (sent[0]["status"], sent[1]["body"]) if sent else (0, b"")

    status, body = await answer("GET")
    assert status == 200 and b"# TYPE mcpctl_calls_total counter" in body
    assert await answer("HEAD") == (200, b"")
    assert (await answer("POST"))[0] == 405
    assert await answer("GET", "/mcp") == (0, b"") and passed == ["/mcp"]


# -- the OTLP exporter (the `otel` extra) ---------------------------------------------------------


class _Collector(LoopbackHTTP):
    """An OTLP/HTTP trace collector on loopback (its port held from the start): decodes each export."""

    def __init__(self) -> None:
        import http.server
        import threading

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list[tuple[str, str, dict[str, str]]] = []     # (service, span name, attributes)
        self.got = threading.Event()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                req = ExportTraceServiceRequest()
                req.ParseFromString(self.rfile.read(int(self.headers.get("content-length") or 0)))
                for rs in req.resource_spans:
                    service = next((a.value.string_value for a in rs.resource.attributes if a.key == "service.name"), "")
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            attrs = {a.key: a.value.string_value for a in span.attributes}
                            attrs["trace"], attrs["span"] = span.trace_id.hex(), span.span_id.hex()
                            attrs["parent"] = span.parent_span_id.hex()
                            collector.spans.append((service, span.name, attrs))
                collector.got.set()
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._serve(Handler)


async def test_spans_reach_an_otlp_collector(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    collector = _Collector()
    try:
        kit.server("alpha", "--ask-tools")       # a stdio upstream: the gateway's own channel
        kit.project("p", ["alpha"])
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "mcpctl-test")
        with http_gateway_process(kit, "p") as gw:
            async with http_client(gw.url, gw.token, "auto") as c:
                await wait_tools(c, {"alpha__echo"})
                assert text_of(await c.call_tool("alpha__echo", {"text": "secret-argument"})) == "secret-argument"
                seen = (await c.call_tool("alpha__state", {})).structured_content
        # the gateway has stopped: its last batch was sent as it closed
        assert collector.got.wait(20 * SLACK)
    finally:
        collector.close()
    calls = [(svc, attrs) for svc, name, attrs in collector.spans if name == "tools/call alpha/echo"]
    assert len(calls) == 1, collector.spans
    service, attrs = calls[0]
    assert service == "mcpctl-test" and attrs["mcpctl.outcome"] == "ok" and attrs["mcpctl.server"] == "alpha"
    upstream = [a for _, n, a in collector.spans if n == "MCP send tools/call echo"]
    assert len(upstream) == 1 and upstream[0]["trace"] == attrs["trace"], collector.spans
    # the stdio upstream got the upstream call's span as its parent, in `_meta`
    assert seen["echo_meta"]["traceparent"].startswith(f"00-{attrs['trace']}-{upstream[0]['span']}-"), seen
    assert "secret-argument" not in repr(collector.spans) and gw.token not in repr(collector.spans)


async def test_a_stdio_gateway_continues_the_trace_in_meta_on_its_hot_path(kit: Kit) -> None:
    """Over stdio, tools/call is answered past the SDK's server (`gateway.stdio`'s hot path): its
    SERVER span comes from the router's entry, the child of the client's `_meta` context."""
    import asyncio

    from gwkit import MCPCTL, SRC_ENV
    from test_early_front import Raw

    tid, client_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    collector = _Collector()
    kit.server("alpha", "--ask-tools")
    kit.project("p", ["alpha"])
    proc = await asyncio.create_subprocess_exec(
        MCPCTL, "serve", "--project", "p", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV,
             "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "MCPCTL_METRICS": "1"})
    c = Raw(proc)
    try:
        c.send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        c.send({"method": "notifications/initialized"})
        assert "result" in await c.reply(1)
        meta = {"traceparent": f"00-{tid}-{client_span}-01", "tracestate": "vendor=1"}
        c.send({"id": 2, "method": "tools/call", "params": {"name": "alpha__echo", "arguments": {"text": "hot"},
                                                            "_meta": meta}})
        assert (await c.reply(2))["result"]["content"][0]["text"] == "hot"
        c.send({"id": 3, "method": "tools/call", "params": {"name": "alpha__state", "arguments": {}}})
        seen = (await c.reply(3))["result"]["structuredContent"]
        assert proc.stdin is not None
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30 * SLACK) == 0
        assert collector.got.wait(20 * SLACK)      # the last batch, sent as it closed
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        c.task.cancel()
        collector.close()
    calls = [a for _, name, a in collector.spans if name == "tools/call alpha/echo"]
    assert len(calls) == 1, collector.spans
    assert calls[0]["trace"] == tid and calls[0]["parent"] == client_span and calls[0]["mcpctl.outcome"] == "ok"
    upstream = [a for _, n, a in collector.spans if n == "MCP send tools/call echo" and a["trace"] == tid]
    assert len(upstream) == 1 and upstream[0]["parent"] == calls[0]["span"], collector.spans
    assert seen["echo_meta"]["traceparent"] == f"00-{tid}-{upstream[0]['span']}-01", seen
    assert seen["echo_meta"]["tracestate"] == "vendor=1", seen


def test_the_gateways_own_otlp_encoding_is_the_exporters() -> None:
    """`telemetry.otlp.Encoder` writes the spans the exporter's own encoding would, span for span
    (the gateway's light spans directly; any other through the exporter's encoding)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.otlp import Encoder
    from mcpctl.telemetry.tracing import Tracing, _parse

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "enc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    remote = _parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=1,other=2")
    server = tracing.start("tools/call alpha/echo", SpanKind.SERVER, remote, {"mcpctl.outcome": "ok", "k": "ünï"})
    client = tracing.start("MCP send tools/call echo", SpanKind.CLIENT, server.context, {"mcp.method.name": "x"})
    client.failed("TimeoutError")
    for span in (client, server, tracing.start("bare", SpanKind.INTERNAL, None)):
        span.end()
    with provider.get_tracer("sdk").start_as_current_span("sdk span", attributes={"n": 3, "s": "x"}) as sdk:
        sdk.add_event("event", {"e": True})
    with provider.get_tracer("sdk").start_as_current_span("sdk plain", attributes={"s": "y"}):
        pass
    spans = exporter.get_finished_spans()
    assert len(spans) == 5

    assert [Encoder().span(s) is None for s in spans] == [False, False, False, True, False]   # the event's
    ours, theirs = _flat(Encoder().encode(spans)), _flat(encode_spans(spans).SerializePartialToString())
    assert ours == theirs
    provider.shutdown()


def test_a_span_ends_as_a_record_the_gateways_exporter_encodes_as_the_exporter_would() -> None:
    """With the gateway's OTLP exporter batched alone, an ended span goes to the batch as its
    record (no `ReadableSpan` on the call path); encoded with the SDK's spans in one request, it
    reads as the exporter's own encoding of its `ReadableSpan`."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.otlp import Encoder, Exporter
    from mcpctl.telemetry.records import readable_span
    from mcpctl.telemetry.tracing import Tracing, _parse

    provider = TracerProvider(resource=Resource.create({"service.name": "rec"}))
    processor = BatchSpanProcessor(Exporter())
    provider.add_span_processor(processor)
    tracing = Tracing(provider)
    assert tracing.sink == processor._batch_processor.emit
    assert tracing.queue is processor._batch_processor._queue      # appended to directly below its export size
    records: list[Any] = []
    tracing.sink, tracing.queue = records.append, None
    remote = _parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", "vendor=1")
    server = tracing.start("tools/call alpha/echo", SpanKind.SERVER, remote, {"mcpctl.outcome": "ok", "k": "ünï"})
    client = tracing.start("MCP send tools/call echo", SpanKind.CLIENT, server.context, {"n": 3})
    client.failed("TimeoutError")
    for span in (client, server, tracing.start("bare", SpanKind.INTERNAL, None)):
        span.end()
    assert [type(r) for r in records] == [tuple] * 3
    assert Encoder().record(records[0]) is None            # an int attribute: the exporter's encoding
    readable = [readable_span(r) for r in records]
    assert readable[1].parent is not None and readable[1].parent.is_remote
    assert format(readable[1].context.trace_id, "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert readable[0].parent == readable[1].context and readable[2].parent is None

    assert _flat(Encoder().encode(records)) == _flat(encode_spans(readable).SerializePartialToString())
    provider.shutdown()


async def test_a_stdio_upstream_calls_span_is_the_child_of_the_requests_and_records_its_failure(spans: Any) -> None:
    """`client_span` (a stdio upstream's call) under the request's span (`traced_call`): the
    child's context goes in `_meta`, a failure is its error class, the caller's `_meta` kept."""
    from opentelemetry.trace import SpanKind, StatusCode

    from mcpctl.telemetry.tracing import client_span

    tracing, exporter = spans
    sent: list[dict[str, Any]] = []

    async def call(caller: Any, params: Any) -> None:
        data = {"method": "tools/call", "params": {"name": "echo", "_meta": {"progressToken": "p"}}}
        with client_span(data) as traced:
            sent.append(traced)
            raise TimeoutError
    with pytest.raises(TimeoutError):
        await tracing.traced_call(call)(None, {"_meta": {
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "v=1"}})
    client, server = exporter.get_finished_spans()
    assert (client.name, client.kind, server.name, server.kind) == (
        "MCP send tools/call echo", SpanKind.CLIENT, "tools/call", SpanKind.SERVER)
    assert client.parent.span_id == server.context.span_id and server.parent.span_id == 0x00f067aa0ba902b7
    assert dict(client.attributes) == {"mcp.method.name": "tools/call", "error.type": "TimeoutError"}
    assert client.status.status_code == StatusCode.ERROR == server.status.status_code
    meta = sent[0]["params"]["_meta"]
    assert meta == {"progressToken": "p", "tracestate": "v=1",
                    "traceparent": f"00-4bf92f3577b34da6a3ce929d0e0e4736-{client.context.span_id:016x}-01"}


def test_a_forked_child_draws_ids_of_its_own() -> None:
    import os

    from mcpctl.telemetry.w3c import _span_id

    _span_id()                      # the parent's block, drawn from
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                    # pragma: no cover - the child
        os.write(write, _span_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 16 and child != _span_id()


def test_records_appended_to_the_batch_directly_still_wake_its_worker_and_all_arrive() -> None:
    """Below its export size a record goes straight into the batch's deque (`Tracing.queue`); the
    one that reaches it goes through `emit`, which wakes the worker: every span exported, in
    order, without waiting for the schedule (5 s here would fail the wait)."""
    import threading

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.tracing import Tracing

    got: list[Any] = []
    done = threading.Event()

    class Records(SpanExporter):
        takes_records = True

        def export(self, spans: Any) -> SpanExportResult:
            got.extend(spans)
            if len(got) >= 1024:
                done.set()
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Records(), schedule_delay_millis=60_000, max_export_batch_size=256))
    tracing = Tracing(provider)
    assert tracing.queue is not None and tracing.below == 255
    for i in range(1024):
        tracing.start(f"s{i}", SpanKind.SERVER, None).end()
    assert done.wait(10), len(got)
    assert [r[7] for r in got] == [f"s{i}" for i in range(1024)]
    tracing.close()
    assert tracing.queue is None


def test_the_encoders_caches_and_groups_write_what_the_exporters_own_encoding_does() -> None:
    """Records of two tracings (two resources) interleaved with the SDK's spans, attribute sets
    repeated (cached), one unhashable (not cached, the exporter's encoding): encoded twice, each
    time span for span as `encode_spans` writes their `ReadableSpan`s."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from mcpctl.telemetry.otlp import Encoder
    from mcpctl.telemetry.records import readable_span
    from mcpctl.telemetry.tracing import Tracing, _parse

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "one"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracings = (Tracing(provider), Tracing(TracerProvider(resource=Resource.create({"service.name": "two"}))))
    records: list[Any] = []
    for t in tracings:
        t.sink, t.queue = records.append, None
    remote = _parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", "vendor=1")
    items: list[Any] = []
    for i in range(40):
        attributes: dict[str, Any] = {"a": "x", "b": str(i % 3)} if i % 7 else {"a": ["unhashable"]}
        tracings[i % 3 == 0].start(f"n{i % 4}", SpanKind.SERVER if i % 2 else SpanKind.CLIENT,
                                   remote if i % 5 else None, attributes).end()
        items.append(records[-1])
        if i % 6 == 0:
            with provider.get_tracer("sdk").start_as_current_span(f"sdk{i}") as sdk_span:
                sdk_span.set_attribute("k", "v")
            items.append(memory.get_finished_spans()[-1])

    expected = _flat(encode_spans([readable_span(r) if isinstance(r, tuple) else r for r in items])
                    .SerializePartialToString())
    encoder = Encoder()
    assert len(expected) == 47
    assert _flat(encoder.encode(items)) == expected == _flat(encoder.encode(items))
    provider.shutdown()
