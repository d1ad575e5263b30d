"""mcpctl's own tools, served at top level next to the upstream catalogue (no `mcp` import).

- `search_tools(query, top_k)` ranks the project's visible upstream tools (never the built-ins)
  for an intent and returns their real schemas under the names the agent can call.
- `begin_session(task)` (the session gate) returns the project's instructions, its favourites
  and the best matches for the task, then ungates the calling session.
- `call_tool(name, arguments)` (the deferred presentation) calls any tool the session may use by
  its presented or canonical name, through the same pipeline as a direct call.
- `read_result(result_id, section)` (results in sections, `presentation.sections`) returns a section
  of a result that was cut, to the session and credential that made the call.
- `ask(question, top_k)` (`mcpctl.ask`, when the project enables it) answers from the passages of
  the servers' text resources, with the calling client's model when it lends one.

Their definitions and argument checks live here; the presentation pipeline (`view`) decides
which of them a session sees, and the gateway (`front`) runs them.
"""

from __future__ import annotations

import json
from typing import Any, Final

SEARCH_TOOL: Final = "search_tools"
BEGIN_SESSION: Final = "begin_session"
CALL_TOOL: Final = "call_tool"
READ_RESULT: Final = "read_result"
ASK: Final = "ask"
BUILTIN_NAMES: Final = frozenset({SEARCH_TOOL, BEGIN_SESSION, CALL_TOOL, READ_RESULT, ASK})
SEARCH_CANONICAL_ID: Final = "mcpctl/search_tools"
BEGIN_SESSION_CANONICAL_ID: Final = "mcpctl/begin_session"
CALL_TOOL_CANONICAL_ID: Final = "mcpctl/call_tool"
READ_RESULT_CANONICAL_ID: Final = "mcpctl/read_result"
ASK_CANONICAL_ID: Final = "mcpctl/ask"
MAX_TOP_K: Final = 20
ALWAYS_LOAD: Final = "anthropic/alwaysLoad"   # Claude Code keeps these loaded when it defers tools
GATEWAY_META: Final = frozenset({ALWAYS_LOAD})  # tool _meta keys the gateway sets, never taken from upstreams

_READ_ONLY: Final = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                     "openWorldHint": False}
_TOOL_HIT: Final = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                   "inputSchema": {"type": "object"}, "score": {"type": "number"}},
    "required": ["name", "inputSchema", "score"],
}


def search_tool_definition(default_top_k: int, *, deferred: bool = False) -> dict[str, Any]:
    """The wire-format definition of `search_tools`."""
    how = ("then call the returned `name` through call_tool" if deferred
           else "call the returned `name` directly")
    return {
        "name": SEARCH_TOOL,
        "title": "Search tools",
        "description": (
            "Search this project's tool catalogue by intent. Returns the best-matching tools with "
            f"their names, descriptions and input schemas, ranked; {how}. "
            "Use it when no tool in your list obviously fits the task."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": default_top_k,
                          "description": f"How many tools to return (1-{MAX_TOP_K})."},
            },
            "required": ["query"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"tools": {"type": "array", "items": _TOOL_HIT}, "total_searched": {"type": "integer"}},
            "required": ["tools", "total_searched"],
        },
        "annotations": {"title": "Search tools", **_READ_ONLY},
        "_meta": {ALWAYS_LOAD: True},
    }


def begin_session_definition() -> dict[str, Any]:
    return {
        "name": BEGIN_SESSION,
        "title": "Begin session",
        "description": (
            "Start here: call this first, with your task in a sentence. Returns this project's "
            "instructions, its favourite tools and the tools that best match the task, and then "
            "unlocks your full tool list."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"task": {"type": "string", "description": "What you are about to do."}},
            "required": ["task"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "instructions": {"type": "string"},
                "favourites": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
                    "required": ["name"]}},
                "matches": {"type": "array", "items": _TOOL_HIT},
            },
            "required": ["instructions", "favourites", "matches"],
        },
        "annotations": {"title": "Begin session", "readOnlyHint": True, "destructiveHint": False,
                        "idempotentHint": True, "openWorldHint": False},
        "_meta": {ALWAYS_LOAD: True},
    }


def call_tool_definition() -> dict[str, Any]:
    return {
        "name": CALL_TOOL,
        "title": "Call a tool",
        "description": (
            "Call any tool of this project by name: a name returned by search_tools (or a listed "
            "name, or a canonical server/tool id), with its arguments as an object matching the "
            "tool's input schema. Returns that tool's result."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools returned it."},
                "arguments": {"type": "object", "description": "The tool's arguments."},
            },
            "required": ["name"],
        },
        "annotations": {"title": "Call a tool", "readOnlyHint": False, "destructiveHint": True,
                        "idempotentHint": False, "openWorldHint": True},
        "_meta": {ALWAYS_LOAD: True},
    }


def read_result_definition(*, always_load: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": READ_RESULT,
        "title": "Read a result's section",
        "description": (
            "Read one section of a tool result that was too long and was cut: the result_id and the "
            "number of sections are in the note that ended the cut result. Sections are numbered from 1; "
            "section 1 is the part already shown."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "result_id": {"type": "string", "description": "The result_id the note gave."},
                "section": {"type": "integer", "minimum": 1, "description": "Which section (from 1)."},
            },
            "required": ["result_id", "section"],
        },
        "annotations": {"title": "Read a result's section", **_READ_ONLY},
    }
    if always_load:
        item["_meta"] = {ALWAYS_LOAD: True}
    return item


def ask_definition(default_top_k: int, *, always_load: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": ASK,
        "title": "Ask the project's knowledge",
        "description": (
            "Ask a question of what this project's servers know (their notes, documents and other "
            "resources). Returns the passages that best answer it, each with the resource URI to cite, "
            "and, when the project has a model or your client lends one, an answer written from those passages alone."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in a sentence."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": default_top_k,
                          "description": f"How many passages to draw on (1-{MAX_TOP_K})."},
            },
            "required": ["question"],
        },
        "annotations": {"title": "Ask the project's knowledge", **_READ_ONLY},
    }
    if always_load:
        item["_meta"] = {ALWAYS_LOAD: True}
    return item


class BuiltinError(ValueError):
    """Bad arguments to a built-in; the message is shown to the model."""


def parse_arguments(arguments: Any, default_top_k: int) -> tuple[str, int]:
    """`search_tools` arguments: (query, top_k)."""
    if not isinstance(arguments, dict):
        raise BuiltinError("search_tools needs arguments {\"query\": string, \"top_k\": integer}")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BuiltinError("search_tools: 'query' must be a non-empty string describing what you want to do")
    top_k = arguments.get("top_k", default_top_k)
    if top_k is None:
        top_k = default_top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise BuiltinError(f"search_tools: 'top_k' must be an integer from 1 to {MAX_TOP_K} (got {top_k!r})")
    return query.strip(), top_k


def parse_begin_session(arguments: Any) -> str:
    task = arguments.get("task") if isinstance(arguments, dict) else None
    if not isinstance(task, str) or not task.strip():
        raise BuiltinError("begin_session: 'task' must be a non-empty string saying what you are about to do")
    return task.strip()


def parse_call_tool(arguments: Any) -> tuple[str, dict[str, Any] | None]:
    if not isinstance(arguments, dict):
        raise BuiltinError("call_tool needs arguments {\"name\": string, \"arguments\": object}")
    name, args = arguments.get("name"), arguments.get("arguments")
    if not isinstance(name, str) or not name.strip():
        raise BuiltinError("call_tool: 'name' must be the name of a tool (as search_tools returned it)")
    if args is not None and not isinstance(args, dict):
        raise BuiltinError(f"call_tool: 'arguments' must be an object, got {type(args).__name__}")
    return name.strip(), args


def parse_read_result(arguments: Any) -> tuple[str, int]:
    rid = arguments.get("result_id") if isinstance(arguments, dict) else None
    section = arguments.get("section", 1) if isinstance(arguments, dict) else None
    if not isinstance(rid, str) or not rid.strip():
        raise BuiltinError("read_result: 'result_id' must be the result_id the cut result's note gave")
    if isinstance(section, bool) or not isinstance(section, int) or section < 1:
        raise BuiltinError(f"read_result: 'section' must be an integer from 1 (got {section!r})")
    return rid.strip(), section


def parse_ask(arguments: Any, default_top_k: int) -> tuple[str, int]:
    """`ask` arguments: (question, top_k)."""
    question = arguments.get("question") if isinstance(arguments, dict) else None
    if not isinstance(question, str) or not question.strip():
        raise BuiltinError("ask: 'question' must be a non-empty string: the question, in a sentence")
    top_k = arguments.get("top_k", default_top_k) if isinstance(arguments, dict) else default_top_k
    if top_k is None:
        top_k = default_top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise BuiltinError(f"ask: 'top_k' must be an integer from 1 to {MAX_TOP_K} (got {top_k!r})")
    return question.strip(), top_k


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def structured_result(payload: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text if text is not None else json.dumps(payload, ensure_ascii=False)}],
            "structuredContent": payload, "isError": False}


class SearchPayload(dict[str, Any]):
    """A search_tools payload (`{tools, total_searched}`, exactly) that may carry a `note` for
    people and agents: said in a second text block, never in the structured result."""

    note: str | None = None


def search_result(payload: dict[str, Any]) -> dict[str, Any]:
    """The search_tools result: the JSON text and the structured payload; when the search found
    nothing, a second text block says so and what to do (`SearchPayload.note`)."""
    plain = dict(payload)
    result = structured_result(plain)
    note = getattr(payload, "note", None)
    if note:
        result["content"].append({"type": "text", "text": note})
    return result


def no_match_text(query: str, total: int, servers: list[str], *, deferred: bool, why: str | None) -> str:
    """What to tell an agent (or a person) when a search finds nothing: that it did, why (keyword
    search only, when semantic search is not there), and how to see the tools anyway."""
    if not total:
        return ("This project has no tools to search yet: its servers are still starting, down, or "
                "all their tools are disabled. Try again shortly.")
    first = f"No tool matched {query!r} among the {total} tools of this project."
    if why:
        first += (f" Search here is by keyword only ({why}): a tool is found when its name, "
                  "description or parameters share a word with the query.")
    lines = [first, "Try again with the words a tool would use for the thing you want to act on "
                    "(a file, a note, a time zone, a URL...)."]
    if servers:
        shown = ", ".join(servers[:20]) + (", …" if len(servers) > 20 else "")
        lines.append(f"To list a server's tools, search for the server's name (top_k up to {MAX_TOP_K}); "
                     f"the servers are: {shown}.")
    if deferred:
        lines.append("Call a tool it returns through call_tool.")
    else:
        lines.append("Every tool of this project is also in your tool list (tools/list).")
    return "\n".join(lines)


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
