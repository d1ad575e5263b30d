"""The gateway's side of `ask`: the upstreams' text resources read into a passage index, kept
fresh, and answered with the calling client's own model when it lends one.

- **What is read**: every resource the catalogue lists (the servers' `resources/list`, which
  includes the instances of their templates that they list), through the pool, as the gateway
  itself (`Relay.request` with no caller: what an upstream asks meanwhile goes to no client).
  Text contents are indexed (`ask.index.PassageIndex`); blobs are skipped and said so.
- **When**: a background loop (`run`) syncs when a server's listing changes (`listing_changed`,
  after `resources/list_changed` re-lists it), when a resource it reads is reported updated
  (`updated`: `resources/updated` reaches the gateway for URIs some client subscribed to), and
  otherwise every `ask.refreshSeconds`, when everything indexed is read again. Updates are
  coalesced per URI: one reported updated is read again at most once every `REREAD_S` (a chatty
  upstream's thousands of `resources/updated` a second cost one read of each URI per interval). An `ask` first
  reads what is listed but not indexed yet (bounded by `ASK_SYNC_S`), so a note created a moment
  ago is found as soon as its server has listed it.
- **Who sees what**: `search` takes the servers the caller's view admits (`View.servers`:
  curation, the credential's profile, the gate), so a passage of another server is never ranked
  for it, let alone returned.
- **The answer**: the project's own model when its spec sets `ask.model` (an OpenAI-compatible
  endpoint, `answer.project_answer`), for every client of either era, whether or not it lends
  sampling; when that endpoint fails, the passages with a note naming it and the error. Without
  `ask.model`, only a handshake-era client that declared `sampling` is asked
  (`sampling/createMessage` on the call's own channel, `peers`). Either model gets the question
  and the top passages, nothing else. A 2026-07-28 client cannot be sent requests outside an
  upstream's call (an input-required round trip for mcpctl's own request is not built), so
  without `ask.model` it gets passages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Container, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as t

from mcpctl.ask import answer
from mcpctl.ask.index import Hit, PassageIndex
from mcpctl.gateway.peers import declares
from mcpctl.presentation.view import OPEN_SESSION
from mcpctl.resources.kinds import ServerSpec

if TYPE_CHECKING:
    from mcpctl.gateway.peers import Peer
    from mcpctl.gateway.views import Views
    from mcpctl.resources.settings import AskSettings

log = logging.getLogger("mcpctl.gateway")

Read = Callable[[str, str], Awaitable[dict[str, Any]]]    # (server, upstream uri) -> resources/read result
ASK_SYNC_S: Final = 10.0          # an ask waits at most this long for resources not read yet
READERS: Final = 4                # resources read at once
REREAD_S: Final = 2.0             # a resource reported updated is read again at most this often
SAMPLING_S: Final = 120.0         # how long the client's model may take


def resource_text(result: dict[str, Any]) -> str | None:
    """The text of a resources/read result (its text contents joined), None when it has none."""
    texts = [c["text"] for c in result.get("contents") or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return "\n\n".join(texts) if texts else None


def resource_title(uri: str, wire: dict[str, Any]) -> str:
    return str(wire.get("title") or wire.get("name") or uri)


class Knowledge:
    """A gateway's passage index over its upstreams' resources."""

    def __init__(self, views: Views, read: Read) -> None:
        self.views = views
        self.read = read
        self.index = PassageIndex(views.project.search.ranker, views.project.ask.max_bytes, wait=False)
        self.read_at: dict[tuple[str, str], float] = {}
        self.dirty: set[tuple[str, str]] = set()
        self._kick = anyio.Event()
        self._lock = anyio.Lock()

    @property
    def settings(self) -> AskSettings:
        """The project's `ask` settings as they are now (a project edit applies while serving)."""
        return self.views.project.ask

    # -- events ------------------------------------------------------------------------------------

    def kick(self) -> None:
        self._kick.set()

    def listing_changed(self, server: str) -> None:
        self.kick()

    def updated(self, server: str, uri: str) -> None:
        if (server, uri) in self.read_at:
            self.dirty.add((server, uri))
            self.kick()

    async def run(self) -> None:
        """Keep the index in step until cancelled (first sync as soon as the servers list)."""
        while True:
            try:
                if self.settings.enabled:
                    await self.sync(stale_after=self.settings.refresh_seconds)
                    await anyio.to_thread.run_sync(self.index.ranker)     # the first ask finds it built
            except Exception:
                log.exception("indexing resources for ask failed")
            with anyio.move_on_after(self._next_due()):
                await self._kick.wait()
            self._kick = anyio.Event()

    def _due(self, key: tuple[str, str], now: float) -> float:
        """When an updated resource may be read again (coalescing its updates)."""
        return self.read_at.get(key, -REREAD_S) + REREAD_S - now

    def _next_due(self) -> float:
        """How long the loop may sleep: until the next refresh, or the first updated resource due."""
        now = time.monotonic()
        waits = [max(0.0, self._due(k, now)) for k in self.dirty] if self.settings.enabled else []
        return min([self.settings.refresh_seconds, *waits])

    # -- reading -----------------------------------------------------------------------------------

    def listed(self) -> dict[tuple[str, str], str]:
        """(server, upstream uri) -> title, of every resource the catalogue lists for a server the
        project's curation keeps (a credential's profile only narrows that: `search` filters)."""
        catalogue = self.views.catalogue
        kept = catalogue.view(OPEN_SESSION).servers
        return {(server, uri): resource_title(uri, wire)
                for server, uri, wire in catalogue.resources.values() if server in kept}

    async def sync(self, stale_after: float | None = None) -> int:
        """Read what is listed and not indexed, reported updated, or (with `stale_after`) read
        longer ago than that; drop what is no longer listed. Returns how many were read."""
        async with self._lock:
            self.index.max_bytes = self.settings.max_bytes
            listed = self.listed()
            for server in {s for s, _ in self.index.resources()} | {s for s, _ in self.index.skipped}:
                self.index.keep_only(server, {u for s, u in listed if s == server})
            for key in [k for k in self.read_at if k not in listed]:
                self.read_at.pop(key, None)
            self.dirty.intersection_update(listed)
            now = time.monotonic()
            todo = [k for k in listed if k not in self.read_at or (k in self.dirty and self._due(k, now) <= 0)
                    or (stale_after is not None and now - self.read_at[k] >= stale_after)]
            if not todo:
                return 0
            limiter = anyio.CapacityLimiter(READERS)

            async def one(key: tuple[str, str]) -> None:
                async with limiter:
                    await self._read_one(key, listed[key])

            async with anyio.create_task_group() as tg:
                for key in todo:
                    tg.start_soon(one, key)
            return len(todo)

    async def _read_one(self, key: tuple[str, str], title: str) -> None:
        server, uri = key
        self.dirty.discard(key)
        if self.index.size >= self.index.max_bytes and not self.index.has(server, uri):
            self.index.skip(server, uri, f"not indexed: ask.maxBytes ({self.index.max_bytes}) is reached")
            self.read_at[key] = time.monotonic()
            return
        try:
            result = await self.read(server, uri)
        except Exception as e:
            log.info("ask: reading %s from %s failed: %s", uri, server, getattr(e, "message", None) or e)
            self.index.skip(server, uri, f"could not be read: {getattr(e, 'message', None) or e}")
            return                   # not marked read: tried again at the next sync
        self.read_at[key] = time.monotonic()
        text = resource_text(result)
        if text is None:
            self.index.skip(server, uri, "no text (binary contents are not indexed)")
        else:
            self.index.put(server, uri, title, text)

    # -- asking ------------------------------------------------------------------------------------

    async def search(self, question: str, top_k: int, servers: Container[str]) -> list[Hit]:
        with anyio.move_on_after(ASK_SYNC_S):
            await self.sync()
        return await anyio.to_thread.run_sync(self.index.search, question, top_k, servers)

    async def ask(self, peer: Peer | None, question: str, top_k: int, servers: Container[str]) -> dict[str, Any]:
        """The `ask` payload: the passages, and a model's answer: the project's own when `ask.model`
        is set (whatever the client lends), else the client's when it lends one."""
        hits = await self.search(question, top_k, servers)
        searched = len(self.index)
        if not hits:
            return answer.payload(question, hits, None, None, None, searched)
        model = self.settings.model
        if model is not None:
            result = await answer.with_project_model(model, question, hits, searched)
            if "note" in result:
                log.warning("ask: %s", result["note"])
            return result
        return await self._sampled(peer, question, hits, searched)

    async def _sampled(self, peer: Peer | None, question: str, hits: list[Hit], searched: int) -> dict[str, Any]:
        """The payload answered by the calling client's model through sampling, when it lends one
        and can be asked; else the passages with a note saying why no model answered."""
        request = t.CreateMessageRequest(params=t.CreateMessageRequestParams(
            messages=[t.SamplingMessage(role="user", content=t.TextContent(
                type="text", text=answer.sampling_text(question, hits)))],
            system_prompt=answer.SYSTEM_PROMPT, max_tokens=answer.MAX_ANSWER_TOKENS,
            include_context="none"))
        if peer is not None and peer.modern:        # whatever it lends: no request can reach it from here
            return answer.payload(question, hits, None, None, answer.NO_REQUEST_2026, searched)
        if peer is None or not declares(peer.capabilities, request):
            return answer.payload(question, hits, None, None, answer.NO_MODEL, searched)
        try:
            raw = await peer.request(request, SAMPLING_S)
        except Exception as e:
            why = getattr(getattr(e, "error", None), "message", None) or str(e) or type(e).__name__
            return answer.payload(question, hits, None, None, answer.DECLINED.format(why=why), searched)
        content = raw.get("content")
        reply = content.get("text") if isinstance(content, dict) else None
        if not isinstance(reply, str):
            texts = [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
            reply = "\n".join(x for x in texts if isinstance(x, str)) or None
        if reply is None:
            return answer.payload(question, hits, None, None,
                                  answer.DECLINED.format(why="its answer had no text"), searched)
        return answer.payload(question, hits, reply, raw.get("model"), None, searched)


# -- the CLI: one short-lived connection per server (`mcpctl ask`) -----------------------------------

ReadResult = tuple[dict[tuple[str, str], tuple[str, str | None]], dict[str, str]]


async def read_servers(servers: Mapping[str, ServerSpec | str], max_bytes: int) -> ReadResult:
    """Connect to each server (in parallel), list its resources and read them, disconnect:
    ((server, uri) -> (title, text or None for no text), server -> why it failed). Reading
    stops at `max_bytes` of text in all, as the gateway's index does. Never raises for a server."""
    from mcpctl.upstream.supervisor import Upstream

    got: dict[tuple[str, str], tuple[str, str | None]] = {}
    failed: dict[str, str] = {n: s for n, s in servers.items() if isinstance(s, str)}
    budget = [max_bytes]

    async def one(spec: ServerSpec) -> None:
        listed: dict[str, Any] = {}
        ready = anyio.Event()

        async def on_listing(up: Upstream, listing: Any) -> None:
            listed.update(listing)
            ready.set()

        def on_state(up: Upstream) -> None:
            if up.state == "down" and not ready.is_set():
                failed[spec.name] = up.last_error or "failed"
                ready.set()

        up = Upstream(spec, on_listing=on_listing, on_state=on_state)
        async with anyio.create_task_group() as tg:
            tg.start_soon(up.run)
            await ready.wait()
            try:
                for wire in listed.get("resources") or []:
                    if budget[0] <= 0:
                        break
                    uri = str(wire.get("uri"))
                    try:
                        result = await up.request("resources/read", {"uri": uri}, timeout=spec.timeouts.call)
                    except Exception as e:
                        log.info("reading %s from %s failed: %s", uri, spec.name, getattr(e, "message", None) or e)
                        continue
                    text = resource_text(result)
                    budget[0] -= len(text.encode("utf-8")) if text else 0
                    got[(spec.name, uri)] = (resource_title(uri, wire), text)
            finally:
                up.stopping = True
                tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for spec in servers.values():
            if isinstance(spec, ServerSpec):
                tg.start_soon(one, spec)
    return got, failed
