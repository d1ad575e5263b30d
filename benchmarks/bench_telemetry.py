"""What metrics and tracing add to one call, in CPU time of this process (not a test).

    .venv/bin/python benchmarks/bench_telemetry.py [--calls N] [--rounds R]

On a loaded machine the paired end-to-end figures of `bench_gateway.py --calls-only --telemetry`
move by more than the effect measured; this measures the effect alone, with `time.process_time`
(CPU of this process, which other processes' load disturbs far less than wall time): the pieces
a routed call runs through, with telemetry off and on, as the gateway runs them, for a call to a
stdio upstream answered on the stdio transport's hot path (`stdio`) and for one to an HTTP
upstream through the SDK's server and client (`http`):

- off: for `http`, the SDK's client span with no provider (non-recording, as in every gateway
  today); for `stdio`, nothing (the gateway's channel makes no span); the invocation log's
  observer slot empty;
- on: the gateway's request span (`stdio`: the router's entry, `Tracing.traced_call`; `http`:
  the server middleware, `Tracing.middleware`; its context read from `_meta`), the upstream
  call's span with its context put into `_meta` (`stdio`: `tracing.client_span`; `http`: the
  SDK's client span, recording), the observer (`Telemetry.observe`: the counters, the histogram,
  the span's name and attributes), spans batched (`BatchSpanProcessor`) as their records
  (`telemetry.records`, as for the gateway's OTLP exporter) to an exporter that drops them. Not
  counted: what the OTLP exporter then spends encoding and sending them, in a thread of the
  gateway's process; the last line measures the encoding alone (`telemetry.otlp.Encoder`, as the
  gateway's exporter encodes the records, against the exporter's own `encode_spans` of their
  `ReadableSpan`s), per span.

Prints the CPU per call of each and the difference; divide by the gateway's CPU per call
(`bench_gateway.py`, "gateway CPU per call") for the share of a call it is.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp.shared._otel import inject_trace_context, otel_span
from opentelemetry.trace import SpanKind

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Ctx:
    method = "tools/call"
    request = None

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {"traceparent": TRACEPARENT}


async def upstream_send() -> None:
    """The SDK client's part of sending a request upstream (`JSONRPCDispatcher.send_raw_request`)."""
    meta: dict[str, Any] = {}
    with otel_span("MCP send tools/call echo", kind=SpanKind.CLIENT,
                   attributes={"mcp.method.name": "tools/call", "jsonrpc.request.id": "7"}):
        inject_trace_context(meta)


async def run(calls: int, step: Callable[[], Awaitable[None]]) -> float:
    """CPU seconds per call."""
    t0 = time.process_time()
    for _ in range(calls):
        await step()
    return (time.process_time() - t0) / calls


def encode_cost(spans: Sequence[Any]) -> tuple[float, float]:
    """CPU seconds per span of encoding `spans` for OTLP: the gateway's (`telemetry.otlp`), the
    exporter's own (the `otel` extra; NaN without it)."""
    try:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        from mcpctl.telemetry.otlp import Encoder
    except ImportError:
        return float("nan"), float("nan")
    from mcpctl.telemetry.records import readable_span

    readable = [readable_span(s) if isinstance(s, tuple) else s for s in spans]
    encoder, n = Encoder(), max(1, len(spans))
    t0 = time.process_time()
    for _ in range(5):
        encoder.encode(spans)
    t1 = time.process_time()
    for _ in range(5):
        encode_spans(readable).SerializePartialToString()
    return (t1 - t0) / 5 / n, (time.process_time() - t1) / 5 / n


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from mcpctl.telemetry import Telemetry
    from mcpctl.telemetry.metrics import Metrics
    from mcpctl.telemetry.tracing import Tracing, client_span

    async def routed() -> None:
        observe = None
        if observe is not None:     # pragma: no cover - the slot is empty
            observe()

    async def off_http() -> None:
        await upstream_send()
        await routed()

    # before any provider exists
    off = {"stdio": [asyncio.run(run(args.calls, routed)) for _ in range(args.rounds)],
           "http": [asyncio.run(run(args.calls, off_http)) for _ in range(args.rounds)]}
    kept: list[Any] = []

    class Drop(SpanExporter):
        takes_records = True        # as the gateway's OTLP exporter (`telemetry.otlp.Exporter`)

        def export(self, spans: Any) -> SpanExportResult:
            if len(kept) < 1024:
                kept.extend(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    tele = Telemetry(Metrics("bench"), Tracing.install(provider))
    assert tele.metrics is not None and tele.tracing is not None
    tele.metrics._servers, tele.metrics._tools = frozenset({"alpha"}), frozenset({"alpha/echo"})
    middleware = tele.tracing.middleware
    data = {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}

    async def stdio_call(caller: Any, params: Any) -> None:
        with client_span(data):
            pass
        tele.observe("alpha/echo", "ok", None, 0.0004, "ci-bot", None)

    traced = tele.tracing.traced_call(stdio_call)

    async def on_stdio() -> None:
        await traced(None, {"name": "alpha__echo", "_meta": {"traceparent": TRACEPARENT}})

    async def handler(ctx: Any) -> None:
        await upstream_send()
        tele.observe("alpha/echo", "ok", None, 0.0004, "ci-bot", None)

    async def on_http() -> None:
        await middleware(Ctx(), handler)

    on = {"stdio": [asyncio.run(run(args.calls, on_stdio)) for _ in range(args.rounds)],
          "http": [asyncio.run(run(args.calls, on_http)) for _ in range(args.rounds)]}
    tele.close()
    print(f"CPU per call, median of {args.rounds} rounds of {args.calls}:")
    for path in ("stdio", "http"):
        o, n = statistics.median(off[path]) * 1e6, statistics.median(on[path]) * 1e6
        print(f"  {path:5}: off {o:.1f} us, on {n:.1f} us, added {n - o:.1f} us")
    ours, theirs = encode_cost(kept)
    print(f"OTLP encoding, in the exporter's thread: {ours * 1e6:.1f} us a span (the exporter's own: "
          f"{theirs * 1e6:.1f} us); two spans a call")


if __name__ == "__main__":
    main()
