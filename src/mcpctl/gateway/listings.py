"""The catalogue kept in step with the upstreams and the project, while serving.

An upstream's listing reaches the cache first (search reads each server's about text from it),
then the catalogue, then the sessions (`list_changed`); its state reaches the status store; a
misconfigured server's favourites leave the list with the reason; a changed tool definition is
checked against its pin; search re-indexes in the background. A project edited while serving is
re-read each second (`watch_project`). The server instructions follow every change
(`on_instructions`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from mcpctl.auth import expiry
from mcpctl.gateway.pool import Pool
from mcpctl.gateway.sessions import NOTIFIED_SECTIONS, Sessions
from mcpctl.gateway.views import Views
from mcpctl.presentation.catalogue import cached_listing
from mcpctl.presentation.view import SessionKey
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.upstream.supervisor import Listing, Upstream

log = logging.getLogger("mcpctl.gateway")

StatusWriter = Callable[[str, dict[str, Any]], None]


class Listings:
    """Applies upstream listings, states and project edits to the catalogue and its sessions."""

    def __init__(self, project_name: str, views: Views, pool: Pool, sessions: Sessions, *,
                 on_status: StatusWriter | None = None, stdio_profile: str | None = None) -> None:
        self.project_name = project_name
        self.views = views
        self.pool = pool
        self.sessions = sessions
        self.on_status = on_status
        self.stdio_profile = stdio_profile
        self.on_instructions: Callable[[str], None] | None = None
        self._disk = anyio.CapacityLimiter(1)       # one cache writer thread, not one per upstream
        self._background: set[Any] = set()         # notification tasks started from callbacks

    def load_cache(self, preloaded: Mapping[str, dict[str, Any] | None] | None) -> None:
        """The catalogue from the cache (`preloaded`: entries already read, None if never listed)."""
        listings, never = {}, []
        for name in self.pool.upstreams:
            entry = preloaded[name] if preloaded is not None and name in preloaded \
                else self.views.cache.read_server_entry(name)
            if entry is None:
                never.append(name)
            else:
                listings[name] = cached_listing(entry)
        self.views.catalogue.set_listings(listings)
        self.pool.expect(never)

    def status(self, name: str, status: dict[str, Any]) -> None:
        if self.on_status is not None:
            try:
                self.on_status(name, status)
            except Exception:
                log.exception("writing status of %s failed", name)

    def changed(self, change: Callable[[], Any]) -> Any:
        """Apply a change to the catalogue and keep the server instructions in step (sessions
        that initialize from now on get the new text)."""
        result = change()
        if self.on_instructions is not None:
            self.on_instructions(self.views.catalogue.instructions)
        return result

    # -- upstream events --------------------------------------------------------------------------

    def on_state(self, up: Upstream) -> None:
        status: dict[str, Any] = {"state": up.state, "lastError": up.last_error}
        if up.spec.auth is not None:
            status.update(expiry.status_fields(up.name, up.state))
        if up.state == "up":
            status.update(tools=up.tool_count, protocolVersion=up.protocol_version, serverInfo=up.server_info,
                          capabilities=up.capabilities, lastSeen=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self.status(up.name, status)
        if up.state == "down":
            self.pool.settle(up.name)
            catalogue = self.views.catalogue
            if up.fatal and up.name not in catalogue.down:
                # misconfigured (never retried): its favourites leave the list, with the reason
                down = {**catalogue.down, up.name: up.last_error or "cannot start"}
                if self.changed(lambda: catalogue.set_down(down)):
                    self.notify_soon({"tools"})

    async def on_listing(self, up: Upstream, listing: Listing) -> None:
        catalogue = self.views.catalogue
        before = {s: catalogue.listings.get(up.name, {}).get(s) for s in listing}
        changed = {s for s, items in listing.items() if before.get(s) != items}
        if changed:
            # the cache first: search reads each server's about text from it for the new version
            await anyio.to_thread.run_sync(self.views.cache.write_server_entry, up.name, dict(listing), limiter=self._disk)
            if "tools" in changed:
                await self._report_pins(up.name, listing["tools"])
            self.changed(lambda: catalogue.set_listing(up.name, listing))
        self.pool.settle(up.name)
        if changed:
            told = "; notifying clients" if changed & NOTIFIED_SECTIONS else ""
            log.info("catalogue of %s changed (%s)%s", up.name, ", ".join(sorted(changed)), told)
            if "tools" in changed:
                self.index_soon()
            await self.sessions.notify(changed)

    async def _report_pins(self, server: str, tools: list[dict[str, Any]]) -> None:
        """Log the tool definitions that differ from those pinned at the server's first listing."""
        from mcpctl.catalogue.pins import changes

        mode = self.views.catalogue.project.pinning
        found = [] if mode == "off" else await anyio.to_thread.run_sync(changes, server, tools, limiter=self._disk)
        if found:
            log.warning("server %s: %d tool definition(s) differ from those pinned (%s): %s; read them with "
                        "mcpctl tools changes --project %s", server, len(found),
                        ", ".join(f"{c.tool} {c.kind}" for c in found[:5]) + (" …" if len(found) > 5 else ""),
                        "withheld until approved" if mode == "hold" else "served", self.project_name)

    # -- background work ------------------------------------------------------------------------------

    def _background_task(self, coro: Any) -> None:
        import asyncio

        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:        # no loop: nobody to tell, nothing to index for
            coro.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def notify_soon(self, sections: set[str]) -> None:
        """Notify from a synchronous callback: the upstream supervisor runs in our event loop."""
        self._background_task(self.sessions.notify(sections))

    def index_soon(self) -> None:
        """Index the catalogue for search_tools now, in the background, not at the first search
        (`ToolSearch.warm`: its tool vectors are computed meanwhile)."""
        search = self.views.search
        if search is not None:
            catalogue = self.views.catalogue
            self._background_task(search.warm(catalogue.version, catalogue.view(SessionKey(profile=self.stdio_profile))))

    # -- the project -----------------------------------------------------------------------------------

    async def watch_project(self, load: Callable[[], ProjectSpec | None], interval: float = 1.0) -> None:
        """Apply curation, presentation and search changes to the project while serving (polls
        `load`), and under `pinning: hold` approvals (`tools approve` writes the pins)."""
        pins: tuple[Any, ...] | None = None
        while True:
            await anyio.sleep(interval)
            try:
                spec = await anyio.to_thread.run_sync(load)
            except Exception as e:
                log.warning("re-reading project %s failed: %s", self.project_name, e)
                spec = None
            if spec is not None and spec != self.views.project:
                self.reproject(spec)
                await self.sessions.notify({"tools"})
            pins = await self._recheck_pins(pins)

    async def _recheck_pins(self, seen: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        """Under `pinning: hold`, the pins' stamp now; when it changed since `seen` (None: the first
        look, which may follow an approval made since the catalogue read the pins) and what is
        withheld changed with it, the sessions hear `list_changed`."""
        if self.views.project.pinning != "hold":
            return None
        from mcpctl.catalogue.pins import pins_stamp

        stamp = await anyio.to_thread.run_sync(pins_stamp, list(self.pool.upstreams), limiter=self._disk)
        catalogue = self.views.catalogue
        if stamp != seen and self.changed(catalogue.recheck_held):
            log.info("project %s: pins changed; %d tool(s) withheld now", self.project_name, len(catalogue.held))
            self.index_soon()
            await self.sessions.notify({"tools"})
        return stamp

    def reproject(self, spec: ProjectSpec) -> None:
        """A new project spec (its server list is fixed while serving: restart to change it)."""
        import dataclasses

        current = self.views.project
        if spec.servers != current.servers:
            log.warning("project %s: server list changed; restart mcpctl serve to apply it", self.project_name)
            spec = dataclasses.replace(spec, servers=current.servers)
        self.changed(lambda: self.views.reproject(spec))
        log.info("project %s changed; catalogue updated", self.project_name)
