"""The gateway's span batch and its HTTP connection to the collector (the `otel` extra).

The SDK's `BatchSpanProcessor` and the `requests`-based transport its OTLP/HTTP exporter sends
with cost the exporter's thread more than encoding the spans does: per batch, the processor's
strategy, locks and metrics, and per request `requests`' session machinery (its environment
read for proxies, its adapters, a new connection to a collector that keeps them alive). When the
gateway's OTLP exporter (`otlp.Exporter`) is the provider's only processor's, these replace them:

- `Batcher`: the span processor. A deque (`queue`, which `tracing` appends the gateway's span
  records to directly below the export size), one thread woken when a batch's worth is queued
  or the schedule delay has passed, exporting batches of at most the export size; the SDK's
  `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` and
  `OTEL_BSP_EXPORT_TIMEOUT` honoured as it honours them; full, it drops the oldest span and
  warns (once, then how many at the next export); `force_flush` and `shutdown` export what is left.
- `Transport`: the exporter's HTTP transport (its client keeps its retries, compression,
  headers and timeout): one kept-alive `http.client` connection, reopened when the collector
  closes it, https verified with the certificate settings the exporter's own transport takes
  (`OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE`, `..._CLIENT_CERTIFICATE`, `..._CLIENT_KEY`, else
  `requests`' bundle). Not used when a proxy applies to the endpoint or a credential provider
  is configured: the exporter's own transport then sends, as before.
"""

from __future__ import annotations

import http.client
import logging
import os
import ssl
import threading
import urllib.parse
import urllib.request
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.exporter.http.transport._base import BaseHTTPResult, BaseHTTPTransport
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("mcpctl.telemetry")

_DEFAULTS: Final = {"OTEL_BSP_SCHEDULE_DELAY": 5000, "OTEL_BSP_MAX_QUEUE_SIZE": 2048,
                    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 512, "OTEL_BSP_EXPORT_TIMEOUT": 30000}


def _setting(environ: Mapping[str, str], name: str) -> int:
    """An `OTEL_BSP_*` setting as the SDK reads it: a positive integer (the schedule delay and the
    export timeout: zero or more), else its default, with a warning."""
    default, raw = _DEFAULTS[name], environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    least = 1 if name in ("OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE") else 0
    if value < least:
        log.warning("telemetry: %s=%s is not valid; using %d", name, raw, default)
        return default
    return value


class Batcher(SpanProcessor):
    """The span processor of the gateway's own OTLP exporter (see the module's text). Takes the
    gateway's span records (`tracing.Record`) and the SDK's ended spans alike."""

    def __init__(self, exporter: SpanExporter, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.exporter = exporter
        self.delay = _setting(env, "OTEL_BSP_SCHEDULE_DELAY") / 1e3
        self.size = _setting(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
        self.max_queue = _setting(env, "OTEL_BSP_MAX_QUEUE_SIZE")
        self.timeout = _setting(env, "OTEL_BSP_EXPORT_TIMEOUT") / 1e3
        if self.size > self.max_queue:
            log.warning("telemetry: OTEL_BSP_MAX_EXPORT_BATCH_SIZE=%d is above OTEL_BSP_MAX_QUEUE_SIZE=%d; "
                        "using %d", self.size, self.max_queue, self.max_queue)
            self.size = self.max_queue
        # newest on the left, taken from the right; full, the oldest falls off (as the SDK's)
        self.queue: deque[Any] = deque(maxlen=self.max_queue)
        self.dropped = 0
        self.closed = False
        self._lock = threading.Lock()           # one export at a time (the worker, a flush)
        self._wake = threading.Event()
        self._thread = self._start()
        reinit = weakref.WeakMethod(self._after_fork)
        os.register_at_fork(after_in_child=lambda: (found := reinit()) is not None and found())

    @property
    def takes_records(self) -> bool:
        """Whether the gateway's span records may be queued as they are: its exporter encodes them
        itself (`otlp.Exporter`); `tracing` then appends them to `queue` below `size`, else hands it
        `ReadableSpan`s."""
        return bool(getattr(self.exporter, "takes_records", False))

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._work, name="mcpctl-otlp-export", daemon=True)
        thread.start()
        return thread

    def _after_fork(self) -> None:
        """A forked child: its own lock, queue and thread (the parent's spans are the parent's)."""
        self._lock, self._wake = threading.Lock(), threading.Event()
        self.queue.clear()
        if not self.closed:
            self._thread = self._start()

    # -- the span processor ------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self.emit(span)

    def emit(self, item: Any) -> None:
        """Queue one span (a record or a `ReadableSpan`), waking the worker at a batch's worth."""
        if self.closed:
            return
        queue = self.queue
        if len(queue) >= self.max_queue:
            if not self.dropped:
                log.warning("telemetry: the span queue is full (OTEL_BSP_MAX_QUEUE_SIZE=%d): dropping spans",
                            self.max_queue)
            self.dropped += 1
        queue.appendleft(item)
        if len(queue) >= self.size and not self._wake.is_set():
            self._wake.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self.closed:
            return False
        self._export(everything=True)
        return True

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._wake.set()
        self._thread.join(self.timeout or None)
        self._export(everything=True)
        self.exporter.shutdown()

    # -- the worker --------------------------------------------------------------------------------

    def _work(self) -> None:
        wake = self._wake
        while not self.closed:              # ends with `shutdown`
            woken = wake.wait(self.delay)
            wake.clear()
            if self.closed:
                return
            self._export(everything=not woken)

    def _export(self, everything: bool) -> None:
        """Export full batches; `everything`: then what is left too (the schedule, a flush)."""
        with self._lock:
            queue, size = self.queue, self.size
            for _ in range(len(queue) // size + 1):         # what is queued now, not what comes meanwhile
                n = min(size, len(queue))
                if n == 0 or (n < size and not everything):
                    break
                batch = [queue.pop() for _ in range(n)]
                self._send(batch)
            if self.dropped:
                log.warning("telemetry: %d spans dropped, the span queue full", self.dropped)
                self.dropped = 0

    def _send(self, batch: list[Any]) -> None:
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            self.exporter.export(batch)
        except Exception:
            log.exception("telemetry: exporting spans failed")
        finally:
            detach(token)


# -- the HTTP transport ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Result(BaseHTTPResult):
    body: bytes = b""
    message: Any = field(default=None, hash=False, compare=False)     # the response's headers

    def content(self) -> bytes:
        return self.body

    def headers(self) -> Mapping[str, str]:
        return {} if self.message is None else self.message      # `email.message.Message`: case-insensitive


class Transport(BaseHTTPTransport):
    """One kept-alive connection to the collector (see the module's text)."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.context = context
        self._conn: http.client.HTTPConnection | None = None
        self._origin: tuple[str, str] | None = None        # (scheme, netloc) of `_conn`
        self._paths: dict[str, tuple[str, str, str]] = {}   # url -> (scheme, netloc, path and query)

    def _target(self, url: str) -> tuple[str, str, str]:
        found = self._paths.get(url)
        if found is None:
            parts = urllib.parse.urlsplit(url)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            found = self._paths[url] = (parts.scheme.lower(), parts.netloc, path)
        return found

    def _connection(self, scheme: str, netloc: str, timeout: float | None) -> http.client.HTTPConnection:
        conn = self._conn
        if conn is not None and self._origin == (scheme, netloc):
            return conn
        self.close()
        if scheme == "https":
            conn = http.client.HTTPSConnection(netloc, timeout=timeout, context=self.context)
        elif scheme == "http":
            conn = http.client.HTTPConnection(netloc, timeout=timeout)
        else:
            raise ValueError(f"not an http(s) URL: {scheme}://{netloc}")
        self._conn, self._origin = conn, (scheme, netloc)
        return conn

    def request(self, method: str, url: str, *, headers: dict[str, str] | None = None,
                timeout: float | None = None, data: bytes | None = None) -> BaseHTTPResult:
        try:
            scheme, netloc, path = self._target(url)
            for attempt in range(2):        # a kept-alive connection the collector closed: once more, anew
                reused = self._conn is not None and self._origin == (scheme, netloc)
                conn = self._connection(scheme, netloc, timeout)
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                try:
                    conn.request(method, path, body=data, headers=headers or {})
                    response = conn.getresponse()
                    body = response.read()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    self.close()
                    if reused and attempt == 0:
                        continue
                    raise
                if response.will_close:
                    self.close()
                return Result(status_code=response.status, reason=response.reason, body=body, message=response.msg)
        except Exception as e:
            self.close()
            return Result(error=e)
        return Result(error=ConnectionError("no response"))     # not reached: the loop returns or raises

    def is_connection_error(self, exception: Exception | None) -> bool:
        return isinstance(exception, OSError | http.client.HTTPException)

    def close(self) -> None:
        conn, self._conn, self._origin = self._conn, None, None
        if conn is not None:
            conn.close()


def transport_for(endpoint: str, environ: Mapping[str, str] | None = None) -> Transport | None:
    """`Transport` for `endpoint` with the certificate settings the exporter's own transport would
    take; None where that one must send (a proxy for the endpoint, a credential provider, not http(s))."""
    env = os.environ if environ is None else environ
    if any(env.get(k) for k in ("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
                                "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER")):
        return None
    parts = urllib.parse.urlsplit(endpoint)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    if scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(parts.hostname):
        return None
    if scheme == "http":
        return Transport()
    try:
        return Transport(_tls(env))
    except (OSError, ssl.SSLError):      # a certificate file missing or unreadable: as before, its error per export
        return None


def _tls(env: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context the exporter's `requests` transport would verify with."""
    def first(*names: str) -> str | None:
        return next((env[n] for n in names if env.get(n)), None)

    ca = first("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE",
               "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    if ca is None:
        import certifi  # requests' own bundle (a dependency of requests)

        ca = certifi.where()
    if os.path.isdir(ca):
        context = ssl.create_default_context(capath=ca)
    else:
        context = ssl.create_default_context(cafile=ca)     # missing: OSError
    cert = first("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
    key = first("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context
