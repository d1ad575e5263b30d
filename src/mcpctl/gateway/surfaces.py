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

from typing import TYPE_CHECKING, Any, Final

from mcp import MCPError
from mcp.types.jsonrpc import INVALID_PARAMS

from mcpctl.gateway.sessions import Caller
from mcpctl.presentation.budgets import LIMITED, LIMITED_CLASS
from mcpctl.presentation.envelope import mrtr_params

if TYPE_CHECKING:
    from mcpctl.gateway.calllog import CallLog
    from mcpctl.gateway.views import Views

_ITEM: Final = {"resources/read": "resource", "resources/subscribe": "resource", "prompts/get": "prompt",
                "completion/complete": "completion for"}
_MAX_LOGGED: Final = 200


class Surfaces:
    """A gateway's prompts, resources and templates, as each session's view admits them."""

    def __init__(self, views: Views, log_call: CallLog) -> None:
        self.views = views
        self.log_call = log_call

    # -- requests ------------------------------------------------------------------------------------

    def admit(self, caller: Caller, server: str, method: str, name: str) -> None:
        """Refuse (MCPError, logged `denied`) a request for `server`'s item `name` outside the
        caller's view, and (logged `limited`) one over the caller's budget (`presentation.budgets`)."""
        shown = _bounded(name)
        call = self.log_call.begin(caller).named(f"{method} {shown}", None)
        refusal = self.views.view_for(caller).admit(server, f"{_ITEM.get(method, 'item')} {shown!r}")
        if refusal is not None:
            call.log(refusal.outcome, refusal.error_class)
            raise MCPError(code=INVALID_PARAMS, message=refusal.message)
        limits = self.views.limits
        if limits.rates and (over := limits.take(caller.profile, caller.credential)) is not None:
            call.log("limited", LIMITED_CLASS)
            raise MCPError(code=LIMITED, message=over.message, data={"retryAfterSeconds": over.retry_after})

    def lists(self, caller: Caller, section: str) -> list[dict[str, Any]]:
        """The session's `prompts`, `resources` or `resourceTemplates` list."""
        view, cat = self.views.view_for(caller), self.views.catalogue
        if section == "prompts":
            return cat.prompt_list(view)
        return cat.resource_list(view) if section == "resources" else cat.template_list(view)

    def route_resource(self, uri: str) -> tuple[str, str]:
        """(server, upstream URI) of a URI a client knows; an unknown one is the protocol's error."""
        route = self.views.catalogue.route_resource(uri)
        if route is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {_bounded(uri)}")
        return route

    def read_request(self, caller: Caller, params: Any) -> tuple[str, dict[str, Any]]:
        """`resources/read`: (server, the request to relay to it), admitted for the caller."""
        uri = str(params.uri)
        server, up_uri = self.route_resource(uri)
        self.admit(caller, server, "resources/read", uri)
        return server, mrtr_params({"uri": up_uri}, params)

    def prompt_request(self, caller: Caller, params: Any) -> tuple[str, dict[str, Any]]:
        """`prompts/get`: (server, the request to relay to it), admitted for the caller."""
        hit = self.views.catalogue.prompts.get(params.name)
        if hit is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {_bounded(params.name)}")
        self.admit(caller, hit[0], "prompts/get", params.name)
        fwd: dict[str, Any] = {"name": hit[1]}
        if params.arguments:
            fwd["arguments"] = dict(params.arguments)
        return hit[0], mrtr_params(fwd, params)

def _bounded(text: str) -> str:
    """A client's name or URI as it may appear in the log and in messages: printable, bounded."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _MAX_LOGGED else text[:_MAX_LOGGED] + "…"
