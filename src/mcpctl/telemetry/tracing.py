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
the call path, but a few slots holding the W3C context as it is written (hex ids sliced from one
block of `os.urandom`, the flags, the tracestate header): the client's `traceparent` is parsed
with one regular expression into strings, the upstream's is joined from them, and an
OpenTelemetry `SpanContext` is made only when asked for. Once ended, a span is one tuple of those
fields (`Record`): when the provider's one span processor batches for the gateway's OTLP
exporter (`otlp.Exporter`, which encodes records itself; the processor is `export.Batcher`, or
the SDK's `BatchSpanProcessor`), the record goes straight into its batch, and nothing else is made for it, in the call's thread or the exporter's; with
any other processors (a test's in-memory exporter) it is made the `ReadableSpan` the SDK hands
them (`readable_span`); with none (`MCPCTL_TRACING=1`), nothing. The provider's sampler decides
as it would for the SDK's spans (the default, parent-based always-on, decided here without
calling it). The SDK client's span for an HTTP upstream is the request span's child without the
request span being made OpenTelemetry's current one on every call (a context made and attached
per call): the provider is installed as the process's behind a thin wrapper (`_Provider`) whose
tracers give a span begun under a request span that request span as its parent, unless a
recording span of OpenTelemetry's is current (the SDK's own client span, whose context it then
injects as before).

The provider is the process's (one per `mcpctl serve`): the SDK's spans go to the global one.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.propagation import _SPAN_KEY

from mcpctl.errors import MCPCtlError
from mcpctl.telemetry import propagation
from mcpctl.telemetry.records import Record, readable_span, trace_state
from mcpctl.telemetry.w3c import _FLAGS, _meta_fields, _parent_fields, _span_id, _trace_id
from mcpctl.telemetry.w3c import _SPAN_IDS as _SPAN_IDS  # popped inline on the call path
from mcpctl.telemetry.w3c import _TRACE_IDS as _TRACE_IDS
from mcpctl.telemetry.w3c import _parse as _parse  # re-exported: tests read a traceparent with it
from mcpctl.telemetry.w3c import parent_context as parent_context  # re-exported

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider

    from mcpctl.telemetry.settings import Settings

_DEFAULT_SAMPLER: Final = ("ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,"
                           "remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,"
                           "localParentNotSampled:AlwaysOffSampler}")
_SAMPLED: Final = int(TraceFlags.SAMPLED)
_RANDOM: Final = int(TraceFlags.RANDOM_TRACE_ID)   # the W3C level-2 flag the SDK sets on its trace ids too
_SPAN_NAME: Final = "tools/call"
_ALWAYS_ON: Final = "AlwaysOnSampler"           # OTEL_TRACES_SAMPLER=always_on
_new: Final = object.__new__
# an enum member read from its class is a Python-level lookup (0.17 µs each): read once
_SERVER: Final = SpanKind.SERVER
_CLIENT: Final = SpanKind.CLIENT

# The gateway's span of the request this task serves (None: none, or tracing off).
_CURRENT: ContextVar[Span | None] = ContextVar("mcpctl_span", default=None)

class Span(NonRecordingSpan):
    """One span of the gateway's (see the module's text): ended once (`end`), exported if sampled.

    Its fields are the strings and ints of the W3C context (hex ids, the flags, the tracestate
    header): an OpenTelemetry `SpanContext` is made only when something asks for one
    (`get_span_context`: the SDK's client span of an HTTP upstream, a test). For OpenTelemetry
    it is a non-recording span (it is made current as such), which it also is for everything but
    the gateway's own export."""

    __slots__ = ("attributes", "error", "flags", "id", "kind", "made", "name", "parent", "remote", "start",
                 "state", "trace", "tracing")

    def __init__(self, tracing: Tracing, name: str, kind: SpanKind, trace_id: str, parent: str | None,
                 remote: bool, flags: int, state: str, attributes: dict[str, Any] | None) -> None:
        self.tracing = tracing
        self.name = name
        self.kind = kind
        self.trace = trace_id
        self.id = _span_id()
        self.parent = parent
        self.remote = remote
        self.flags = flags
        self.state = state
        self.attributes = attributes
        self.error = False
        self.made: SpanContext | None = None     # `get_span_context`'s, once asked
        self.start = time.time_ns()

    @property
    def recording(self) -> bool:
        return self.attributes is not None

    @property
    def context(self) -> SpanContext:
        return self.get_span_context()

    def get_span_context(self) -> SpanContext:
        found = self.made
        if found is None:
            found = self.made = SpanContext(int(self.trace, 16), int(self.id, 16), False,
                                                TraceFlags(self.flags), trace_state(self.state))
        return found

    def failed(self, error_type: str) -> None:
        if self.attributes is not None:
            self.attributes["error.type"] = error_type
            self.error = True

    def traceparent(self) -> str:
        return f"00-{self.trace}-{self.id}{_FLAGS[self.flags]}"

    def end(self, end_time: int | None = None) -> None:
        attributes = self.attributes
        if attributes is None:      # not sampled: its context was passed on, nothing is exported
            return
        t = self.tracing
        record = (t, self.trace, self.id, self.parent, self.remote, self.flags, self.state, self.name, self.kind,
                  self.start, end_time or time.time_ns(), attributes, self.error)
        queue = t.queue
        if queue is not None and len(queue) < t.below:      # the batch's `emit`, less its frame (`_direct`)
            queue.appendleft(record)
        elif t.sink is not None:
            t.sink(record)

    def __repr__(self) -> str:
        return f"Span({self.name!r}, {self.traceparent()})"


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
        description = self.sampler.get_description()
        self.default_sampling = description == _DEFAULT_SAMPLER
        self.always_on = description == _ALWAYS_ON      # every span sampled, the parent's tracestate kept
        # a child of a sampled span of ours is sampled, with its tracestate and attributes as given
        self.fast_children = self.default_sampling or self.always_on
        # `queue`: the batch's own deque when `sink` is its `emit`, which a record is appended to
        # directly while it holds fewer than `below` (no wake-up of its worker due, no frame, no getpid)
        self.queue: Any = None
        self.below = 0
        self.sink = self._sink()

    def _sink(self) -> Callable[[Record], None] | None:
        """Where an ended span goes: nowhere (no span processor); as its record, straight into the
        batch of the one processor when it batches for the gateway's OTLP exporter (which encodes
        records itself, `otlp.Encoder.record`); else as a `ReadableSpan` to the processors."""
        processors = getattr(self.processor, "_span_processors", None)
        if processors is not None and not processors:
            return None
        if processors is not None and len(processors) == 1:
            only = processors[0]
            if getattr(only, "takes_records", False):      # `export.Batcher` over the gateway's exporter: its deque
                self.queue, self.below = only.queue, only.size - 1
                direct: Callable[[Record], None] = only.emit
                return direct
            exporter = getattr(processors[0], "span_exporter", None)
            batch = getattr(processors[0], "_batch_processor", None)
            if getattr(exporter, "takes_records", False) and batch is not None and callable(getattr(batch, "emit", None)):
                emit: Callable[[Record], None] = batch.emit
                self._direct(batch)
                return emit
        on_end = self.processor.on_end

        def readable(record: Record) -> None:
            on_end(readable_span(record))
        return readable

    def _direct(self, batch: Any) -> None:
        """Append records to `batch`'s deque where its `emit` would do only that: below its export
        size (at it, `emit` wakes its worker; full, it warns and drops); not once it is shut down
        (`close`). A forked child's batch is reset by the SDK's own fork hook, the same deque."""
        queue, size = getattr(batch, "_queue", None), getattr(batch, "_max_export_batch_size", None)
        if isinstance(queue, deque) and isinstance(size, int):
            self.queue, self.below = queue, size - 1

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
            from mcpctl.telemetry.export import Batcher

            # in its thread, every 5 s or at 512 spans (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
            provider.add_span_processor(Batcher(Exporter()))
        return cls.install(provider)

    @classmethod
    def install(cls, provider: TracerProvider) -> Tracing:
        """Tracing with `provider`, made the process's (a test passes one with an in-memory exporter)."""
        trace.set_tracer_provider(_Provider(provider))
        propagation.set_active(_ClientSpan)
        tracing = cls(provider)
        _INSTALLED.append(tracing)
        return tracing

    def start(self, name: str, kind: SpanKind, parent: SpanContext | None,
              attributes: dict[str, Any] | None = None) -> Span:
        """A span begun now, the child of `parent` (None: a new trace), sampled as the provider's
        sampler says (`attributes`: its first ones; kept only if it is sampled)."""
        if parent is None:
            return self._start(name, kind, None, None, False, 0, "", attributes)
        return self._start(name, kind, f"{parent.trace_id:032x}", f"{parent.span_id:016x}", parent.is_remote,
                           int(parent.trace_flags), parent.trace_state.to_header(), attributes)

    def _start(self, name: str, kind: SpanKind, trace_id: str | None, parent: str | None, remote: bool,
               flags: int, state: str, attributes: dict[str, Any] | None) -> Span:
        """`start` with the parent as the W3C fields (`trace_id` None: a new trace)."""
        new = trace_id is None
        if trace_id is None:
            trace_id = _TRACE_IDS.pop() if _TRACE_IDS else _trace_id()     # `_trace_id()`, less its frame
        if self.default_sampling:
            sampled = new or bool(flags & _SAMPLED)
        elif self.always_on:        # the sampler's own answer, without asking it (`StaticSampler`)
            sampled = True
        else:
            sampled, state, attributes = self._sample(name, kind, trace_id, parent, remote, flags, state, attributes)
        flags = ((_SAMPLED | _RANDOM) if sampled else _RANDOM) if new else \
            (flags & _RANDOM) | (_SAMPLED if sampled else 0)
        span = _new(Span)       # `Span(...)` less its `__init__` frame and the call's argument tuple
        span.tracing, span.name, span.kind, span.trace, span.id, span.parent = self, name, kind, trace_id, \
            _SPAN_IDS.pop() if _SPAN_IDS else _span_id(), parent
        span.remote, span.flags, span.state, span.error, span.made = remote, flags, state, False, None
        span.attributes = (attributes or {}) if sampled else None
        span.start = time.time_ns()
        return span

    def _sample(self, name: str, kind: SpanKind, trace_id: str, parent: str | None, remote: bool,
                flags: int, state: str, attributes: dict[str, Any] | None
                ) -> tuple[bool, str, dict[str, Any] | None]:
        """The provider's sampler asked (one other than the default): sampled, the tracestate, the attributes."""
        context = None
        if parent is not None:
            context = trace.set_span_in_context(NonRecordingSpan(SpanContext(
                int(trace_id, 16), int(parent, 16), remote, TraceFlags(flags), trace_state(state))))
        found = self.sampler.should_sample(context, int(trace_id, 16), name, kind, attributes)
        sampled = found.decision is Decision.RECORD_AND_SAMPLE
        if found.trace_state is not None:
            state = found.trace_state.to_header()
        if sampled and found.attributes:
            attributes = {**(attributes or {}), **found.attributes}
        return sampled, state, attributes

    async def _serve(self, name: str, parent: tuple[str, str, int, str] | None, call: Awaitable[Any]) -> Any:
        """Await `call` (one request) in a SERVER span, current for the gateway (and so for
        OpenTelemetry's tracers, `_Tracer`)."""
        span = self._start(name, _SERVER, None, None, False, 0, "", None) if parent is None else \
            self._start(name, _SERVER, parent[0], parent[1], True, parent[2], parent[3], None)
        current = _CURRENT.set(span)
        try:
            return await call
        except BaseException as e:    # an MCP error, a cancellation: its class, never its text
            span.failed(type(e).__name__)
            raise
        finally:
            _CURRENT.reset(current)
            span.end()

    async def middleware(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """The SDK server middleware: one SERVER span around each request the gateway handles."""
        return await self._serve(str(ctx.method), _parent_fields(ctx), call_next(ctx))

    def traced_call(self, call: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
        """The router's `call_tool(caller, params)`, in a SERVER span of its own when no request's
        span is open (the stdio transport's hot path answers tools/call without the middleware)."""
        start = self._start

        async def traced(caller: Any, params: Any) -> Any:     # `_serve`, one coroutine less a call
            if _CURRENT.get() is not None:
                return await call(caller, params)
            meta = params.get("_meta") if isinstance(params, dict) else None
            parent = _meta_fields(meta) if isinstance(meta, dict) else None
            span = start(_SPAN_NAME, _SERVER, None, None, False, 0, "", None) if parent is None else \
                start(_SPAN_NAME, _SERVER, parent[0], parent[1], True, parent[2], parent[3], None)
            current = _CURRENT.set(span)
            try:
                return await call(caller, params)
            except BaseException as e:
                span.failed(type(e).__name__)
                raise
            finally:
                _CURRENT.reset(current)
                span.end()
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
            name = span.name
            span.name = (name if " " not in name else name.split(" ", 1)[0]) + " " + canonical
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
        propagation.set_active(None)
        self.queue = None
        if self in _INSTALLED:
            _INSTALLED.remove(self)
        self.provider.shutdown()


_INSTALLED: list[Tracing] = []


class _Provider(trace.TracerProvider):
    """The provider as OpenTelemetry's API hands it out (the SDK's client takes its tracer there):
    the gateway's, whose tracers take the request's span as the parent of a span begun under it
    (`_Tracer`), so the request's span need not be made OpenTelemetry's current one on the call path."""

    def __init__(self, inner: TracerProvider) -> None:
        self.inner = inner

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _Tracer(self.inner.get_tracer(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:        # shutdown, force_flush, add_span_processor, ...
        return getattr(self.inner, name)


class _Tracer(trace.Tracer):
    """A tracer of the provider's whose spans begun with no context given, under the gateway's
    request span and no span of OpenTelemetry's opened since (the SDK's client span of an HTTP
    upstream), are that request span's children."""

    def __init__(self, inner: trace.Tracer) -> None:
        self.inner = inner

    def start_span(self, name: str, context: Context | None = None, *args: Any, **kwargs: Any) -> trace.Span:
        return self.inner.start_span(name, _under_request(context), *args, **kwargs)

    @contextlib.contextmanager
    def start_as_current_span(self, name: str, context: Context | None = None,  # type: ignore[override]
                              *args: Any, **kwargs: Any) -> Iterator[trace.Span]:
        with self.inner.start_as_current_span(name, _under_request(context), *args, **kwargs) as span:
            yield span


def _under_request(context: Context | None) -> Context | None:
    """`context`, else the current one with the gateway's request span as its span (None: no
    request span, or a recording span of OpenTelemetry's is current: the current context)."""
    span = _CURRENT.get() if context is None else None
    if span is None:
        return context
    current = otel_context.get_value(_SPAN_KEY)
    if isinstance(current, trace.Span) and current.is_recording():
        return None
    return otel_context.set_value(_SPAN_KEY, span)


class _ClientSpan:
    """`client_span`'s context manager (a class: a generator's costs more on the call path). As the
    child of the request's span under the default sampler or `always_on` (the common case) it
    makes no `Span`: its id and start on entry, its record on exit."""

    __slots__ = ("data", "method", "name", "parent", "sid", "span", "start")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.parent: Span | None = None
        self.span: Span | None = None

    def __enter__(self) -> dict[str, Any]:
        data = self.data
        if not _INSTALLED:
            return data
        params = data.get("params")
        params = dict(params) if params else {}
        method = self.method = str(data.get("method"))
        tool = params.get("name")
        name = f"MCP send {method} {tool}" if isinstance(tool, str) else f"MCP send {method}"
        current = _CURRENT.get()
        if current is not None and current.tracing.fast_children:
            self.parent, self.name, sid = current, name, _SPAN_IDS.pop() if _SPAN_IDS else _span_id()
            self.sid, self.start = sid, time.time_ns()
            traceparent, state = f"00-{current.trace}-{sid}{_FLAGS[current.flags]}", current.state
        else:
            span = self.span = (_INSTALLED[-1] if current is None else current.tracing).start(
                name, _CLIENT, _otel_parent() if current is None else current.context,
                {"mcp.method.name": method})
            traceparent, state = span.traceparent(), span.state
        meta = params.get("_meta")
        meta = dict(meta) if meta else {}
        meta["traceparent"] = traceparent
        if state:
            meta["tracestate"] = state
        params["_meta"] = meta
        return {**data, "params": params}

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        parent = self.parent
        if parent is not None:
            t = parent.tracing
            if parent.attributes is not None and t.sink is not None:     # sampled as its parent
                attributes = {"mcp.method.name": self.method}
                if kind is not None:
                    attributes["error.type"] = kind.__name__
                record = (t, parent.trace, self.sid, parent.id, False, parent.flags, parent.state, self.name,
                          _CLIENT, self.start, time.time_ns(), attributes, kind is not None)
                queue = t.queue
                if queue is not None and len(queue) < t.below:
                    queue.appendleft(record)
                else:
                    t.sink(record)
            return
        span = self.span
        if span is not None:
            if kind is not None:
                span.failed(kind.__name__)
            span.end()


def client_span(data: dict[str, Any]) -> _ClientSpan:
    """The upstream call's span for a request the gateway writes itself (a stdio upstream's raw
    channel, `upstream.stdio`), as the SDK's client makes one for the others: `with` it, `data`
    ({method, params}) with the span's context in its `_meta`. Not made current: nothing runs under it."""
    return _ClientSpan(data)


def _otel_parent() -> SpanContext | None:
    """The current OpenTelemetry span's context, when something else made one current."""
    found = trace.get_current_span().get_span_context()
    return found if found.is_valid else None
