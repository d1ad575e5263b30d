"""A gateway's OpenTelemetry traces: a span per request, the client's trace continued, passed on upstream.

- The span: a server middleware put in front of the gateway's own (`Tracing.middleware`) opens
  one SERVER span per request named after its method, as the child of the client's context: the
  request's `_meta` `traceparent`/`tracestate` (the 2026-07-28 keys; any era may send them), else
  the HTTP request's `traceparent`/`tracestate` headers, else a new trace. A tools/call the stdio
  transport answers on its hot path (`gateway.stdio`, past the SDK's server and its middleware)
  gets the same span from the router's entry (`Tracing.traced_call`). Once a call is routed,
  the invocation log's observer (`annotate`) names it `tools/call <server>/<tool>` and adds the
  server, tool, outcome, error class and who called as the log names them (credential and
  profile); an outcome other than ok marks it an error. Never an argument or a result.
- The upstream call: the SDK's client opens a CLIENT span for each request it sends
  (`MCP send tools/call <tool>`, its duration the upstream's latency) as a child of the current
  one, and puts its context in the request's `_meta`, for upstreams of both eras; the gateway
  makes that span real by installing its provider as the process's (`install`), and copies the
  context to HTTP headers for HTTP upstreams (`propagation`). A stdio upstream's calls go over
  the gateway's own channel, not the SDK's client: `client_span` does the same there.

The gateway's own spans (the request's, a stdio upstream call's) are light (`Span`): not the
SDK's span objects, whose making, attributes, locks and context copies cost some 30 µs each on
the call path, but a few slots, the ids drawn from `random`, the context parsed and written
with one regular expression and one f-string, and, once ended, one `ReadableSpan` handed to the
provider's span processors (the batch processor, hence the exporter in its thread, or a test's
in-memory exporter): what the SDK hands them too. The provider's sampler decides as it would
for the SDK's spans (the default, parent-based always-on, decided here without calling it);
the request's span is also made current for OpenTelemetry (a non-recording span with its
context), so the SDK client's span for an HTTP upstream is its child.

The provider is the process's (one per `mcpctl serve`): the SDK's spans go to the global one.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

from mcpctl.errors import MCPCtlError
from mcpctl.telemetry import propagation

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider

    from mcpctl.telemetry.settings import Settings

_TRACEPARENT: Final = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_DEFAULT_SAMPLER: Final = ("ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,"
                           "remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,"
                           "localParentNotSampled:AlwaysOffSampler}")
_SAMPLED: Final = TraceFlags.SAMPLED
_RANDOM: Final = TraceFlags.RANDOM_TRACE_ID        # the W3C level-2 flag the SDK sets on its trace ids too
_OK: Final = Status(StatusCode.UNSET)
_ERROR: Final = Status(StatusCode.ERROR)
_EMPTY_STATE: Final = TraceState()
_getrandbits = random.getrandbits

# The gateway's span of the request this task serves (None: none, or tracing off).
_CURRENT: ContextVar[Span | None] = ContextVar("mcpctl_span", default=None)


class Span:
    """One span of the gateway's (see the module's text): ended once (`end`), exported if sampled."""

    __slots__ = ("attributes", "context", "error", "kind", "name", "parent", "start", "tracing")

    def __init__(self, tracing: Tracing, name: str, context: SpanContext, parent: SpanContext | None,
                 kind: SpanKind, attributes: dict[str, Any] | None) -> None:
        self.tracing = tracing
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.attributes = attributes
        self.error = False
        self.start = time.time_ns()

    @property
    def recording(self) -> bool:
        return self.attributes is not None

    def failed(self, error_type: str) -> None:
        if self.attributes is not None:
            self.attributes["error.type"] = error_type
            self.error = True

    def traceparent(self) -> str:
        c = self.context
        return f"00-{c.trace_id:032x}-{c.span_id:016x}-{c.trace_flags:02x}"

    def end(self) -> None:
        if self.attributes is None:      # not sampled: its context was passed on, nothing is exported
            return
        t = self.tracing
        t.processor.on_end(ReadableSpan(
            name=self.name, context=self.context, parent=self.parent, resource=t.resource,
            attributes=self.attributes, kind=self.kind, status=_ERROR if self.error else _OK,
            start_time=self.start, end_time=time.time_ns(), instrumentation_scope=t.scope))


class Tracing:
    """Spans of one gateway process (see the module's text)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("mcpctl")
        self.resource = provider.resource
        self.scope = InstrumentationScope("mcpctl")
        # the provider's processors, as its own spans reach them (the SDK offers no public handle)
        self.processor: Any = provider._active_span_processor
        self.sampler = provider.sampler
        self.default_sampling = self.sampler.get_description() == _DEFAULT_SAMPLER

    @classmethod
    def from_settings(cls, settings: Settings) -> Tracing:
        """The OTLP/HTTP exporter (the `otel` extra; `otlp.Exporter`) when an endpoint is set, else
        spans exported nowhere."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME")
                                                            or "mcpctl"}))
        if settings.otlp:
            try:
                from mcpctl.telemetry.otlp import Exporter
            except ImportError as e:
                raise MCPCtlError("OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OTLP exporter is not installed",
                                  hint="pip install 'mcpctl[otel]' (or unset the variable)") from e
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            # in its thread, every 5 s or at 512 spans (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
            provider.add_span_processor(BatchSpanProcessor(Exporter()))
        return cls.install(provider)

    @classmethod
    def install(cls, provider: TracerProvider) -> Tracing:
        """Tracing with `provider`, made the process's (a test passes one with an in-memory exporter)."""
        trace.set_tracer_provider(provider)
        propagation.set_active(True)
        tracing = cls(provider)
        _INSTALLED.append(tracing)
        return tracing

    def start(self, name: str, kind: SpanKind, parent: SpanContext | None,
              attributes: dict[str, Any] | None = None) -> Span:
        """A span begun now, the child of `parent` (None: a new trace), sampled as the provider's
        sampler says (`attributes`: its first ones; kept only if it is sampled)."""
        trace_id = (_getrandbits(128) or 1) if parent is None else parent.trace_id
        state = _EMPTY_STATE if parent is None else parent.trace_state
        if self.default_sampling:
            sampled = parent is None or parent.trace_flags.sampled
        else:
            found = self.sampler.should_sample(None if parent is None else trace.set_span_in_context(
                NonRecordingSpan(parent)), trace_id, name, kind, attributes)
            sampled = found.decision is Decision.RECORD_AND_SAMPLE
            state = found.trace_state or state
            if sampled and found.attributes:
                attributes = {**(attributes or {}), **found.attributes}
        flags = (_SAMPLED if sampled else 0) | (_RANDOM if parent is None else parent.trace_flags & _RANDOM)
        context = SpanContext(trace_id, _getrandbits(64) or 1, False, TraceFlags(flags), state)
        return Span(self, name, context, parent, kind, (attributes or {}) if sampled else None)

    async def _serve(self, name: str, parent: SpanContext | None, call: Awaitable[Any]) -> Any:
        """Await `call` (one request) in a SERVER span, current for the gateway and OpenTelemetry alike."""
        span = self.start(name, SpanKind.SERVER, parent)
        current = _CURRENT.set(span)
        token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(span.context)))
        try:
            return await call
        except BaseException as e:    # an MCP error, a cancellation: its class, never its text
            span.failed(type(e).__name__)
            raise
        finally:
            otel_context.detach(token)
            _CURRENT.reset(current)
            span.end()

    async def middleware(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """The SDK server middleware: one SERVER span around each request the gateway handles."""
        return await self._serve(str(ctx.method), _parent(ctx), call_next(ctx))

    def traced_call(self, call: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
        """The router's `call_tool(caller, params)`, in a SERVER span of its own when no request's
        span is open (the stdio transport's hot path answers tools/call without the middleware)."""
        async def traced(caller: Any, params: Any) -> Any:
            if _CURRENT.get() is not None:
                return await call(caller, params)
            meta = params.get("_meta") if isinstance(params, dict) else None
            return await self._serve("tools/call", _from_meta(meta) if isinstance(meta, dict) else None,
                                     call(caller, params))
        return traced

    def annotate(self, canonical: str | None, outcome: str, error_class: str | None, credential: str | None,
                 profile: str | None) -> None:
        """The current request's span, told what the call was and how it ended (the log's row)."""
        span = _CURRENT.get()
        if span is None or (attrs := span.attributes) is None:
            return
        attrs["mcpctl.outcome"] = outcome
        if canonical:
            server, _, tool = canonical.partition("/")
            span.name = f"{span.name.split(' ', 1)[0]} {canonical}"
            attrs["mcpctl.server"], attrs["mcpctl.tool"] = server, tool
        if error_class:
            attrs["error.type"] = error_class
        if credential:
            attrs["mcpctl.credential"] = credential
        if profile:
            attrs["mcpctl.profile"] = profile
        if outcome != "ok":
            span.error = True

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
    params}) with the span's context in its `_meta`. Not made current: nothing runs under it."""
    if not _INSTALLED:
        yield data
        return
    method = str(data.get("method"))
    params = dict(data.get("params") or {})
    name = params.get("name")
    current = _CURRENT.get()
    parent = current.context if current is not None else _otel_parent()
    span = _INSTALLED[-1].start(f"MCP send {method} {name}" if isinstance(name, str) else f"MCP send {method}",
                                SpanKind.CLIENT, parent, {"mcp.method.name": method})
    meta = dict(params.get("_meta") or {})
    meta["traceparent"] = span.traceparent()
    if state := span.context.trace_state:
        meta["tracestate"] = state.to_header()
    params["_meta"] = meta
    try:
        yield {**data, "params": params}
    except BaseException as e:
        span.failed(type(e).__name__)
        raise
    finally:
        span.end()


def _otel_parent() -> SpanContext | None:
    """The current OpenTelemetry span's context, when something else made one current."""
    found = trace.get_current_span().get_span_context()
    return found if found.is_valid else None


def _parse(traceparent: Any, tracestate: Any) -> SpanContext | None:
    """A W3C `traceparent` (and `tracestate`) as a remote parent, None if it is not a valid one."""
    if not isinstance(traceparent, str):
        return None
    m = _TRACEPARENT.fullmatch(traceparent.strip())
    if m is None or m[1] == "ff" or (m[1] == "00" and m[5]):
        return None
    trace_id, span_id = int(m[2], 16), int(m[3], 16)
    if not trace_id or not span_id:
        return None
    state = TraceState.from_header([tracestate]) if isinstance(tracestate, str) and tracestate else _EMPTY_STATE
    return SpanContext(trace_id, span_id, True, TraceFlags(int(m[4], 16)), state)


def _from_meta(meta: dict[str, Any]) -> SpanContext | None:
    return _parse(meta.get("traceparent"), meta.get("tracestate")) if "traceparent" in meta else None


def _parent(ctx: Any) -> SpanContext | None:
    """The client's trace context: `_meta`'s keys, else the HTTP request's headers (None: a new trace)."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, dict) and "traceparent" in meta:
        return _from_meta(meta)
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None or not headers.get("traceparent"):
        return None
    return _parse(headers.get("traceparent"), headers.get("tracestate"))


def parent_context(ctx: Any) -> Context | None:
    """`_parent` as an OpenTelemetry context (None: a new trace)."""
    found = _parent(ctx)
    return None if found is None else trace.set_span_in_context(NonRecordingSpan(found))
