"""When metrics and traces are on, read from the environment (standard library only).

- Metrics: `MCPCTL_METRICS=1` (on; `/metrics` on the HTTP port of `serve --transport http`), or
  `MCPCTL_METRICS_PORT=N` (on, and also served on a port of its own, `MCPCTL_METRICS_HOST`,
  loopback by default, for a scraper; over stdio the only way to reach them).
- Traces: `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the OTLP/HTTP
  exporter of the `otel` extra sends there), or `MCPCTL_TRACING=1` (spans made and the context
  passed on, exported nowhere: for a test or a benchmark). `OTEL_SDK_DISABLED=true` or
  `OTEL_TRACES_EXPORTER=none` turn them off whatever else is set, as the OpenTelemetry
  specification asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcpctl.errors import EXIT_USAGE, MCPCtlError

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    metrics: bool = False
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    tracing: bool = False
    otlp: bool = False                # export to an OTLP endpoint (else nowhere)

    @property
    def enabled(self) -> bool:
        return self.metrics or self.tracing

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        port = _port(environ.get("MCPCTL_METRICS_PORT", "").strip())
        otlp = bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        off = environ.get("OTEL_SDK_DISABLED", "").lower() in _TRUE or \
            environ.get("OTEL_TRACES_EXPORTER", "").lower() == "none"
        tracing = not off and (otlp or environ.get("MCPCTL_TRACING", "").lower() in _TRUE)
        return cls(metrics=port is not None or environ.get("MCPCTL_METRICS", "").lower() in _TRUE,
                   metrics_port=port, metrics_host=environ.get("MCPCTL_METRICS_HOST") or "127.0.0.1",
                   tracing=tracing, otlp=tracing and otlp)


def _port(raw: str) -> int | None:
    if not raw:
        return None
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise MCPCtlError(f"MCPCTL_METRICS_PORT={raw}: not a port number", hint="a number from 1 to 65535",
                          exit_code=EXIT_USAGE)
    return int(raw)
