"""Prompts, resources and resource templates through the pipeline, and who may hear from a server.

A session's `prompts/list`, `resources/list` and `resources/templates/list` hold only the items of
the servers its view admits (`View.servers`: curation, the credential's profile and the gate,
decided by server in `presentation.filters`). Every request naming one item, `resources/read` (the
namespaced `mcpctl://` URI, the upstream's own, or one made from a template), `prompts/get`,
`completion/complete` (a prompt or a resource reference) and `resources/subscribe`, is checked the
same way before it is routed: outside the view it fails as a hidden tool's call does, with the
refusal's message (JSON-RPC `INVALID_PARAMS`: these results have no `isError`), and one `denied`
row in the invocation log under `<method> <name or uri>`.

Traffic the other way follows the view too (`uses`): an upstream's request to a client outside a
call (roots) goes only to a session whose view includes that server, and its log messages and
resource updates reach only such sessions (`relay`, `asks`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from mcp import MCPError
from mcp.types.jsonrpc import INVALID_PARAMS

from mcpctl.gateway.asks import mrtr_params
from mcpctl.gateway.sessions import Caller
from mcpctl.presentation.view import SessionKey, View

if TYPE_CHECKING:
    from mcpctl.gateway.front import Gateway

_ITEM: Final = {"resources/read": "resource", "resources/subscribe": "resource", "prompts/get": "prompt",
                "completion/complete": "completion for"}
_MAX_LOGGED: Final = 200


class Surfaces:
    """A gateway's prompts, resources and templates, as each session's view admits them."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    # -- who may hear from a server ------------------------------------------------------------------

    def view_of(self, session_id: str, profile: str | None) -> View:
        """The view of a session known by its id and credential profile (outside its requests)."""
        gated = self.gw.project.gate.enabled and not self.gw.sessions.begun(session_id)
        return self.gw.catalogue.view(SessionKey(gated, profile))

    def may_use(self, session_id: str, profile: str | None, server: str) -> bool:
        """Whether anything passes between this session (of this credential profile) and `server`."""
        return self.view_of(session_id, profile).uses(server)

    def session_uses(self, session_id: str, server: str) -> bool:
        """`may_use` for a session known by its id alone (an unknown session: no)."""
        known, profile = self.gw.sessions.profile_of(session_id)
        return known and self.may_use(session_id, profile, server)

    # -- requests ------------------------------------------------------------------------------------

    def admit(self, caller: Caller, server: str, method: str, name: str) -> None:
        """Refuse (MCPError, logged `denied`) a request for `server`'s item `name` outside the
        caller's view."""
        ts, t0 = time.time(), time.perf_counter()
        shown = _bounded(name)
        refusal = self.gw.view_for(caller).admit(server, f"{_ITEM.get(method, 'item')} {shown!r}")
        if refusal is None:
            return
        self.gw.router.log_call(caller, ts, t0, f"{method} {shown}", None, refusal.outcome, refusal.error_class)
        raise MCPError(code=INVALID_PARAMS, message=refusal.message)

    def lists(self, caller: Caller, section: str) -> list[dict[str, Any]]:
        """The session's `prompts`, `resources` or `resourceTemplates` list."""
        view, cat = self.gw.view_for(caller), self.gw.catalogue
        if section == "prompts":
            return cat.prompt_list(view)
        return cat.resource_list(view) if section == "resources" else cat.template_list(view)

    def route_resource(self, uri: str) -> tuple[str, str]:
        """(server, upstream URI) of a URI a client knows; an unknown one is the protocol's error."""
        route = self.gw.catalogue.route_resource(uri)
        if route is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {_bounded(uri)}")
        return route

    async def read_resource(self, caller: Caller, params: Any) -> dict[str, Any]:
        uri = str(params.uri)
        server, up_uri = self.route_resource(uri)
        self.admit(caller, server, "resources/read", uri)
        fwd = mrtr_params({"uri": up_uri}, params)
        return await self.gw.relay.request(caller, server, "resources/read", fwd)

    async def get_prompt(self, caller: Caller, params: Any) -> dict[str, Any]:
        hit = self.gw.catalogue.prompts.get(params.name)
        if hit is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {_bounded(params.name)}")
        self.admit(caller, hit[0], "prompts/get", params.name)
        fwd: dict[str, Any] = {"name": hit[1]}
        if params.arguments:
            fwd["arguments"] = dict(params.arguments)
        fwd = mrtr_params(fwd, params)
        return await self.gw.relay.request(caller, hit[0], "prompts/get", fwd)


def _bounded(text: str) -> str:
    """A client's name or URI as it may appear in the log and in messages: printable, bounded."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _MAX_LOGGED else text[:_MAX_LOGGED] + "…"
