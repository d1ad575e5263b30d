"""A gateway's Prometheus metrics, in a registry of its own (two gateways in one process never share one).

Counted on the call path, by the invocation log's observer (`observe`), in plain dicts and lists
(`_Calls`: an increment, a bucket found by bisection; prometheus-client's own counters and
histograms take a lock per increment, several a call) turned into metrics at each scrape:

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
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any, Final, cast

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from mcpctl.audit.records import OUTCOMES, SEARCH_TOOL_ID

OTHER: Final = "other"
BUILTIN_SERVER: Final = "mcpctl"
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_LE: Final = tuple(cast(Callable[[float], str], floatToGoString)(b) for b in (*BUCKETS, float("inf")))

Labelled = tuple[tuple[str, str, str], list[float]]     # (calls' labels, the duration histogram's counts)


class Metrics:
    """The metrics of one gateway (see the module's text)."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.calls = _Calls()
        r.register(self.calls)
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
        calls = self.calls
        calls.counts[pair[0]] = calls.counts.get(pair[0], 0) + 1
        histogram = pair[1]                                 # `_observe`, inline: a frame less a call
        histogram[bisect_left(BUCKETS, seconds)] += 1
        histogram[-1] += seconds
        if canonical == SEARCH_TOOL_ID:
            _observe(calls.search, seconds)

    def _labelled(self, canonical: str | None, outcome: str) -> Labelled:
        server, tool = self.labels(canonical)
        if len(self._children) > 4 * 1024:        # ids that left the catalogue: start over
            self._children.clear()
        histogram = self.calls.durations.get((server, tool))
        if histogram is None:
            histogram = self.calls.durations[(server, tool)] = _histogram()
        return (server, tool, outcome if outcome in OUTCOMES else OTHER), histogram

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


def _histogram() -> list[float]:
    """Counts per bucket (not cumulative; the last is +Inf), then the sum."""
    return [0.0] * (len(BUCKETS) + 2)


def _observe(histogram: list[float], seconds: float) -> None:
    histogram[bisect_left(BUCKETS, seconds)] += 1      # the first bound >= seconds, as prometheus-client's
    histogram[-1] += seconds


def _buckets(histogram: list[float]) -> list[tuple[str, float]]:
    """(le, cumulative count) of each bucket, +Inf last."""
    out, total = [], 0.0
    for le, count in zip(_LE, histogram, strict=False):
        total += count
        out.append((le, total))
    return out


class _Calls(Collector):
    """The call path's counts (`Metrics.observe` writes them, a scrape reads them: copies, as the
    metrics port's thread may read while the event loop writes)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, str], int] = {}
        self.durations: dict[tuple[str, str], list[float]] = {}
        self.search = _histogram()

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily("mcpctl_calls", "Tool calls, by server, tool and outcome",
                                    labels=["server", "tool", "outcome"])
        for labels, count in list(self.counts.items()):
            calls.add_metric(list(labels), float(count))
        yield calls
        duration = HistogramMetricFamily("mcpctl_call_duration_seconds", "Tool call duration, by server and tool",
                                         labels=["server", "tool"])
        for (server, tool), histogram in list(self.durations.items()):
            copy = list(histogram)
            duration.add_metric([server, tool], _buckets(copy), copy[-1])
        yield duration
        search = HistogramMetricFamily("mcpctl_search_duration_seconds", "search_tools latency")
        copy = list(self.search)
        search.add_metric([], _buckets(copy), copy[-1])
        yield search


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
