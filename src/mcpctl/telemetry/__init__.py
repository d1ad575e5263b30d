"""What an operator sees of a running gateway: Prometheus metrics and OpenTelemetry traces.

Both are off unless configured (`settings.Settings.from_env`), and then nothing of
`prometheus_client` or `opentelemetry` is imported and no metric or span object exists: this
module and `settings` import only the standard library.

- `metrics.Metrics`: counters and histograms fed by one observer on the invocation log's seam
  (`gateway.calllog.CallLog.observe`: every routed call passes there once), gauges read from the
  gateway's state at each scrape, served at `/metrics` behind the HTTP front's bearer check
  (`endpoint.MetricsEndpoint`) and, with `MCPCTL_METRICS_PORT`, on a loopback port of its own.
- `tracing.Tracing`: a span per request (a server middleware on the SDK server, and the router's
  entry for the tools/call the stdio transport answers past it), named and
  annotated by the same observer once the call is routed; the trace context continued from the
  client (`_meta` `traceparent`/`tracestate`, else the HTTP headers) and passed on to upstreams by
  the SDK's own client span (`_meta`) and, for HTTP upstreams, as headers (`upstream_hooks`).

The gateway is reached by duck typing (`attach` reads `gw.log_call`, `gw.server`, `gw.router`, `gw.pool`,
`gw.sessions`, `gw.asks`, `gw.catalogue`): this package sits below `gateway/` and imports none
of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpctl.errors import MCPCtlError
from mcpctl.telemetry.settings import Settings

if TYPE_CHECKING:
    from mcpctl.telemetry.metrics import Metrics
    from mcpctl.telemetry.tracing import Tracing

__all__ = ["Settings", "Telemetry", "start"]

log = logging.getLogger("mcpctl.telemetry")


class Telemetry:
    """A gateway's metrics and tracing (each None when off) and the one observer of its calls."""

    def __init__(self, metrics: Metrics | None, tracing: Tracing | None) -> None:
        self.metrics = metrics
        self.tracing = tracing

    def observe(self, canonical: str | None, outcome: str, error_class: str | None, seconds: float,
                credential: str | None, profile: str | None) -> None:
        """One routed call, as the invocation log's row names it (never its arguments or result);
        a failure here is logged, never the call's."""
        try:
            if self.metrics is not None:
                self.metrics.observe(canonical, outcome, seconds)
            if self.tracing is not None:
                self.tracing.annotate(canonical, outcome, error_class, credential, profile)
        except Exception:
            log.exception("telemetry: observing a call failed")

    def attach(self, gw: Any) -> None:
        """Hang the observer on the gateway's call log, the span middleware in front of its
        server's, and the gauges on its state."""
        gw.log_call.observe = self.observe
        if self.tracing is not None:
            gw.server.middleware.insert(0, self.tracing.middleware)
            # the stdio transport's hot path calls the router past the middleware (it binds
            # `call_tool` when it starts, after this)
            gw.router.call_tool = self.tracing.traced_call(gw.router.call_tool)
        if self.metrics is not None:
            self.metrics.watch(gw)

    def asgi(self, app: Any) -> Any:
        """`app` with `/metrics` answered in front of it (metrics on), else `app` itself."""
        if self.metrics is None:
            return app
        from mcpctl.telemetry.endpoint import MetricsEndpoint

        return MetricsEndpoint(app, self.metrics)

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.tracing is not None:
            self.tracing.close()


def start(gw: Any, environ: Mapping[str, str], recorder: Any = None) -> Telemetry | None:
    """The gateway's telemetry as `environ` configures it, attached and serving; None when both
    are off (nothing is imported then). `recorder`: the invocation log's (its writer's spool is a gauge)."""
    settings = Settings.from_env(environ)
    if not settings.enabled:
        return None
    metrics = tracing = None
    if settings.metrics:
        from mcpctl.telemetry.metrics import Metrics

        metrics = Metrics(gw.project_name)
        metrics.log_writer = getattr(recorder, "writer", None)
    if settings.tracing:
        from mcpctl.telemetry.tracing import Tracing

        tracing = Tracing.from_settings(settings)
    tele = Telemetry(metrics, tracing)
    tele.attach(gw)
    if metrics is not None and settings.metrics_port is not None:
        try:
            metrics.serve(settings.metrics_host, settings.metrics_port)
        except OSError as e:
            tele.close()
            raise MCPCtlError(f"MCPCTL_METRICS_PORT={settings.metrics_port}: cannot listen on "
                              f"{settings.metrics_host}: {e.strerror or e}",
                              hint="choose another port, or 0 for any free one (the log says which)") from e
    return tele
