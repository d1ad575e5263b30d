"""A gateway's OpenTelemetry traces: a span per request, the client's trace continued, passed on upstream.

- The span: a server middleware put in front of the gateway's own (`Tracing.middleware`) opens
  one SERVER span per request named after its method, as the child of the client's context: the
  request's `_meta` `traceparent`/`tracestate` (the 2026-07-28 keys; any era may send them), else
  the HTTP request's `traceparent`/`tracestate` headers, else a new trace. Once a call is routed,
  the invocation log's observer (`annotate`) names it `tools/call <server>/<tool>` and adds the
  server, tool, outcome, error class and who called as the log names them (credential and
  profile); an outcome other than ok marks it an error. Never an argument or a result.
- The upstream call: the SDK's client opens a CLIENT span for each request it sends
  (`MCP send tools/call <tool>`, its duration the upstream's latency) as a child of the current
  one, and puts its context in the request's `_meta`, for upstreams of both eras; the gateway
  makes that span real by installing its provider as the process's (`install`), and copies the
  context to HTTP headers for HTTP upstreams (`propagation`). A stdio upstream's calls go over
  the gateway's own channel, not the SDK's client: `client_span` does the same there.

The provider is the process's (one per `mcpctl serve`): the SDK's spans go to the global one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcpctl.errors import MCPCtlError
from mcpctl.telemetry import propagation

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider

    from mcpctl.telemetry.settings import Settings

_KEYS = ("traceparent", "tracestate")
_W3C = TraceContextTextMapPropagator()      # the two keys alone (the global propagator adds baggage)


class Tracing:
    """Spans of one gateway process (see the module's text)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("mcpctl")

    @classmethod
    def from_settings(cls, settings: Settings) -> Tracing:
        """The OTLP/HTTP exporter (the `otel` extra) when an endpoint is set, else spans exported nowhere."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME")
                                                            or "mcpctl"}))
        if settings.otlp:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError as e:
                raise MCPCtlError("OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OTLP exporter is not installed",
                                  hint="pip install 'mcpctl[otel]' (or unset the variable)") from e
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return cls.install(provider)

    @classmethod
    def install(cls, provider: TracerProvider) -> Tracing:
        """Tracing with `provider`, made the process's (a test passes one with an in-memory exporter)."""
        trace.set_tracer_provider(provider)
        propagation.set_active(True)
        tracing = cls(provider)
        _INSTALLED.append(tracing)
        return tracing

    async def middleware(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """The SDK server middleware: one SERVER span around each request the gateway handles."""
        span = self.tracer.start_span(str(ctx.method), context=parent_context(ctx), kind=SpanKind.SERVER)
        token = otel_context.attach(trace.set_span_in_context(span))    # (start_as_current_span's, lighter)
        try:
            return await call_next(ctx)
        except BaseException as e:    # an MCP error, a cancellation: its class, never its text
            span.set_attribute("error.type", type(e).__name__)
            span.set_status(StatusCode.ERROR)
            raise
        finally:
            otel_context.detach(token)
            span.end()

    def annotate(self, canonical: str | None, outcome: str, error_class: str | None, credential: str | None,
                 profile: str | None) -> None:
        """The current request's span, told what the call was and how it ended (the log's row)."""
        span = trace.get_current_span()
        if not span.is_recording():
            return
        attrs: dict[str, str] = {"mcpctl.outcome": outcome}
        if canonical:
            server, _, tool = canonical.partition("/")
            span.update_name(f"{getattr(span, 'name', 'tools/call').split(' ')[0]} {canonical}")
            attrs["mcpctl.server"], attrs["mcpctl.tool"] = server, tool
        if error_class:
            attrs["error.type"] = error_class
        if credential:
            attrs["mcpctl.credential"] = credential
        if profile:
            attrs["mcpctl.profile"] = profile
        span.set_attributes(attrs)
        if outcome != "ok":
            span.set_status(StatusCode.ERROR)

    def close(self) -> None:
        """Export what is left (the batch's last spans) and stop passing the context to headers."""
        propagation.set_active(False)
        if self in _INSTALLED:
            _INSTALLED.remove(self)
        self.provider.shutdown()


_INSTALLED: list[Tracing] = []


@contextlib.contextmanager
def client_span(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The upstream call's span for a request the gateway writes itself (a stdio upstream's raw
    channel, `upstream.stdio`), as the SDK's client makes one for the others: `data` ({method,
    params}) with the span's context in its `_meta`."""
    method = str(data.get("method"))
    params = dict(data.get("params") or {})
    name = params.get("name")
    tracer = _INSTALLED[-1].tracer if _INSTALLED else trace.get_tracer("mcpctl")
    with tracer.start_as_current_span(f"MCP send {method}" + (f" {name}" if isinstance(name, str) else ""),
                                      kind=SpanKind.CLIENT, attributes={"mcp.method.name": method},
                                      record_exception=False, set_status_on_exception=False) as span:
        meta = dict(params.get("_meta") or {})
        _W3C.inject(meta)
        params["_meta"] = meta
        try:
            yield {**data, "params": params}
        except BaseException as e:
            span.set_attribute("error.type", type(e).__name__)
            span.set_status(StatusCode.ERROR)
            raise


def parent_context(ctx: Any) -> Context | None:
    """The client's trace context: `_meta`'s keys, else the HTTP request's headers (None: a new trace)."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict) and "traceparent" in meta:
        carrier: Any = {k: meta[k] for k in _KEYS if isinstance(meta.get(k), str)}
    else:
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        if headers is None or not headers.get("traceparent"):
            return None
        carrier = {k: headers[k] for k in _KEYS if headers.get(k)}
    found = _W3C.extract(carrier)
    return found if trace.get_current_span(found).get_span_context().is_valid else None
