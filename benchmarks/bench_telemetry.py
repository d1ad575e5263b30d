"""What metrics and tracing add to one call, in CPU time of this process (not a test).

    .venv/bin/python benchmarks/bench_telemetry.py [--calls N] [--rounds R]

On a loaded machine the paired end-to-end figures of `bench_gateway.py --calls-only --telemetry`
move by more than the effect measured; this measures the effect alone, with `time.process_time`
(CPU of this process, which other processes' load disturbs far less than wall time): the pieces
a routed call runs through, with telemetry off and on, as the gateway runs them:

- off: the SDK's client span with no provider (non-recording, as in every gateway today) and the
  invocation log's observer slot empty;
- on: the gateway's request span (`Tracing.middleware`, its context read from `_meta`), the SDK's
  client span (recording) with the context put into `_meta`, the observer (`Telemetry.observe`:
  the counters, the histogram, the span's name and attributes), spans batched
  (`BatchSpanProcessor`) to an exporter that drops them. Not counted: what the OTLP exporter then
  spends encoding and sending them, in a thread of the gateway's process (about 45 µs a span
  to encode, docs/team.md).

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


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    async def off() -> None:
        await upstream_send()
        observe = None
        if observe is not None:     # pragma: no cover - the slot is empty
            observe()

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from mcpctl.telemetry import Telemetry
    from mcpctl.telemetry.metrics import Metrics
    from mcpctl.telemetry.tracing import Tracing

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    off_s = [asyncio.run(run(args.calls, off)) for _ in range(args.rounds)]   # before any provider exists
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    tele = Telemetry(Metrics("bench"), Tracing.install(provider))
    assert tele.metrics is not None and tele.tracing is not None
    tele.metrics._servers, tele.metrics._tools = frozenset({"alpha"}), frozenset({"alpha/echo"})
    middleware = tele.tracing.middleware

    async def handler(ctx: Any) -> None:
        await upstream_send()
        tele.observe("alpha/echo", "ok", None, 0.0004, "ci-bot", None)

    async def on() -> None:
        await middleware(Ctx(), handler)

    on_s = [asyncio.run(run(args.calls, on)) for _ in range(args.rounds)]
    tele.close()
    o, n = statistics.median(off_s) * 1e6, statistics.median(on_s) * 1e6
    print(f"CPU per call, median of {args.rounds} rounds of {args.calls}: off {o:.1f} us, on {n:.1f} us, "
          f"added {n - o:.1f} us")


if __name__ == "__main__":
    main()
