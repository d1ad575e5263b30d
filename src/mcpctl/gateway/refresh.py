"""List servers once, now: connect to each (in parallel), list it, update the catalogue cache and
the observed status, disconnect. Behind `tools list --refresh`, the automatic first listing of
`tools list`/`tools search`, and `create server`'s check.

Each server ends as listed (its tool count) or failed (the first error, e.g. command not found,
a connect timeout, the server exiting); a failed server is not retried here. `on_done` is called
as each server finishes, for progress bars.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from mcpctl.auth import expiry
from mcpctl.catalogue.cache import CatalogueCache
from mcpctl.resources.kinds import ServerSpec
from mcpctl.resources.store import ResourceStore
from mcpctl.upstream.starts import start_limit
from mcpctl.upstream.supervisor import Listing, Upstream

log = logging.getLogger("mcpctl.gateway")


@dataclass(frozen=True)
class Listed:
    server: str
    tools: int | None                # None: it failed
    error: str | None = None
    protocol: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _status(store: ResourceStore, name: str, status: dict[str, Any]) -> None:
    """What a listing observed, as `mcpctl get servers` shows it (as the gateway writes it)."""
    try:
        store.set_status("Server", name, status)
    except OSError as e:
        log.warning("cannot write status of %s: %s", name, e)


async def list_servers(servers: Mapping[str, ServerSpec | str], store: ResourceStore, cache: CatalogueCache,
                       on_done: Callable[[Listed], None] | None = None) -> dict[str, Listed]:
    """List every server once (a str value: why it cannot start), its status written to `store`,
    its listing to `cache`. Never raises for a server."""
    results: dict[str, Listed] = {}
    done: dict[str, anyio.Event] = {name: anyio.Event() for name in servers}

    def finish(result: Listed) -> None:
        if result.server in results:
            return
        results[result.server] = result
        done[result.server].set()
        if on_done is not None:
            on_done(result)

    async def on_listing(up: Upstream, listing: Listing) -> None:
        await anyio.to_thread.run_sync(cache.write_server_entry, up.name, dict(listing))
        tools = len(listing.get("tools") or [])
        _status(store, up.name, {"state": "up", "lastError": None, "tools": tools,
                          "protocolVersion": up.protocol_version, "serverInfo": up.server_info,
                          "lastSeen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          **(expiry.status_fields(up.name, "up") if up.spec.auth is not None else {})})
        finish(Listed(up.name, tools, None, up.protocol_version))

    def on_state(up: Upstream) -> None:
        if up.name in results:            # the shutdown after listing is not a failure
            return
        if up.state == "down":
            _status(store, up.name, {"state": "down", "lastError": up.last_error,
                              **(expiry.status_fields(up.name, "down") if up.spec.auth is not None else {})})
            finish(Listed(up.name, None, up.last_error or "failed"))

    slots = anyio.CapacityLimiter(start_limit())       # servers being listed at once (`upstream.starts`)

    async def one(spec: ServerSpec) -> None:
        up = Upstream(spec, on_listing=on_listing, on_state=on_state)
        async with slots, anyio.create_task_group() as inner:
            inner.start_soon(up.run)
            await done[spec.name].wait()
            up.stopping = True
            inner.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for name, spec in servers.items():
            if isinstance(spec, ServerSpec):
                tg.start_soon(one, spec)
            else:
                finish(Listed(name, None, spec))
    return results


def refresh(servers: Mapping[str, ServerSpec | str], store: ResourceStore, cache: CatalogueCache,
            on_done: Callable[[Listed], None] | None = None) -> dict[str, Listed]:
    """Blocking `list_servers`, quiet: failures are returned, not logged to stderr."""
    quiet = logging.getLogger("mcpctl.gateway")
    before, mute = quiet.propagate, logging.NullHandler()
    quiet.propagate = False            # the caller reports each failure once
    quiet.addHandler(mute)             # (and no last-resort handler prints it a second time)
    try:
        return anyio.run(list_servers, servers, store, cache, on_done)
    finally:
        quiet.removeHandler(mute)
        quiet.propagate = before


def refresh_project(project_name: str, store: ResourceStore, cache: CatalogueCache,
                    only: Callable[[str], bool] | None = None,
                    on_done: Callable[[Listed], None] | None = None) -> dict[str, Listed]:
    """List the project's servers (or those `only` selects) now."""
    from mcpctl.presentation.catalogue import load_gateway_config

    _, servers = load_gateway_config(project_name, store)
    chosen = {n: s for n, s in servers.items() if only is None or only(n)}
    return refresh(chosen, store, cache, on_done)
