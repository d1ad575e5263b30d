"""The call path: a tool name walks the presentation pipeline backwards, then is routed.

`Router.call_tool` takes one `tools/call` of a session: mcpctl's built-ins (`search_tools`,
`begin_session`, `call_tool`) are answered here; any other name is resolved by the session's
view to its canonical `server/tool` with every filter checked again (a refusal is an `isError`
result saying why), and relayed verbatim to its upstream over the pooled connection. What the
upstream asks of the client meanwhile reaches this caller (`asks`); a 2026-07-28 input-required
result goes to a 2026 client as it is (its retry carries `inputResponses` and `requestState` back)
and is resolved by asking a handshake-era client. Every call is one row in the invocation log,
under the name the caller used and the canonical id. A call over its identity's budget
(`presentation.budgets`) is answered `isError` before anything else; one to a server with a
`maxConcurrency` waits for room there (`upstream.ceiling`).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp import MCPError
from mcp.types.jsonrpc import INVALID_PARAMS

from mcpctl.gateway.asks import counted
from mcpctl.gateway.sessions import Caller
from mcpctl.presentation.budgets import LIMITED_CLASS
from mcpctl.presentation.builtins import (
    ASK,
    ASK_CANONICAL_ID,
    BEGIN_SESSION,
    BEGIN_SESSION_CANONICAL_ID,
    CALL_TOOL,
    CALL_TOOL_CANONICAL_ID,
    READ_RESULT,
    READ_RESULT_CANONICAL_ID,
    SEARCH_CANONICAL_ID,
    SEARCH_TOOL,
    BuiltinError,
    error_result,
    parse_arguments,
    parse_ask,
    parse_begin_session,
    parse_call_tool,
    parse_read_result,
    search_result,
    structured_result,
    text_result,
)
from mcpctl.presentation.envelope import retry_params, strip_upstream_meta
from mcpctl.presentation.overrides import upstream_arguments
from mcpctl.presentation.sections import SectionError
from mcpctl.presentation.view import GATED, Refusal, Route, View
from mcpctl.upstream.ceiling import held
from mcpctl.upstream.errors import UpstreamTimeout, UpstreamUnavailable, describe_error

if TYPE_CHECKING:
    from mcpctl.catalogue.tool import CatalogueTool
    from mcpctl.gateway.asks import Asks
    from mcpctl.gateway.calllog import Call, CallLog
    from mcpctl.gateway.knowledge import Knowledge
    from mcpctl.gateway.pool import Pool
    from mcpctl.gateway.views import Views
    from mcpctl.presentation.sections import Sections

log = logging.getLogger("mcpctl.gateway")

_RESERVED_META_PREFIX: Final = "io.modelcontextprotocol/"
_MAX_LOGGED_NAME: Final = 200   # an unknown name is the caller's text: log a bounded copy
_BUILTIN_IDS: Final = {SEARCH_TOOL: SEARCH_CANONICAL_ID, BEGIN_SESSION: BEGIN_SESSION_CANONICAL_ID,
                       CALL_TOOL: CALL_TOOL_CANONICAL_ID, READ_RESULT: READ_RESULT_CANONICAL_ID,
                       ASK: ASK_CANONICAL_ID}


class Router:
    """Routes the calls of a gateway's sessions."""

    def __init__(self, views: Views, pool: Pool, asks: Asks, sections: Sections, log_call: CallLog,
                 knowledge: Knowledge | None = None) -> None:
        self.knowledge = knowledge        # the passage index of `ask` (when the project enables it)
        self.views = views
        self.pool = pool
        self.asks = asks
        self.sections = sections
        self.log_call = log_call

    async def call_tool(self, caller: Caller, params: Any) -> dict[str, Any]:
        """Route one tools/call (wire-format params) and return the result (no era envelope)."""
        call = self.log_call.begin(caller)
        name = params.get("name") if isinstance(params, dict) else None
        args = params.get("arguments") if isinstance(params, dict) else None
        if not isinstance(name, str) or (args is not None and not isinstance(args, dict)):
            call.named(_bounded(name), None).log("protocol_error", "InvalidParams")
            raise MCPError(code=INVALID_PARAMS, message="tools/call needs params {name: string, arguments?: object}")
        limits = self.views.limits
        if limits.rates and (over := limits.take(caller.profile, caller.credential)) is not None:
            call.named(_bounded(name), hit_id(self.views.view_for(caller), name)).log("limited", LIMITED_CLASS)
            return error_result(over.message)
        if "requestState" in params and self.asks.owns(params):
            if not self.asks.orphan(params):
                return await self._resume(call, name, params)
            answers = params.get("inputResponses")      # its replica is gone: the call again, answered
            caller.answers = answers if isinstance(answers, dict) else {}
            params = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
        view = self.views.view_for(caller)
        if name in view.builtins:
            return await self._builtin(call, view, name, args)
        if view.session.gated and name in self.views.ungated(view).builtins:
            # a built-in the session gets once it has begun: the gate's refusal, not "unknown tool"
            call.named(name, _BUILTIN_IDS[name]).log(GATED.outcome, GATED.error_class)
            return error_result(GATED.message)
        hit = view.resolve(name)
        if hit is None and not self.pool.settled:
            hit = await self._resolve_later(caller, name)
        if hit is None:
            call.named(_bounded(name), None).log("protocol_error", "UnknownTool")
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {_bounded(name)}")
        if isinstance(hit, Refusal):
            call.named(name, hit_id(view, name)).log(hit.outcome, hit.error_class)
            return error_result(hit.message)
        meta = params.get("_meta")
        return await self._relay_call(call, name, hit.tool, args, meta if isinstance(meta, dict) else None,
                                      params if "inputResponses" in params or "requestState" in params else None)

    async def _resolve_later(self, caller: Caller, name: str) -> Route | Refusal | None:
        """A name no view knows yet: a server never listed may bring it; wait for those servers
        (bounded by their connect timeout), as the call itself would."""
        await self.pool.wait_for_unlisted()
        return self.views.view_for(caller).resolve(name)

    async def _relay_call(self, call: Call, presented: str, route: CatalogueTool,
                          given: dict[str, Any] | None, meta: dict[str, Any] | None,
                          mrtr: dict[str, Any] | None = None) -> dict[str, Any]:
        server, tool, cid = route.server, route.name, route.canonical_id
        caller = call.named(presented, cid).caller
        args = upstream_arguments(route, given)          # the overrides stage, backwards
        if isinstance(args, Refusal):
            call.log(args.outcome, args.error_class)
            return error_result(args.message)
        up = self.pool.get(server)
        if up is None:
            why = self.pool.why(server)
            call.log("upstream_down", "UpstreamUnavailable")
            return error_result(f"upstream server {server!r} is unavailable: {why}")
        fwd: dict[str, Any] = {"name": tool}
        if args is not None:
            fwd["arguments"] = args
        if meta:
            extra = {k: v for k, v in meta.items()
                     if k != "progressToken" and not k.startswith(_RESERVED_META_PREFIX)}
            if extra:
                fwd["_meta"] = extra
        if mrtr is not None:
            for key in ("inputResponses", "requestState"):
                if key in mrtr:
                    fwd[key] = mrtr[key]
        timeout, progress = up.spec.timeouts.call, caller.progress

        async def send(p: dict[str, Any] = fwd) -> dict[str, Any]:
            # progress counts as a delivery of the call, as its log messages do: the result waits for it
            return await up.request("tools/call", p, timeout=timeout,
                                    on_progress=None if progress is None else counted(progress))

        ceiling = self.pool.ceilings.get(server)         # maxConcurrency (None: no ceiling)
        try:
            result = await (self.asks.relay(caller, server, send, tool=(presented, cid)) if ceiling is None else
                            held(ceiling, partial(self.asks.relay, caller, server, send, tool=(presented, cid))))
            if result.get("resultType") == "input_required" and not (caller.peer and caller.peer.modern):
                result = await self.asks.resolve(caller, result, lambda answers, state: held(ceiling, partial(
                    self.asks.relay, caller, server, partial(send, retry_params(fwd, answers, state)))))
        except (UpstreamTimeout, UpstreamUnavailable) as e:
            call.log(e.outcome, type(e).__name__)
            return error_result(str(e))
        except MCPError as e:
            call.log("protocol_error", f"MCPError{e.code}")
            raise
        except anyio.get_cancelled_exc_class():
            call.log("protocol_error", "Cancelled")
            raise
        except Exception as e:
            log.exception("relaying %s failed", cid)
            call.log("protocol_error", type(e).__name__)
            return error_result(f"mcpctl could not relay the call to {server!r}: {describe_error(e)}")
        return self._answered(call, server, result)

    def _answered(self, call: Call, server: str, result: dict[str, Any]) -> dict[str, Any]:
        """The upstream's result, through the content stage, and its row (the call named)."""
        caller = call.caller
        rt = result.get("resultType")
        if rt == "input_required":
            strip_upstream_meta(result)
            call.log("ok", "InputRequired")
            return result
        if rt not in (None, "complete"):
            call.log("protocol_error", "UnknownResultType")
            return error_result(f"upstream server {server!r} answered with a result of type {rt!r}, which "
                                "mcpctl cannot relay")
        strip_upstream_meta(result)
        failed = bool(result.get("isError"))
        # the content stage: text over results.maxTokens is cut, the rest kept for this caller
        cut = self.sections.apply((caller.session_id, caller.credential), result)
        call.log("tool_error" if failed else "ok", "ToolError" if failed else None, result=(cut.chars, cut.sections))
        return result

    async def _resume(self, call: Call, name: str, params: dict[str, Any]
                      ) -> dict[str, Any]:
        """A 2026 client's retry of a call parked for its input (`asks.Asks.resume`): logged as the
        parked call, and refused (`denied`) when it names another tool than the one parked, or one
        this caller may no longer call."""
        caller = call.caller
        view = self.views.view_for(caller)
        hit = view.resolve(name)
        try:
            parked = self.asks.parked_call(caller, params)[1]
        except MCPError as e:
            call.named(_bounded(name), hit_id(view, name)).log("protocol_error", f"MCPError{e.code}")
            raise
        presented, cid = parked.call.tool or (name, None)
        server = parked.call.server
        if isinstance(hit, Refusal):
            call.named(name, hit_id(view, name)).log(hit.outcome, hit.error_class)
            return error_result(hit.message)
        if not isinstance(hit, Route) or hit.tool.canonical_id != cid:
            call.named(_bounded(name), hit_id(view, name)).log("denied", "RequestStateMismatch")
            raise MCPError(code=INVALID_PARAMS, message=(
                f"requestState belongs to a call of {presented!r}, not {_bounded(name)!r}: retry that call with "
                "the same name, or call the other tool without requestState"))
        call.named(presented, cid)
        try:
            result = await self.asks.resume(caller, params)
        except MCPError as e:
            call.log("protocol_error", f"MCPError{e.code}")
            raise
        except (UpstreamTimeout, UpstreamUnavailable) as e:
            call.log(e.outcome, type(e).__name__)
            return error_result(str(e))
        return self._answered(call, server, result)

    # -- built-ins -------------------------------------------------------------------------------------

    async def _builtin(self, call: Call, view: View, name: str, args: Any
                       ) -> dict[str, Any]:
        call.named(name, _BUILTIN_IDS[name])
        try:
            if name == SEARCH_TOOL:
                return await self._search(call, view, args)
            if name == BEGIN_SESSION:
                return await self._begin_session(call, args)
            if name == READ_RESULT:
                return self._read_result(call, args)
            if name == ASK:
                return await self._ask(call, view, args)
            return await self._call_by_name(call, view, args)
        except BuiltinError as e:
            call.log("tool_error", "InvalidArguments")
            return error_result(str(e))

    def _read_result(self, call: Call, args: Any) -> dict[str, Any]:
        """A section of a result cut for this caller (`presentation.sections`): another session's or
        credential's id is answered as an unknown one."""
        rid, section = parse_read_result(args)
        caller = call.caller
        try:
            text, n = self.sections.store.read((caller.session_id, caller.credential), rid, section)
        except SectionError as e:
            call.log("tool_error", "NoSuchResult")
            return error_result(str(e))
        call.log("ok", result=(len(text), None))
        result = text_result(text)
        if section < n:
            result["content"].append({"type": "text", "text": f"[mcpctl] Section {section} of {n} of result "
                                      f"{rid}; next: read_result(result_id=\"{rid}\", section={section + 1})."})
        else:
            result["content"].append({"type": "text", "text": f"[mcpctl] Section {n} of {n}: the last of result {rid}."})
        return result

    async def _ask(self, call: Call, view: View, args: Any) -> dict[str, Any]:
        """`ask(question, top_k)`: passages of the servers this view admits, answered by the
        caller's own model when it lends one (`gateway.knowledge`)."""
        from mcpctl.ask.answer import text

        question, top_k = parse_ask(args, self.views.project.ask.top_k)
        if self.knowledge is None:      # pragma: no cover - not in view.builtins then
            return error_result("ask is not enabled in this project (ask.enabled: false)")
        payload = await self.knowledge.ask(call.caller.peer, question, top_k, view.servers)
        call.log("ok", query=question if self.views.project.search.record_queries else None)
        return structured_result(payload, text(payload))

    async def _search(self, call: Call, view: View, args: Any) -> dict[str, Any]:
        if self.views.search is None:      # pragma: no cover - not in view.builtins then
            return error_result("search_tools is disabled in this project (search.enabled: false)")
        query, top_k = parse_arguments(args if args is not None else {}, self.views.project.search.top_k)
        payload = await self.views.search.search(self.views.catalogue.version, view, query, top_k)
        call.log("ok", query=query if self.views.project.search.record_queries else None)
        return search_result(payload)

    async def _begin_session(self, call: Call, args: Any) -> dict[str, Any]:
        """The session gate: brief the session for its task, then ungate it (it alone)."""
        task = parse_begin_session(args if args is not None else {})
        caller = call.caller
        was_gated = self.views.sessions.begin(caller.session_id)
        view = self.views.view_for(caller)
        matches: list[dict[str, Any]] = []
        if self.views.search is not None:
            found = await self.views.search.search(self.views.catalogue.version, view, task, self.views.project.search.top_k)
            matches = found["tools"]
        favourites = [{"name": f.name or f.canonical_id, "description": f.description}
                      for f in view.favourites if f.listed]
        gate_text = self.views.project.gate.instructions or ""
        payload = {"instructions": gate_text, "favourites": favourites, "matches": matches}
        lines = [gate_text] if gate_text else []
        if favourites:
            lines.append("Favourite tools (prefer these):")
            lines += [f"- {f['name']}: {_first_line(f['description'])}" for f in favourites]
        if matches:
            lines.append(f"Best matches for the task {task!r}:")
            lines += [f"- {m['name']}: {_first_line(m['description'])}" for m in matches]
        lines.append("Your full tool list is now available." if was_gated else "This session had already begun.")
        call.log("ok", query=task if self.views.project.search.record_queries else None)
        if was_gated:
            await self.views.sessions.notify({"tools"}, only=caller.session_id)
        return structured_result(payload, "\n".join(lines))

    async def _call_by_name(self, call: Call, view: View, args: Any) -> dict[str, Any]:
        """`call_tool(name, arguments)`: the same pipeline as a direct call, one log row under the
        name the agent gave."""
        name, tool_args = parse_call_tool(args)
        if name in view.builtins or name == CALL_TOOL:
            raise BuiltinError(f"call_tool calls the project's tools; call {name} directly")
        hit = view.resolve(name)
        if hit is None and not self.pool.settled:
            hit = await self._resolve_later(call.caller, name)
        if hit is None:
            call.named(_bounded(name), None).log("tool_error", "UnknownTool")
            return error_result(f"no tool named {_bounded(name)!r} in this project; call search_tools to find one")
        if isinstance(hit, Refusal):
            call.named(name, hit_id(view, name)).log(hit.outcome, hit.error_class)
            return error_result(hit.message)
        return await self._relay_call(call, name, hit.tool, tool_args, None)




def _bounded(name: Any) -> str:
    """A caller-supplied name as it may appear in the log and in messages: printable, bounded."""
    text = name if isinstance(name, str) else repr(name)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _MAX_LOGGED_NAME else text[:_MAX_LOGGED_NAME] + "…"


def _first_line(text: str, width: int = 160) -> str:
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def hit_id(view: View, name: str) -> str | None:
    """The canonical id a refused name stands for (the log keeps it), if any."""
    hit = view.table.lookup(name)
    return hit[1].canonical_id if hit is not None else None
