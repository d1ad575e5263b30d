"""How the gateway reaches one upstream server from its spec: the transport under its MCP client.

`open_transport(spec, on_eof)` yields the read and write streams the SDK's `Client` runs over,
and for a stdio server the raw channel calls are relayed through (`stdio_upstream`):

- stdio: `spec.command` is looked up on PATH, then next to `sys.executable` (`find_command`);
  the `${env:...}`/`${file:...}` references in its args and env are resolved; mcpctl's own
  location variables (`MCPCTL_HOME`, `XDG_*_HOME`) pass through, so a server that keeps its
  state under mcpctl's dirs (the bundled notes example) follows the store; its stderr goes
  to `upstream_log_path(server)`, rotated at `STDERR_ROTATE_BYTES` (one backup), after a line
  marking the start.
- http: the SDK's streamable HTTP client for `spec.url` with `spec.headers` (references
  resolved), connecting within `timeouts.connect` and reading for up to `timeouts.call` (at
  least 300 s); its read stream calls `on_eof` when it ends, as the stdio transport does itself.
- sse: the legacy HTTP+SSE transport (protocol 2024-11-05), the SDK's SSE client for `spec.url`
  (the event stream; it names the endpoint messages are POSTed to) with `spec.headers`, the same
  timeouts and the same `on_eof`. Nothing past this module tells it from http.
- http or sse with `spec.auth` (OAuth): the same clients with `auth=` the SDK's
  `OAuthClientProvider` over the server's token file (`mcpctl.auth.provider.gateway_provider`),
  which renews tokens before they expire and on a 401. A server with no stored sign-in, or whose
  renewal the authorization server refuses, is `mcpctl.auth.expiry.mark`ed and its connection
  ends (`on_eof`): the supervisor reports it down with the `mcpctl login` hint and waits for the
  token file to change.

A server that cannot be started as configured (no command or url, a reference that does not
resolve, a command not found) raises `ConfigError`, which the supervisor does not retry.

What a remote server sends is the server's to choose: the SDK's transports log a traceback for a
malformed message or an endpoint on another origin, once per reconnect; here each is one line
(`OneLine`), beside the supervisor's own ("transport error", "down … restarting in").
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import anyio
from mcp import StdioServerParameters

from mcpctl import paths
from mcpctl.errors import SecretError
from mcpctl.resources import secrets
from mcpctl.resources.kinds import ServerSpec
from mcpctl.resources.server_checks import find_command
from mcpctl.upstream.errors import ConfigError
from mcpctl.upstream.stdio import RawStdioChannel, StderrLog, open_stdio_upstream

STDERR_ROTATE_BYTES: Final = 10 * 1024 * 1024   # per file; one backup (`.log.1`)
# The SDK starts a stdio server with a minimal environment (HOME, PATH, USER, ...); these say where
# mcpctl's store is, and a server's own spec.env still wins.
LOCATION_ENV: Final = ("MCPCTL_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


class OneLine(logging.Filter):
    """A record carrying an exception becomes one line, the exception's type and first line: what
    an upstream sends (a hostile SSE server's garbage, another origin) is no traceback of ours. A
    `SignInRequired` is left as it is (`auth.provider` drops those)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ != "SignInRequired":
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            record.msg, record.args = f"{record.getMessage()}: {type(exc).__name__}: {first}", ()
            record.exc_info, record.exc_text = None, None
        return True


_ONE_LINE: Final = OneLine()
for _name in ("mcp.client.sse", "mcp.client.streamable_http"):
    logging.getLogger(_name).addFilter(_ONE_LINE)


def upstream_log_path(server: str) -> Path:
    return paths.log_dir() / "upstreams" / f"{server}.log"


def _open_stderr_log(server: str) -> StderrLog:
    f = StderrLog(upstream_log_path(server), STDERR_ROTATE_BYTES)
    f.note(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} mcpctl: starting {server}\n")
    return f


def stdio_params(spec: ServerSpec) -> StdioServerParameters:
    """How to start a stdio server: its command found, references in its args and env resolved."""
    if not spec.command:
        raise ConfigError(f"server {spec.name!r} has no command (spec.command)")
    try:
        env = secrets.resolve_map(spec.env, where=f"server {spec.name!r} spec.env")
        args = [secrets.resolve(a, where=f"server {spec.name!r} spec.args") for a in spec.args]
    except SecretError as e:
        raise ConfigError(str(e)) from None
    command = find_command(spec.command)
    if command is None:
        raise ConfigError(f"command not found: {spec.command!r} (not on PATH, nor next to "
                          f"{sys.executable})")
    env = {**{k: os.environ[k] for k in LOCATION_ENV if os.environ.get(k)}, **env}
    return StdioServerParameters(command=command, args=args, env=env or None,
                                 cwd=os.path.expanduser(spec.cwd) if spec.cwd else None)


class _WatchedReadStream:
    """A read stream that reports when the transport reaches EOF (the upstream went away)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_eof()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._on_eof()
        suppress: bool | None = await self._inner.__aexit__(*exc)
        return suppress

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def remote_target(spec: ServerSpec) -> tuple[str, dict[str, str]]:
    """The url and headers of an http or sse server, references resolved."""
    try:
        url = secrets.resolve(spec.url or "", where=f"server {spec.name!r} spec.url")
        headers = secrets.resolve_map(spec.headers, where=f"server {spec.name!r} spec.headers")
    except SecretError as e:
        raise ConfigError(str(e)) from None
    if not url:
        raise ConfigError(f"server {spec.name!r} has no url (spec.url)")
    return url, headers


def _oauth(spec: ServerSpec, url: str, on_eof: Callable[[], None]) -> Any:
    """The OAuth provider of an http/sse server with `spec.auth`, else None (see the docstring)."""
    if spec.auth is None:
        return None
    from mcpctl.auth import expiry
    from mcpctl.auth.provider import gateway_provider
    from mcpctl.auth.storage import sign_in_state

    if sign_in_state(spec.name, url).state == "signed-out":
        expiry.mark(spec.name, signed_in=False)
        raise expiry.SignInRequired(spec.name)

    def expired(signed_in: bool, seen: tuple[int, int] | None) -> None:
        expiry.mark(spec.name, signed_in=signed_in, seen=seen)
        on_eof()

    return gateway_provider(spec.name, url, spec.auth, expired)


@contextlib.asynccontextmanager
async def _open_remote(spec: ServerSpec, on_eof: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's client transport for an http (streamable HTTP) or sse (legacy HTTP+SSE) server."""
    import httpx2

    from mcpctl.telemetry.propagation import upstream_hooks

    url, headers = remote_target(spec)
    auth = _oauth(spec, url, on_eof)
    read_timeout = max(spec.timeouts.call, 300.0)
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(url, headers=headers, timeout=spec.timeouts.connect,
                              sse_read_timeout=read_timeout, auth=auth) as (read, write):
            yield read, write
        return
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(spec.timeouts.connect, read=read_timeout)
    # while tracing is on, the trace context of each request's `_meta` also goes as headers
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=upstream_hooks()) as http, \
            streamable_http_client(url, http_client=http, max_sse_event_size=64 * 1024 * 1024) as (read, write):
        yield read, write


@contextlib.asynccontextmanager
async def open_transport(spec: ServerSpec, on_eof: Callable[[], None],
                         ) -> AsyncIterator[tuple[Any, Any, RawStdioChannel | None]]:
    """Connect to the server: yield (read stream, write stream, raw channel for a stdio server).

    `on_eof` is called when the transport reaches EOF (the server went away).
    """
    if spec.transport in ("http", "sse"):
        async with _open_remote(spec, on_eof) as (read, write):
            yield _WatchedReadStream(read, on_eof), write, None
        return
    params = stdio_params(spec)
    errlog = _open_stderr_log(spec.name)
    try:
        async with open_stdio_upstream(params, errlog, on_eof) as (read, write, raw):
            yield read, write, raw
    finally:
        errlog.close()
