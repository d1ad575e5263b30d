"""`mcpctl serve`: resolve a project, start its upstreams and serve it over stdio or HTTP.

Over stdio nothing but protocol bytes reach stdout: logs go to stderr and to
`log_dir()/gateway-<project>.log`. The HTTP front lives in `gateway.http`. The gateway exits on
stdin EOF (stdio), SIGTERM or SIGINT, taking its upstreams with it.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mcpctl import eventloop, heap, paths, telemetry, terminal
from mcpctl.errors import MCPCtlError
from mcpctl.gateway.early import EarlyFront, known_capabilities
from mcpctl.gateway.front import Gateway
from mcpctl.gateway.http import load_or_create_token, serve_http, token_path, url_host
from mcpctl.gateway.http_guard import HttpLimits
from mcpctl.presentation.catalogue import load_gateway_config
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.resources.store import ResourceStore

if TYPE_CHECKING:
    from mcpctl.storage import Storage

log = logging.getLogger("mcpctl.gateway")


_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _PrivateLogFile(logging.handlers.RotatingFileHandler):
    """The gateway's log file, 0600 (and each file rotation starts)."""

    def _open(self) -> Any:
        return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors,
                    opener=paths.open_private)


class _VisibleFormatter(logging.Formatter):
    """stderr lines (often a terminal) show upstream text escaped; the log file keeps it exact."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(terminal.visible(line) for line in super().format(record).split("\n"))


def setup_logging(project: str, *, verbose: bool = False) -> Path:
    """Log to stderr and to the gateway's log file; never to stdout."""
    path = paths.log_dir() / f"gateway-{project}.log"
    paths.private_dir(path.parent)
    fmt = logging.Formatter(_LOG_FORMAT)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    fh = _PrivateLogFile(path, maxBytes=5 * 1024 * 1024, backupCount=2, encoding="utf-8")
    fh.setFormatter(fmt)
    sh = logging.StreamHandler(sys.stderr)
    sh.setFormatter(_VisibleFormatter(_LOG_FORMAT))
    sh.setLevel(logging.INFO if verbose else logging.WARNING)
    root.addHandler(fh)
    root.addHandler(sh)
    root.setLevel(logging.INFO)
    for noisy in ("mcp", "httpx2", "uvicorn.access", "client"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path


class _StatusWriter:
    """Writes observed server status off the event loop, coalescing bursts."""

    def __init__(self, store: ResourceStore) -> None:
        self.store = store
        self._pending: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="mcpctl-status", daemon=True)
        self._thread.start()

    def __call__(self, name: str, status: dict[str, Any]) -> None:
        with self._lock:
            self._pending.setdefault(name, {}).update(status)
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                batch, self._pending = self._pending, {}
            for name, status in batch.items():
                try:
                    self.store.set_status("Server", name, status)
                except OSError as e:
                    log.warning("cannot write status of %s: %s", name, e)
            if self._stop:
                return

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(5)


HAND_OVER_S = 0.010     # the longest a record waits before the log's writer gets it


class _Recorder:
    """The gateway's recorder (`Gateway(record=...)`), called on the event loop for every call
    before its answer is sent.

    Running: records are handed to the log's writer thread in batches, at most HAND_OVER_S
    after the first of a batch (one wake-up of the writer and one transaction per batch, not
    per call), and the writer commits each batch at once, so a kill -9 loses only
    the calls of the last ~HAND_OVER_S plus one commit (docs/internals.md, "Guarantees").
    Stopping: `drain()` hands over what is pending and waits until the writer has committed
    all of it; from then on each record is written before `record` returns, so a call answered
    while the gateway shuts down (until `os._exit` or the end of the process) is never lost.
    `close()` drains, then closes the log; a record after that is counted in `lost` and logged.
    """

    def __init__(self, storage: Storage) -> None:
        import asyncio

        from mcpctl.audit.records import CallRecord

        self._running_loop = asyncio.get_running_loop
        self._make = CallRecord
        self.host = gateway_host()
        self.writer = storage.writer()      # PostgreSQL's when a database URL is set, else SQLite's
        self.log = storage.log
        self._lock = threading.Lock()
        self._batch: list[Any] = []
        self._direct = False          # after drain(): write each record before returning
        self._closed = False
        self.lost = 0

    def record(self, **fields: Any) -> None:
        fields.setdefault("host", self.host)
        rec = self._make(**fields)
        with self._lock:
            if self._direct:
                self._write_now(rec)
                return
            self._batch.append(rec)
            if len(self._batch) > 1:
                return
        try:
            self._running_loop().call_later(HAND_OVER_S, self._hand_over)
        except RuntimeError:
            self._hand_over()

    def _write_now(self, rec: Any) -> None:
        if self._closed:
            self.lost += 1
            log.error("invocation log closed: a call to %s was not recorded", rec.presented_name)
            return
        try:
            self.writer.write_now(rec)     # PostgreSQL: the spool when the database is unreachable
        except Exception as e:   # the call itself must not fail because of its log row
            self.lost += 1
            log.error("invocation log: a call to %s was not recorded: %s", rec.presented_name, e)

    def _hand_over(self) -> None:
        # under the lock: drain() must not close the writer between the swap and the submits
        with self._lock:
            batch, self._batch = self._batch, []
            self.writer.submit_many(batch)

    def drain(self) -> None:
        """Commit everything recorded so far; write later records at once (any thread)."""
        with self._lock:
            self._direct = True
            batch, self._batch = self._batch, []
            self.writer.submit_many(batch)
        self.writer.close()
        if self.writer.dropped:
            log.error("invocation log: %d record(s) could not be written", self.writer.dropped)

    def close(self) -> None:
        self.drain()
        with self._lock:
            self._closed = True
            self.log.close()


def gateway_host() -> str:
    """This gateway's name in the log's `host` column: MCPCTL_GATEWAY_HOST, else the hostname."""
    import socket

    return os.environ.get("MCPCTL_GATEWAY_HOST") or socket.gethostname()


def _recorder(storage: Storage) -> _Recorder | None:
    try:
        return _Recorder(storage)
    except ModuleNotFoundError:   # pragma: no cover - the audit package ships with mcpctl
        log.warning("invocation log unavailable; calls are not recorded")
        return None


# -- entry ----------------------------------------------------------------------------------------


class _Lifetime:
    """One gateway run's shutdown: the upstreams' task group, the signal handler, and closing the
    invocation log and the status writer exactly once."""

    def __init__(self, gw: Gateway, transport: str, recorder: _Recorder | None, status: _StatusWriter) -> None:
        self.gw = gw
        self.transport = transport
        self.recorder = recorder
        self.status = status
        self.stop = anyio.Event()
        self.upstreams_done = anyio.Event()
        self.up_scope = anyio.CancelScope()
        self.closed = False

    def close_everything(self, *, exiting: bool = False) -> None:
        """Flush the log and the status; `exiting` (os._exit follows): keep the log open, so a
        call answered until then is still written."""
        if not self.closed:
            self.closed = True
            if self.recorder is None:
                _close_all(lambda: None, self.status)
            else:
                _close_all(self.recorder.drain if exiting else self.recorder.close, self.status)

    async def run_upstreams(self) -> None:
        try:
            with self.up_scope:
                async with anyio.create_task_group() as utg:
                    await self.gw.start(utg)
        finally:
            self.upstreams_done.set()

    async def stop_upstreams(self) -> None:
        self.gw.stopping()
        self.up_scope.cancel()
        with anyio.move_on_after(10, shield=True):
            await self.upstreams_done.wait()

    async def on_signal(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for sig in signals:
                log.info("received signal %s; shutting down", sig)
                self.stop.set()
                if self.transport == "stdio":
                    # The stdin reader is a thread blocked in read(): it cannot be cancelled, so
                    # stop the upstreams (their processes exit with them), flush, and leave.
                    # Calls answered meanwhile are written before their answer (drain()).
                    await self.stop_upstreams()
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(lambda: self.close_everything(exiting=True))
                    logging.shutdown()
                    os._exit(0)
                return


class _ProjectWatch:
    """The project file as the gateway last read it: `load()` is the changed spec, or None."""

    def __init__(self, store: ResourceStore, project_name: str, mtime: Any) -> None:
        self.store = store
        self.project_name = project_name
        self.seen = mtime

    def load(self) -> ProjectSpec | None:
        # store.stamp: the project file's mtime, or on PostgreSQL the store's change count (LISTEN/NOTIFY)
        mtime = self.store.stamp("Project", self.project_name)
        if mtime == self.seen or mtime is None:
            return None
        self.seen = mtime
        return ProjectSpec.from_resource(self.store.get("Project", self.project_name))


def _gateway(project_name: str, early: EarlyFront | None, storage: Storage, recorder: _Recorder | None,
             status: _StatusWriter, profile: str | None, page_size: int) -> Gateway:
    if early is not None:
        project, servers, preloaded, catalogue = early.project, early.servers, early.entries, early.catalogue
    else:
        (project, servers), preloaded, catalogue = load_gateway_config(project_name, storage.store), None, None
    gw = Gateway(project_name, project, servers, record=recorder.record if recorder is not None else None,
                 on_status=status, preloaded=preloaded,
                 catalogue=catalogue, failed_before=_failed_before(storage.store, servers), stdio_profile=profile,
                 page_size=page_size, cache=storage.cache,
                 # what search learns from: the log the recorder writes (SQLite, or the team's PostgreSQL)
                 evidence=recorder.log.search_evidence if recorder is not None else None,
                 known_capabilities=early.capabilities if early is not None else known_capabilities(storage.store, servers))
    log.info("project %s: %s presentation, %s names, %d favourite(s) pinned%s", project_name,
             project.presentation, project.names.style, len(project.favourite_index.tools),
             ", session gate on" if project.gate.enabled else "")
    for name, why in gw.unavailable.items():
        log.error("server %s cannot start: %s", name, why)
    return gw


async def _serve_stdio(gw: Gateway, early: EarlyFront | None, on_ready: Callable[[str], None] | None) -> None:
    from mcpctl.gateway.stdio import gateway_stdio

    async with gateway_stdio(gw, early) as (read, write):
        if on_ready:
            on_ready("stdio")
        await gw.server.run(read, write, gw.initialization_options())
    log.info("client closed stdin; shutting down")


async def serve(project_name: str, storage: Storage, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
                token_file: Path | None = None, on_ready: Callable[[str], None] | None = None,
                early: EarlyFront | None = None, http_limits: HttpLimits | None = None,
                profile: str | None = None, page_size: int = 0, allow_hosts: tuple[str, ...] = (),
                advertise_url: str | None = None, front: Callable[[Gateway, anyio.Event], Awaitable[None]] | None = None
                ) -> None:
    """Run the gateway for `project_name` until the client goes away or a signal arrives.

    `early`: the project as read (and, over stdio, the client's first messages as answered)
    before the SDK was imported (`gateway.early`). `storage`: the process's (`mcpctl.storage`), opened
    by the CLI's root; the gateway's parts get what they use of it. `advertise_url`: over HTTP with
    a database, where the other replicas reach this one (`cluster`). `front(gw, stop)`: serves the
    clients instead of stdio or HTTP until it returns (`share.daemon`: stdio sessions over a socket).
    """
    store = storage.store
    status = _StatusWriter(store)
    recorder = _recorder(storage)
    gw = _gateway(project_name, early, storage, recorder, status, profile, page_size)
    token = None
    if transport == "http":
        tpath = token_file or token_path(project_name)
        token = load_or_create_token(Path(tpath).expanduser())
    life = _Lifetime(gw, transport, recorder, status)
    tele = telemetry.start(gw, os.environ, recorder)    # metrics and traces (None: both off, nothing loaded)
    heap.settle()       # after telemetry's imports (OpenTelemetry, protobuf, an HTTP client): frozen too
    watch = _ProjectWatch(store, project_name, early.project_mtime if early is not None
                          else store.stamp("Project", project_name))
    try:
        cluster = None      # replicas on one database (`mcpctl.cluster`): before the task group, so
        if transport == "http" and storage.url is not None:     # its refusal reads as itself
            from mcpctl.cluster.join import Cluster

            cluster = await Cluster.join(storage.url, project_name, gw, advertise_url,
                                         os.environ.get("MCPCTL_GATEWAY_HOST", ""))
        async with anyio.create_task_group() as tg:
            tg.start_soon(life.on_signal)
            tg.start_soon(life.run_upstreams)
            tg.start_soon(gw.watch_project, watch.load)
            if front is not None:
                await front(gw, life.stop)
            elif transport == "stdio":
                await _serve_stdio(gw, early, on_ready)
            else:
                assert token is not None
                if cluster is not None:
                    tg.start_soon(cluster.run, life.stop)

                def listening(bound: int) -> None:
                    if cluster is not None:
                        cluster.listening(host, bound)
                    if on_ready:
                        on_ready(f"http://{url_host(host)}:{bound}/mcp")

                await serve_http(gw, store, host, port, token, life.stop, http_limits, listening, allow_hosts,
                                 storage.url, tele, cluster)
            await life.stop_upstreams()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(life.close_everything)
            if tele is not None:
                await anyio.to_thread.run_sync(tele.close)


def _failed_before(store: ResourceStore, servers: dict[str, Any]) -> set[str]:
    """Servers whose last observed state is down: a never-listed one of them does not make the
    first tools/list wait (it failed before; it is remembered so it delays no later start)."""
    failed = set()
    for name in servers:
        try:
            if (store.status("Server", name) or {}).get("state") == "down":
                failed.add(name)
        except OSError:
            continue
    return failed


def _close_all(close_log: Callable[[], None], status: _StatusWriter) -> None:
    try:
        close_log()
    finally:
        status.close()


def run(project_name: str, storage: Storage, **kwargs: Any) -> None:
    """Blocking entry for the CLI."""
    options = eventloop.backend_options()      # a bad MCPCTL_EVENT_LOOP fails here, before anything starts
    try:
        anyio.run(lambda: serve(project_name, storage, **kwargs), backend_options=options)
    except KeyboardInterrupt:   # pragma: no cover
        pass
    except MCPCtlError:
        raise
    finally:
        logging.shutdown()
