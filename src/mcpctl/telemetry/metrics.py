"""A gateway's Prometheus metrics, in a registry of its own (two gateways in one process never share one).

Counted on the call path, by the invocation log's observer (`observe`):

- `mcpctl_calls_total{server, tool, outcome}`: calls as the log's rows count them;
- `mcpctl_call_duration_seconds{server, tool}`: their duration (a histogram);
- `mcpctl_search_duration_seconds`: `search_tools` calls' duration (a histogram).

Read from the gateway at each scrape (nothing on the call path): `mcpctl_upstream_up{server}`,
`mcpctl_sessions`, `mcpctl_parked_calls` and, with PostgreSQL, `mcpctl_log_spool_bytes` and
`mcpctl_database_down`; counted as they happen: `mcpctl_upstream_restarts_total{server}` (each
time an upstream comes up again), `mcpctl_errors_total{area}` and `mcpctl_warnings_total{area}`
(log records of mcpctl's own loggers, by package: `audit` is the invocation log and its spool,
`db` the database).

Labels are bounded: `server` is one of the project's servers or `mcpctl` (the built-ins), else
"other"; `tool` is a tool of the catalogue (or a built-in), else "other"; `outcome` is the log's
small vocabulary. No label ever holds an argument, a result, a token or a caller's free text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mcpctl.audit.records import OUTCOMES, SEARCH_TOOL_ID

OTHER: Final = "other"
BUILTIN_SERVER: Final = "mcpctl"
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Labelled = tuple[Any, Any]      # (calls counter child, duration histogram child)


class Metrics:
    """The metrics of one gateway (see the module's text)."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.calls = Counter("mcpctl_calls", "Tool calls, by server, tool and outcome",
                             ["server", "tool", "outcome"], registry=r)
        self.duration = Histogram("mcpctl_call_duration_seconds", "Tool call duration, by server and tool",
                                  ["server", "tool"], buckets=BUCKETS, registry=r)
        self.search = Histogram("mcpctl_search_duration_seconds", "search_tools latency", buckets=BUCKETS,
                                registry=r)
        self.restarts = Counter("mcpctl_upstream_restarts", "Times an upstream came up again after its first start",
                                ["server"], registry=r)
        self.errors = Counter("mcpctl_errors", "Error log records of mcpctl, by package (audit: the "
                              "invocation log; db: the database)", ["area"], registry=r)
        self.warnings = Counter("mcpctl_warnings", "Warning log records of mcpctl, by package (audit: "
                                "among them the database unreachable and rows spooled)", ["area"], registry=r)
        self.log_writer: Any = None               # the invocation log's writer (its spool, with PostgreSQL)
        self._gw: Any = None                      # the gateway watched (`watch`)
        self._tools: frozenset[str] = frozenset()
        self._servers: frozenset[str] = frozenset()
        self._children: dict[tuple[str | None, str], Labelled] = {}
        self._version: Any = None
        self._errors = _ErrorCount(self.errors, self.warnings)
        self._stop: Callable[[], None] | None = None

    # -- the call path -----------------------------------------------------------------------------

    def observe(self, canonical: str | None, outcome: str, seconds: float) -> None:
        gw = self._gw
        if gw is not None and gw.catalogue.version != self._version:
            self._read_catalogue(gw)
        key = (canonical, outcome)
        pair = self._children.get(key)
        if pair is None:
            pair = self._children[key] = self._labelled(canonical, outcome)
        pair[0].inc()
        pair[1].observe(seconds)
        if canonical == SEARCH_TOOL_ID:
            self.search.observe(seconds)

    def _labelled(self, canonical: str | None, outcome: str) -> Labelled:
        server, tool = self.labels(canonical)
        if len(self._children) > 4 * 1024:        # ids that left the catalogue: start over
            self._children.clear()
        return (self.calls.labels(server, tool, outcome if outcome in OUTCOMES else OTHER),
                self.duration.labels(server, tool))

    def labels(self, canonical: str | None) -> tuple[str, str]:
        """(server, tool) for a canonical id, bounded (see the module's text)."""
        if not canonical:
            return OTHER, OTHER
        server, _, tool = canonical.partition("/")
        if server == BUILTIN_SERVER:
            return server, tool
        if server not in self._servers:
            return OTHER, OTHER
        return server, tool if canonical in self._tools else OTHER

    # -- the gateway's state -----------------------------------------------------------------------

    def watch(self, gw: Any) -> None:
        """Read the gateway's catalogue for labels, and its upstreams, sessions and parked calls at
        each scrape; count its upstreams' restarts and mcpctl's error records."""
        self._gw = gw
        self._read_catalogue(gw)
        for up in gw.pool.upstreams.values():
            up.on_state = _restarts(up.on_state, self.restarts.labels(up.name))
        self.registry.register(_GatewayState(gw, lambda: self.log_writer))
        logging.getLogger("mcpctl").addHandler(self._errors)

    def _read_catalogue(self, gw: Any) -> None:
        """The tools and servers labels may name, read anew each time the catalogue changes."""
        self._version = gw.catalogue.version
        self._tools = frozenset(t.canonical_id for t in gw.catalogue.tools)
        self._servers = frozenset(gw.views.project.servers)
        self._children.clear()

    def exposition(self) -> tuple[bytes, str]:
        """(body, content type) of a scrape."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def serve(self, host: str, port: int) -> int:
        """Also serve the metrics at http://host:port/metrics (a thread; no token: bind it to
        loopback or a network only the scraper reaches). Returns the port listened on."""
        from prometheus_client import start_http_server

        server, thread = start_http_server(port, addr=host, registry=self.registry)

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(5)

        self._stop = stop
        bound: int = server.server_address[1]
        logging.getLogger("mcpctl.telemetry").info("metrics at http://%s:%d/metrics", host, bound)
        return bound

    def close(self) -> None:
        logging.getLogger("mcpctl").removeHandler(self._errors)
        if self._stop is not None:
            self._stop()
            self._stop = None


def _restarts(on_state: Callable[[Any], None], counter: Any) -> Callable[[Any], None]:
    """`on_state` counting each time the upstream comes up again after its first start."""
    was_up = [False]

    def counted(up: Any) -> None:
        if up.state == "up":
            if was_up[0]:
                counter.inc()
            was_up[0] = True
        on_state(up)

    return counted


class _ErrorCount(logging.Handler):
    def __init__(self, errors: Counter, warnings: Counter) -> None:
        super().__init__(logging.WARNING)
        self.errors, self.warnings = errors, warnings

    def emit(self, record: logging.LogRecord) -> None:
        parts = record.name.split(".")
        area = parts[1] if len(parts) > 1 and parts[1].isidentifier() else "mcpctl"
        (self.errors if record.levelno >= logging.ERROR else self.warnings).labels(area).inc()


class _GatewayState(Collector):
    """Gauges read from the gateway at scrape time."""

    def __init__(self, gw: Any, log_writer: Callable[[], Any]) -> None:
        self.gw, self.log_writer = gw, log_writer

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("mcpctl_upstream_up", "1 while the upstream is connected", labels=["server"])
        # copies: a scrape on the metrics port's thread reads while the event loop changes them
        for name, upstream in list(self.gw.pool.upstreams.items()):
            up.add_metric([name], 1.0 if upstream.state == "up" else 0.0)
        for name in list(self.gw.pool.unavailable):
            up.add_metric([name], 0.0)
        yield up
        yield GaugeMetricFamily("mcpctl_sessions", "Client sessions the gateway tracks (handshake-era "
                                "sessions and 2026-07-28 identities)", value=float(self.gw.sessions.count()))
        yield GaugeMetricFamily("mcpctl_parked_calls", "Calls waiting for their client's input",
                                value=float(len(self.gw.asks.parked)))
        spool = getattr(self.log_writer(), "spool", None)      # PostgreSQL's writer only
        if spool is not None:
            yield GaugeMetricFamily("mcpctl_log_spool_bytes", "Invocation log rows waiting in the local spool "
                                    "for the database", value=float(spool.pending_bytes()))
            yield GaugeMetricFamily("mcpctl_database_down", "1 while the invocation log's last write to the "
                                    "database failed", value=1.0 if self.log_writer().down else 0.0)
