"""In-process gateway tests: a `Gateway` over in-memory SDK servers, driven by the SDK's `Client`.

No process is started. The project and its servers are resources in the test's MCPCTL_HOME, as
the CLI writes them (`gwkit.Kit.server`/`project`); the gateway reads them as `mcpctl serve` does,
and each upstream is reached through `open_transport=` (`MemoryUpstreams`), which runs the server
the spec names in-process over memory streams:

- the fault server (`tests/servers/fault_server.py ARGS`): `fault_app.build` with the same options;
  `crash` closes the connection (the process would exit), `--start-delay` delays the connect;
- the dataset server (`tests/servers/dataset_server.py ARGS`): `dataset_app.build`;
- the bundled examples (`mcpctl example-server calc|notes|textkit`, `python -m mcpctl.examples.calc`);
- any server registered by name (`MemoryUpstreams.add`);
- anything else through the real transport (`upstream.transport.open_transport`), counted in
  `MemoryUpstreams.real`: a command that is not there fails as it would under `mcpctl serve`.

Clients connect over memory streams to `gateway.server.run` (the SDK-facing server: both eras, the
lean path for tools/*) and each carries a credential as the HTTP front would set it: the
project's own token (the full view) or a `Token`'s secret (its profile), checked by the front's
own `BearerAuth.credential`. `Running.client(mode=...)` picks the era as every gateway test does
(`"legacy"`: the handshake, ≤ 2025-11-25; `"auto"`/`"2026-07-28"`: the 2026-07-28 era).

`build_gateway` is the one place the `Gateway` is constructed. Waiting is done on events: a status
write, a notification, a listing; never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp.types as t
from mcp import Client
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from mcpctl.auth.bearer import CREDENTIAL_STATE, PROFILE_STATE
from mcpctl.catalogue.cache import FilesCache
from mcpctl.gateway.front import Gateway
from mcpctl.gateway.http import BearerAuth, load_or_create_token, token_path
from mcpctl.presentation.catalogue import load_gateway_config
from mcpctl.resources.kinds import ProjectSpec, ServerSpec
from mcpctl.resources.store import Store
from mcpctl.resources.tokens import TokenIndex

SERVERS = Path(__file__).resolve().parents[1] / "servers"
if str(SERVERS) not in sys.path:
    sys.path.insert(0, str(SERVERS))

import dataset_app  # noqa: E402
import fault_app  # noqa: E402

ServerFactory = Callable[[ServerSpec, "Connection"], Server[Any]]
SHUTDOWN_GRACE = 5.0          # a server's own teardown after EOF; then it is cancelled
EXAMPLES = "mcpctl.examples."
WATCH_INTERVAL = 0.05        # how often a served project file is checked for changes (s)


class NoInProcessServer(LookupError):
    """The spec names a server the harness cannot run in-process."""


class Changes:
    """Something changed (a status written, a notification received): wake whoever waits."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.count = 0

    def fire(self) -> None:
        self.count += 1
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()


# -- upstreams -------------------------------------------------------------------------------------


@dataclass
class Connection:
    """One in-memory connection to an upstream (what a process would be)."""

    name: str
    number: int
    seen: dict[str, Any] = field(default_factory=dict)     # the fault server's `state`
    closed: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    async def crash(self) -> None:
        """The server goes away mid-call: the connection closes, as a process exiting would."""
        self.scope.cancel()
        await anyio.sleep_forever()


class _OwnContext:
    """A read stream that does not hand its reader the sender's contextvars.

    The SDK's memory streams carry the sending task's context, and a dispatcher runs what it
    receives in it, so a server in this process would run a gateway's call in that call's own
    context: an association no stdio pipe carries. Over this wrapper the receiver runs in its
    own context, as it would at the other end of a pipe."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> _OwnContext:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _OwnContext:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class MemoryUpstreams:
    """`open_transport=` for the gateway: every upstream an SDK server in this process.

    A stdio spec behaves as a pipe would: no contextvars cross it (`_OwnContext`), so what the
    server asks during a call says nothing of which call it belongs to. An http spec registered
    with `http` behaves as the SDK's streamable-HTTP client does: a request the server relates
    to a call arrives in that call's context."""

    def __init__(self) -> None:
        self.factories: dict[str, ServerFactory] = {}
        self.connections: dict[str, list[Connection]] = {}
        self.open = 0
        self.real = 0             # connections that went through the real transport
        self.changes = Changes()

    def http(self, store: Store, name: str, *fault_args: str) -> str:
        """Register `name` as a streamable-HTTP upstream: the fault server with `fault_args`."""
        opts = fault_app.parse(["--name", name, *fault_args])
        self.factories[name] = lambda spec, conn: fault_app.build(opts, self._hooks(conn))
        store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                   "spec": {"transport": "http", "url": f"http://inproc.invalid/{name}/mcp", "headers": {}}})
        return name

    def add(self, name: str, factory: Callable[[], Server[Any]]) -> None:
        """Serve `factory()` for the server named `name` (each connection gets a new one)."""
        self.factories[name] = lambda spec, conn: factory()

    def _hooks(self, conn: Connection) -> fault_app.Hooks:
        return fault_app.Hooks(crash=conn.crash, freeze=_refuse("freeze"), garbage=lambda: None, pid=conn.number,
                               seen=conn.seen, changed=self.changes.fire)

    def seen(self, name: str) -> dict[str, Any]:
        """What the fault server `name` saw on its latest connection (its `state` tool's answer)."""
        return self.connections[name][-1].seen

    def starts(self, name: str) -> int:
        """How many times the gateway connected to `name`."""
        return len(self.connections.get(name, []))

    def _resolve(self, spec: ServerSpec, conn: Connection) -> tuple[Server[Any], Any]:
        """(server, how to serve it) for this spec."""
        if spec.name in self.factories:
            return self.factories[spec.name](spec, conn), None
        args = list(spec.args)
        if spec.transport == "stdio" and args and Path(args[0]).name == "fault_server.py":
            opts = fault_app.parse(args[1:])
            return fault_app.build(opts, self._hooks(conn)), opts
        if spec.transport == "stdio" and args and Path(args[0]).name == "dataset_server.py":
            return dataset_app.build(dataset_app.parse(args[1:])), None
        if spec.transport == "stdio" and len(args) >= 2 and args[0] == "-m" and args[1].startswith(EXAMPLES):
            return _example(args[1].removeprefix(EXAMPLES), args[2:]), None
        if spec.transport == "stdio" and args[:1] == ["example-server"] and len(args) >= 2:
            return _example(args[1], args[2:]), None
        raise NoInProcessServer(f"server {spec.name!r}: no in-process server for {spec.command} {args}")

    @contextlib.asynccontextmanager
    async def __call__(self, spec: ServerSpec, on_eof: Callable[[], None]) -> AsyncIterator[tuple[Any, Any, Any]]:
        conns = self.connections.setdefault(spec.name, [])
        conn = Connection(spec.name, len(conns) + 1)
        conns.append(conn)
        try:
            server, opts = self._resolve(spec, conn)
        except NoInProcessServer:
            from mcpctl.upstream.transport import open_transport

            self.real += 1
            async with open_transport(spec, on_eof) as streams:
                yield streams
            return
        if opts is not None and opts.start_marker:
            Path(opts.start_marker, f"started-{conn.number}").touch()
            self.changes.fire()
        exits = opts is not None and (opts.exit_at_start or opts.exit_after_start_delay)

        async with create_client_server_memory_streams() as ((c_read_ctx, c_write), (s_read_ctx, s_write)):
            s_read: Any = s_read_ctx
            c_read: Any = c_read_ctx
            if spec.transport == "stdio":
                s_read, c_read = _OwnContext(s_read_ctx), _OwnContext(c_read_ctx)

            async def serve() -> None:
                try:
                    with conn.scope:
                        if opts is not None and opts.start_delay and not opts.exit_at_start:
                            await anyio.sleep(opts.start_delay)
                        if exits:          # the process would exit here: the connection closes
                            return
                        if opts is not None:
                            await fault_app.serve(server, opts, s_read, s_write)
                        else:
                            await server.run(s_read, s_write, server.create_initialization_options())
                finally:
                    with anyio.CancelScope(shield=True):
                        await s_write.aclose()
                        await s_read.aclose()
                    conn.closed.set()
                    on_eof()

            self.open += 1
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(serve)
                    try:
                        yield c_read, c_write, None
                    finally:
                        await c_write.aclose()
                        with anyio.move_on_after(SHUTDOWN_GRACE, shield=True):
                            await conn.closed.wait()
                        tg.cancel_scope.cancel()
            finally:
                self.open -= 1


def _refuse(what: str) -> Callable[[], None]:
    def refuse() -> None:
        raise RuntimeError(f"`{what}` blocks a whole process: run it through a real upstream process")
    return refuse


def _example(name: str, argv: list[str]) -> Server[Any]:
    import importlib

    module = importlib.import_module(f"mcpctl.examples.{name}")
    if name == "notes":
        from mcpctl.examples.notes import NoteStore, default_dir

        directory = Path(argv[argv.index("--dir") + 1]) if "--dir" in argv else default_dir()
        return module.build(NoteStore(directory.expanduser()))   # type: ignore[no-any-return]
    return module.build()   # type: ignore[no-any-return]


# -- the gateway -----------------------------------------------------------------------------------


def build_gateway(project_name: str, open_transport: MemoryUpstreams, *,
                  on_status: Callable[[str, dict[str, Any]], None] | None = None,
                  record: Callable[..., None] | None = None, page_size: int = 0,
                  first_contact_cap: float | None = None, evidence: Callable[..., Any] | None = None) -> Gateway:
    """The project's `Gateway` as `mcpctl serve` builds it (`gateway.run.serve`), its upstreams in
    memory. The one place a test builds a Gateway: adapt here when its constructor changes."""
    from mcpctl.gateway.early import known_capabilities
    from mcpctl.gateway.run import _failed_before

    store = Store()
    project, servers = load_gateway_config(project_name, store)
    extra: dict[str, Any] = {} if first_contact_cap is None else {"first_contact_cap": first_contact_cap}
    return Gateway(project_name, project, servers, record=record, on_status=on_status,
                   failed_before=_failed_before(store, servers), page_size=page_size,
                   known_capabilities=known_capabilities(store, servers), open_transport=open_transport,
                   evidence=evidence, cache=FilesCache(), **extra)


@dataclass
class _Request:
    """What the HTTP front hands the SDK per request: its headers and the bearer check's verdict."""

    headers: dict[str, str]
    scope: dict[str, Any]


class _StampedWrite:
    """The client's write stream, each message carrying the request the HTTP front would attach."""

    def __init__(self, inner: Any, request: Callable[[], _Request]) -> None:
        self.inner = inner
        self.request = request

    async def send(self, item: Any) -> None:
        if isinstance(item, SessionMessage):
            item = SessionMessage(item.message, metadata=ServerMessageMetadata(request_context=self.request()))
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _StampedWrite:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class Unauthorized(PermissionError):
    """The token presented is none of the project's (the HTTP front answers 401)."""


class Running:
    """A gateway serving in this process: connect clients, watch statuses."""

    def __init__(self, gateway: Gateway, upstreams: MemoryUpstreams, store: Store, recorder: Any = None) -> None:
        self.gateway = gateway
        self.upstreams = upstreams
        self.store = store
        self.recorder = recorder          # `serve`'s own recorder when the block logs (`serve(log=True)`)
        self.changes = upstreams.changes
        self.statuses: dict[str, dict[str, Any]] = {}
        self.token = load_or_create_token(token_path(gateway.project_name))
        self._auth = BearerAuth(_no_app, self.token, TokenIndex(gateway.project_name, store))
        self._clients = 0
        # a list changed for every session (what a 2026 client hears only through a listen stream)
        gateway.add_notifier(lambda method: self.changes.fire())

    async def settle_log(self) -> None:
        """Every call recorded so far committed to the log (and later ones at once), as the
        recorder's drain does when `mcpctl serve` stops."""
        assert self.recorder is not None, "serve(log=True)"
        await anyio.to_thread.run_sync(self.recorder.drain)

    def on_status(self, name: str, status: dict[str, Any]) -> None:
        self.statuses.setdefault(name, {}).update(status)
        self.store.set_status("Server", name, status)
        self.changes.fire()

    def _request(self, token: str) -> _Request:
        headers = {"authorization": f"Bearer {token}"}
        cred = self._auth.credential([(b"authorization", headers["authorization"].encode())])
        if cred is None:
            raise Unauthorized("missing or wrong bearer token")
        return _Request(headers, {"type": "http", "state": {PROFILE_STATE: cred.profile,
                                                            CREDENTIAL_STATE: cred.name or ""}})

    @contextlib.asynccontextmanager
    async def _transport(self, token: str) -> AsyncIterator[tuple[Any, Any]]:
        self._request(token)                      # refused at connect, as the front does
        server = self.gateway.server
        async with create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)):
            done = anyio.Event()

            async def serve() -> None:
                try:
                    await server.run(_OwnContext(s_read), s_write, self.gateway.initialization_options())
                finally:
                    done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                try:
                    yield c_read, _StampedWrite(c_write, lambda: self._request(token))
                finally:
                    await c_write.aclose()
                    with anyio.move_on_after(SHUTDOWN_GRACE, shield=True):
                        await done.wait()
                    tg.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def client(self, mode: str = "legacy", name: str | None = None, *, token: str | None = None,
                     **client_kw: Any) -> AsyncIterator[Any]:
        """An SDK client of this gateway; `token`: a `Token`'s secret (its profile's view; default
        the project's own token, the full view); `name`: its clientInfo name; `client_kw` go to
        `Client` (callbacks, log_level...). Every message it receives also fires `changes`."""
        user_handler = client_kw.pop("message_handler", None)

        async def on_message(message: Any) -> None:
            self.changes.fire()
            if user_handler is not None:
                await user_handler(message)

        kw: dict[str, Any] = {"client_info": t.Implementation(name=name, version="1.0")} if name else {}
        self._clients += 1
        async with Client(self._transport(token or self.token), mode=mode, message_handler=on_message,
                          **kw, **client_kw) as c:
            c.gw = self  # type: ignore[attr-defined]  # `gwkit.wait_tools` and the tests find their gateway here
            yield c

    async def until(self, check: Callable[[], Awaitable[bool] | bool], timeout: float = 20.0,
                    poll: float | None = None) -> None:
        """Wait until `check()` holds, re-checking at each change (within `timeout` times the load's
        slack); `poll`: also every `poll` seconds, for what no event announces (a file another
        thread writes)."""
        from ci_support import SLACK

        with anyio.fail_after(timeout * SLACK):
            while True:
                seen = self.changes.count
                got = check()
                if not isinstance(got, bool):
                    got = await got
                if got:
                    return
                if self.changes.count == seen:
                    with anyio.move_on_after(poll if poll is not None else math.inf):
                        await self.changes.wait()

    async def settled(self, timeout: float = 20.0) -> None:
        """Every upstream has been listed or is down (each status says so)."""
        names = set(self.gateway.upstreams)

        def done() -> bool:
            return all(self.statuses.get(n, {}).get("state") in ("up", "down") and
                       (self.statuses[n]["state"] == "down" or "tools" in self.statuses[n]) for n in names)

        await self.until(done, timeout)

    async def wait_tools(self, c: Any, want: set[str] | int, timeout: float = 20.0) -> list[Any]:
        """Re-list at each change until every name in `want` (or at least `want` tools) is listed."""
        tools: list[Any] = []

        async def listed() -> bool:
            nonlocal tools
            tools = (await c.list_tools()).tools
            names = {tl.name for tl in tools}
            return (want <= names) if isinstance(want, set) else len(tools) >= want

        await self.until(listed, timeout)
        return tools


async def _no_app(scope: Any, receive: Any, send: Any) -> None:   # pragma: no cover - never called
    raise AssertionError("the in-process front only checks credentials")


class Harness:
    """The `gw` fixture: gateways for the projects registered in this test's MCPCTL_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.upstreams = MemoryUpstreams()
        self.store = Store()
        self.gateways = 0

    @contextlib.asynccontextmanager
    async def serve(self, project: str, *, page_size: int = 0, log: bool = False, watch: bool = True,
                    first_contact_cap: float | None = None) -> AsyncIterator[Running]:
        """Serve `project` until the block ends (as `mcpctl serve` does: upstreams supervised,
        the project re-read when its file changes); `log`: record calls in the invocation log
        (every row written when the block ends)."""
        with self._recorder(log) as rec:
            holder: list[Running] = []
            gw = build_gateway(project, self.upstreams, on_status=lambda n, s: holder[0].on_status(n, s),
                               record=rec.record if rec is not None else None, page_size=page_size,
                               first_contact_cap=first_contact_cap,
                               evidence=rec.log.search_evidence if rec is not None else None)
            running = Running(gw, self.upstreams, self.store, rec)
            holder.append(running)
            self.gateways += 1
            async with anyio.create_task_group() as tg:
                up_scope = anyio.CancelScope()
                upstreams_done = anyio.Event()

                async def run_upstreams() -> None:
                    try:
                        with up_scope:
                            async with anyio.create_task_group() as utg:
                                await gw.start(utg)
                    finally:
                        upstreams_done.set()

                tg.start_soon(run_upstreams)
                if watch:
                    # the project file is polled as `mcpctl serve` does, more often (tests wait for it)
                    tg.start_soon(gw.watch_project, _project_loader(self.store, project), WATCH_INTERVAL)
                try:
                    yield running
                finally:
                    gw.stopping()
                    up_scope.cancel()
                    with anyio.move_on_after(10, shield=True):
                        await upstreams_done.wait()
                    tg.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def client(self, project: str, mode: str = "legacy", *, log: bool = False, page_size: int = 0,
                     **kw: Any) -> AsyncIterator[Any]:
        """One gateway with one client (what `kit.client` gives through `mcpctl serve`)."""
        async with self.serve(project, log=log, page_size=page_size) as g, g.client(mode, **kw) as c:
            yield c

    @contextlib.contextmanager
    def _recorder(self, log: bool) -> Iterator[Any]:
        """`mcpctl serve`'s own recorder (batches handed to the log's writer thread), closed, and
        so drained, when the gateway stops; its log is what search learns from, as in `serve`."""
        if not log:
            yield None
            return
        from mcpctl.gateway.run import _recorder
        from mcpctl.storage import Storage

        rec = _recorder(Storage())      # files and SQLite, as `mcpctl serve` without a database
        assert rec is not None
        try:
            yield rec
        finally:
            rec.close()


def _project_loader(store: Store, name: str) -> Callable[[], ProjectSpec | None]:
    path = store.path_for("Project", name)

    def mtime() -> int | None:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return None

    seen = [mtime()]

    def load() -> ProjectSpec | None:
        now = mtime()
        if now == seen[0] or now is None:
            return None
        seen[0] = now
        return ProjectSpec.from_resource(store.get("Project", name))

    return load


# anyio's worker threads (to_thread.run_sync) are a pool: idle ones linger, and are no leak.
POOLED_THREADS = ("AnyIO worker thread", "asyncio_")


def threads_now() -> set[threading.Thread]:
    """The threads alive now, pooled workers aside."""
    return {th for th in threading.enumerate() if not th.name.startswith(POOLED_THREADS)}


def threads_left(before: set[threading.Thread], timeout: float = 60.0) -> list[str]:
    """The threads started since `before` still running after `timeout` s: bounded background work
    the gateway began (embedding a catalogue's tools) may finish meanwhile; a thread that never
    ends is a leak."""
    import time

    from ci_support import SLACK

    deadline = time.monotonic() + timeout * SLACK
    for th in threads_now() - before:
        th.join(max(0.0, deadline - time.monotonic()))
    return sorted(f"{th.name}/{th.ident}" for th in threads_now() - before)
