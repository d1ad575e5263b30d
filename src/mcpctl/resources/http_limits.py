"""What one client, or anyone who can connect, may hold of the HTTP front (`HttpLimits`), and
the listening socket's budget: connections within the open-file limit (`connection_budget`) and
the kernel's accept queue (`deepen_listen_queues`). `gateway.http_guard` enforces them."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

log = logging.getLogger("mcpctl.gateway.http")      # what the HTTP front says

RESERVED_FDS: Final = 64       # file descriptors kept free for upstream restarts, logs, the invocation log
MAX_BACKLOG: Final = 2048      # uvicorn's default listen backlog


@dataclass(frozen=True)
class HttpLimits:
    """What one client, or anyone who can connect, may hold of the HTTP front.

    The defaults are `mcpctl serve`'s (cli/serve.py `OPTIONS`); a test checks they agree.
    """

    header_timeout: float = 10.0          # seconds to send a complete request head
    body_timeout: float = 30.0            # seconds to send a request's body, from its head
    idle_timeout: float = 15.0            # seconds a kept-alive connection may idle between requests
    max_connections: int = 512            # open connections (lowered to fit the file-descriptor limit)
    max_sessions: int = 256               # open handshake-era sessions (more: 503)
    session_idle_timeout: float = 300.0   # seconds a session may go without a request in flight
    max_connections_per_credential: int = 128   # busy connections of one token (more: 429)
    max_sessions_per_credential: int = 64       # open handshake-era sessions of one token (more: 429)
    max_parked_per_credential: int = 256        # 2026 calls of one token parked for input (more: an error)


def unauthenticated_cap(max_connections: int) -> int:
    """Connections that have not (yet) shown the token: a quarter of all, at least 8."""
    return max(8, max_connections // 4)


def connection_budget(requested: int) -> tuple[int, int]:
    """(max connections, accept burst) for the file-descriptor limit.

    asyncio accepts up to `backlog` connections per loop iteration (uvicorn's `backlog` is both
    that and the kernel's queue; `deepen_listen_queues` gives the kernel its long queue back).
    A new connection's request is read about three iterations after it was accepted, so the
    burst is a quarter of the unauthenticated cap: the connections accepted meanwhile cannot push
    it out of that cap before its token is seen. A connection the guard closes gives its
    descriptor back two iterations later, so the open connections, a few bursts and a reserve
    must fit under RLIMIT_NOFILE (three quarters of what is free go to connections): past it,
    accept() fails (asyncio then stops accepting for a second) and so does every library that
    opens a file meanwhile."""
    connections = requested
    try:
        import resource
    except ImportError:                # pragma: no cover - not POSIX
        resource = None                # type: ignore[assignment]
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if resource else -1
    if resource and soft != resource.RLIM_INFINITY:
        try:
            in_use = len(os.listdir("/proc/self/fd"))
        except OSError:                # pragma: no cover - no procfs
            in_use = 64
        budget = max(32, soft - in_use - RESERVED_FDS)
        connections = max(16, min(requested, budget * 3 // 4))
        if connections < requested:
            log.info("HTTP front: at most %d connections (not %d): the open-file limit is %d", connections,
                     requested, soft)
    return connections, max(2, unauthenticated_cap(connections) // 4)


def deepen_listen_queues(servers: Iterable[Any]) -> None:
    """The kernel's accept queue back to MAX_BACKLOG: asyncio was given a small backlog, which
    also bounds how many connections it accepts per loop iteration (the part that costs file
    descriptors); the kernel's queue costs none, and a short one drops the SYNs of a client
    that connects during a flood (a one-second retransmit). listen() on a listening socket
    only changes its backlog."""
    import socket

    for server in servers:
        for ts in getattr(server, "sockets", ()):
            try:
                with socket.socket(fileno=os.dup(ts.fileno())) as sock:
                    sock.listen(MAX_BACKLOG)
            except OSError as e:     # pragma: no cover - keep the small queue
                log.info("HTTP front: cannot deepen the listen queue: %s", e)
