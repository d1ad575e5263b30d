"""The rest of the protocol between clients and upstreams: logging, resource subscriptions,
completion, and the capabilities the gateway advertises for them.

- **Log messages** (`notifications/message`) an upstream emits during a call go to the calling
  client (found as for server-to-client requests, `asks`), filtered by that session's
  `logging/setLevel`, or for a 2026-07-28 client by its request's own log opt-in (`_meta`
  `io.modelcontextprotocol/logLevel`; none: no log messages, as the spec says). A message no call
  can be tied to goes to the stdio client, or over HTTP to the sessions that asked for log
  messages with `logging/setLevel` (at their level).
- **`logging/setLevel`** is recorded per session and applied to every upstream that offers
  logging, at the most verbose level any session asked for (the gateway filters per session);
  an upstream that (re)connects gets it too.
- **`resources/subscribe` / `unsubscribe`** (and 2026-07-28 `subscriptions/listen` streams with
  `resourceSubscriptions`): the URI the client knows (namespaced, upstream or template-made) is
  routed to its upstream, which is subscribed once for all sessions and unsubscribed with the last;
  its `notifications/resources/updated` reaches only the sessions subscribed to it, each with the
  URI it subscribed with. Subscriptions are renewed when an upstream reconnects.
- **`completion/complete`**: a prompt argument goes to the prompt's upstream under its own prompt
  name; a resource-template argument to the upstream that lists the template.
- **The session's view** (`surfaces`): a subscription or a completion for an item outside it is
  refused like a hidden tool's call; log messages outside calls and resource updates reach only the
  sessions whose view includes the server they come from.
- **Capabilities**: `logging`, `completions`, `resources.subscribe`, `prompts` and `resources` are
  advertised when at least one upstream offers them (as it did when last connected: the status
  the gateway keeps per server; `tools` always).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as t
from mcp import MCPError
from mcp.server.subscriptions import ResourceUpdated
from mcp.types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from mcpctl.gateway.asks import Relayed
from mcpctl.gateway.early import offered
from mcpctl.gateway.peers import LOG_RANK, log_allowed
from mcpctl.presentation.envelope import relayed, retry_params
from mcpctl.upstream.ceiling import held
from mcpctl.upstream.errors import UpstreamTimeout, UpstreamUnavailable

if TYPE_CHECKING:
    from mcpctl.gateway.asks import Asks
    from mcpctl.gateway.pool import Pool
    from mcpctl.gateway.sessions import Caller
    from mcpctl.gateway.surfaces import Surfaces
    from mcpctl.gateway.views import Views
    from mcpctl.upstream.supervisor import Upstream

log = logging.getLogger("mcpctl.gateway")

MAX_SUBSCRIPTIONS: Final = 4096          # (server, uri) pairs, each for any number of sessions


class Relay:
    """Logging, subscriptions and completion between a gateway's clients and its upstreams."""

    def __init__(self, pool: Pool, views: Views, asks: Asks, surfaces: Surfaces,
                 known_capabilities: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.pool = pool
        self.views = views
        self.sessions = views.sessions
        self.asks = asks
        self.surfaces = surfaces
        self.known = dict(known_capabilities or {})       # server -> capabilities when last connected
        # (server, upstream uri) -> {session: (the uri it subscribed with, its credential profile)}
        self.subs: dict[tuple[str, str], dict[str, tuple[str, str | None]]] = {}
        self.level: str | None = None                     # applied upstream

    # -- capabilities ---------------------------------------------------------------------------------

    def offered(self) -> set[str]:
        """Which relayed capabilities at least one upstream offers (`early.offered`)."""
        return offered({name: up.capabilities if up.capabilities is not None else self.known.get(name)
                        for name, up in self.pool.upstreams.items()}, self.views.catalogue.listings)

    def advertise(self, caps: t.ServerCapabilities) -> t.ServerCapabilities:
        offered = self.offered()
        update: dict[str, Any] = {}
        if "logging" not in offered:
            update["logging"] = None
        if "completions" not in offered:
            update["completions"] = None
        if "prompts" not in offered:
            update["prompts"] = None
        if "resources" not in offered:
            update["resources"] = None
        elif caps.resources is not None and caps.resources.subscribe and "subscribe" not in offered:
            update["resources"] = caps.resources.model_copy(update={"subscribe": None})
        return caps.model_copy(update=update) if update else caps

    # -- requests -----------------------------------------------------------------------------------

    async def request(self, caller: Caller | None, server: str, method: str, params: dict[str, Any]
                      ) -> dict[str, Any]:
        """Relay one request other than tools/call to its upstream, as a call of `caller` (what
        the upstream asks meanwhile reaches that client); the result without the era envelope."""
        up = self.pool.get(server)
        if up is None:
            raise MCPError(code=INTERNAL_ERROR, message=f"upstream server {server!r} is unavailable: "
                           f"{self.pool.why(server)}")

        async def send(p: dict[str, Any] = params) -> dict[str, Any]:
            try:
                return await up.request(method, p, timeout=up.spec.timeouts.call)
            except (UpstreamTimeout, UpstreamUnavailable) as e:
                raise MCPError(code=INTERNAL_ERROR, message=str(e)) from None

        asks = self.asks
        if caller is None:          # the gateway's own (a subscription, `ask`'s reading): no ceiling
            result = await send()
        else:
            ceiling = self.pool.ceilings.get(server)
            result = await (asks.relay(caller, server, send) if ceiling is None else
                            held(ceiling, functools.partial(asks.relay, caller, server, send)))
            if result.get("resultType") == "input_required" and not (caller.peer and caller.peer.modern):
                result = await asks.resolve(caller, result, lambda answers, state: held(ceiling, functools.partial(
                    asks.relay, caller, server, functools.partial(send, retry_params(params, answers, state)))))
        return relayed(result)

    # -- upstream events ---------------------------------------------------------------------------------

    def hooks(self, server: str) -> dict[str, Any]:
        async def on_log(params: t.LoggingMessageNotificationParams) -> None:
            await self.upstream_log(server, params)

        return {"logging_callback": on_log}

    async def upstream_log(self, server: str, params: t.LoggingMessageNotificationParams) -> None:
        call = self.asks.find(server)          # before any await: the call's result waits for it
        if isinstance(call, Relayed):
            call.delivering()
            try:
                if await self._log_to_call(call.caller, params):
                    return
            finally:
                call.delivered()
        await self._log_to_listeners(server, params)

    async def _log_to_call(self, caller: Caller, params: t.LoggingMessageNotificationParams) -> bool:
        peer = caller.peer
        if peer is None:
            return False
        threshold = caller.log_level if peer.modern else self.sessions.level_of(caller.session_id)
        if peer.modern and threshold is None:
            return True                            # 2026: log messages only on request
        if log_allowed(params.level, threshold):
            try:
                await peer.notify(t.LoggingMessageNotification(params=params))
            except Exception as e:
                log.debug("a log message for %s was not delivered: %s", caller.session_id, e)
        return True

    async def _log_to_listeners(self, server: str, params: t.LoggingMessageNotificationParams) -> None:
        sessions = self.sessions
        if sessions.stdio is not None:
            targets = {sessions.stdio.session_id: sessions.level_of(sessions.stdio.session_id)}
        else:
            targets = dict(sessions.levels())
        for sid, level in targets.items():
            if not log_allowed(params.level, level) or not self.views.session_uses(sid, server):
                continue
            peer = sessions.peer_of(sid)
            if peer is None or peer.modern:       # 2026: log messages only on a request's stream
                continue
            try:
                with anyio.fail_after(2):
                    await peer.notify(t.LoggingMessageNotification(params=params))
            except Exception as e:
                log.debug("a log message for %s was not delivered: %s", sid, e)

    async def upstream_message(self, up: Upstream, message: Any) -> None:
        if isinstance(message, t.ResourceUpdatedNotification):
            await self.resource_updated(up.name, str(message.params.uri))
        elif isinstance(message, t.ElicitCompleteNotification):
            # a URL-mode elicitation finished out of band: tell the client of the call that asked
            call = self.asks.find(up.name)
            peer = call.caller.peer if isinstance(call, Relayed) else None
            if peer is not None and not peer.modern:
                try:
                    await peer.notify(message)
                except Exception as e:
                    log.debug("elicitation/complete not delivered: %s", e)

    async def upstream_up(self, up: Upstream) -> None:
        """An upstream (re)connected: give it the log level and the subscriptions it had."""
        if self.level is not None and _has(up.capabilities, "logging"):
            await self._send(up, "logging/setLevel", {"level": self.level})
        for server, uri in list(self.subs):
            if server == up.name:
                await self._send(up, "resources/subscribe", {"uri": uri})

    async def _send(self, up: Upstream, method: str, params: dict[str, Any]) -> bool:
        try:
            await up.request(method, params, timeout=up.spec.timeouts.call)
            return True
        except Exception as e:
            log.warning("upstream %s: %s failed: %s", up.name, method, getattr(e, "message", None) or e)
            return False

    # -- logging/setLevel --------------------------------------------------------------------------------

    async def set_level(self, caller: Caller, level: str) -> None:
        self.sessions.set_level(caller.session_id, level)
        levels = self.sessions.levels().values()
        wanted = min(levels, key=lambda lv: LOG_RANK.get(lv, 0)) if levels else level
        if wanted == self.level:
            return
        self.level = wanted
        async with anyio.create_task_group() as tg:
            for up in self.pool.upstreams.values():
                if up.state == "up" and _has(up.capabilities, "logging"):
                    tg.start_soon(self._send, up, "logging/setLevel", {"level": wanted})

    # -- resources ----------------------------------------------------------------------------------------

    async def subscribe(self, caller: Caller, uri: str) -> None:
        server, up_uri = self.surfaces.route_resource(uri)
        self.surfaces.admit(caller, server, "resources/subscribe", uri)
        key = (server, up_uri)
        subs = self.subs.get(key)
        if subs is None:
            if len(self.subs) >= MAX_SUBSCRIPTIONS:
                raise MCPError(code=INVALID_PARAMS, message="too many resource subscriptions")
            await self.request(None, server, "resources/subscribe", {"uri": up_uri})
            subs = self.subs.setdefault(key, {})
        subs[caller.session_id] = (uri, caller.profile)

    async def unsubscribe(self, session_id: str, uri: str) -> None:
        server, up_uri = self.surfaces.route_resource(uri)
        key = (server, up_uri)
        subs = self.subs.get(key)
        if subs is None or subs.pop(session_id, None) is None:
            return
        if not subs:
            del self.subs[key]
            up = self.pool.get(server)
            if up is not None and up.state == "up":
                await self._send(up, "resources/unsubscribe", {"uri": up_uri})

    async def listen_resources(self, caller: Caller, uris: list[str], opening: bool) -> None:
        """A 2026-07-28 `subscriptions/listen` stream asking for resource updates opens or closes."""
        for uri in uris:
            try:
                if opening:
                    await self.subscribe(caller, uri)
                else:
                    await self.unsubscribe(caller.session_id, uri)
            except Exception as e:
                log.info("listen stream: resource subscription %s %s: %s", "for" if opening else "end of", uri, e)

    async def resource_updated(self, server: str, uri: str) -> None:
        subs = self.subs.get((server, uri))
        if not subs:
            return
        sessions = self.sessions
        for sid, (presented, profile) in list(subs.items()):
            if self.views.view_of(sid, profile).admit(server, uri) is not None:
                continue                              # its view no longer holds the resource
            await sessions.publish(sid, ResourceUpdated(uri=presented))
            peer = sessions.peer_of(sid)
            if peer is None or peer.modern:       # 2026: through its listen streams (above)
                continue
            try:
                with anyio.fail_after(2):
                    await peer.notify(t.ResourceUpdatedNotification(
                        params=t.ResourceUpdatedNotificationParams(uri=presented)))
            except Exception as e:
                log.debug("resources/updated for %s not delivered (%s): dropping the subscription", sid, e)
                subs.pop(sid, None)
        if not subs:
            self.subs.pop((server, uri), None)

    # -- completion/complete ----------------------------------------------------------------------------------

    async def complete(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        raw_ref = params.get("ref")
        ref: dict[str, Any] = raw_ref if isinstance(raw_ref, dict) else {}
        kind = ref.get("type")
        if kind == "ref/prompt":
            hit = self.views.catalogue.prompts.get(str(ref.get("name")))
            if hit is None:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {ref.get('name')}")
            server, fwd_ref, named = hit[0], {**ref, "name": hit[1]}, f"prompt {ref.get('name')}"
        elif kind == "ref/resource":
            uri = str(ref.get("uri"))
            owner = self.views.catalogue.template_owner(uri)
            if owner is not None:
                server, fwd_ref = owner, ref
            else:
                server, up_uri = self.surfaces.route_resource(uri)
                fwd_ref = {**ref, "uri": up_uri}
            named = f"resource {uri}"
        else:
            raise MCPError(code=INVALID_PARAMS, message=f"completion/complete: unknown ref type {kind!r}")
        self.surfaces.admit(caller, server, "completion/complete", named)
        fwd = {k: v for k, v in params.items() if k != "_meta"}
        fwd["ref"] = fwd_ref
        return await self.request(caller, server, "completion/complete", fwd)


def _has(caps: dict[str, Any] | None, key: str) -> bool:
    return isinstance(caps, dict) and isinstance(caps.get(key), dict)
