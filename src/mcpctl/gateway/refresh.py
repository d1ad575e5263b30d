"""`mcpctl tools list --refresh`: connect to a project's servers once, list them, update the cache."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

from mcpctl.catalogue import cache
from mcpctl.gateway.upstream import Listing, Upstream
from mcpctl.resources.kinds import ServerSpec

log = logging.getLogger("mcpctl.gateway")


def _status(name: str, status: dict[str, Any]) -> None:
    """What a listing observed, as `mcpctl get servers` shows it (as the gateway writes it)."""
    from mcpctl.resources.store import Store

    try:
        Store().set_status("Server", name, status)
    except OSError as e:
        log.warning("cannot write status of %s: %s", name, e)


async def _refresh(servers: dict[str, ServerSpec | str]) -> list[str]:
    problems: list[str] = []
    done: dict[str, anyio.Event] = {name: anyio.Event() for name in servers}

    async def on_listing(up: Upstream, listing: Listing) -> None:
        await anyio.to_thread.run_sync(cache.write_server_entry, up.name, dict(listing))
        done[up.name].set()

    def on_state(up: Upstream) -> None:
        if up.state == "up":
            _status(up.name, {"state": "up", "lastError": None, "tools": up.tool_count,
                              "protocolVersion": up.protocol_version, "serverInfo": up.server_info,
                              "lastSeen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        if up.state == "down" and not done[up.name].is_set():   # not the shutdown after listing
            problems.append(f"server {up.name!r}: {up.last_error}")
            _status(up.name, {"state": "down", "lastError": up.last_error})
            done[up.name].set()

    async def one(spec: ServerSpec, tg: Any) -> None:
        up = Upstream(spec, on_listing=on_listing, on_state=on_state)
        async with anyio.create_task_group() as inner:
            inner.start_soon(up.run)
            await done[spec.name].wait()
            inner.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for name, spec in servers.items():
            if isinstance(spec, ServerSpec):
                tg.start_soon(one, spec, tg)
            else:
                problems.append(f"server {name!r}: {spec}")
    return problems


def refresh_project(project_name: str) -> list[str]:
    """List every server of the project now; returns one problem line per server that failed."""
    from mcpctl.gateway.catalogue import load_gateway_config

    _, servers = load_gateway_config(project_name)
    return anyio.run(_refresh, servers)
