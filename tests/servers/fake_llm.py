"""A stand-in for a model: an OpenAI-compatible `/v1/chat/completions` server with tool calling.

    python tests/servers/fake_llm.py [--port 0] [--host 127.0.0.1]

Prints its base URL (`http://127.0.0.1:PORT/v1`) as the first line on stdout once it is
listening (the port is bound before it is printed, so a caller that asked for port 0 holds a real
one), then serves until killed. Not a model: deterministic scripted policies, chosen by the
request's `model`, so the bake-off's whole path (the real gateway, the real tool list, the real
instructions) can be tested and demonstrated without one.

- `first-listed`: calls the first listed tool it has not called yet in this conversation (so
  it wanders through the list in listing order until the harness stops it).
- `follow-instructions`: reads the system message. When it says PREFER favourites and names
  them ("Favourites: a, b."), it first calls the named favourite sharing the most words with the
  task, if it shares at least two (FAVOURITE_MATCH); when it says to call search_tools before
  anything else (deferred), it searches and calls the results in rank order; otherwise (and on
  later turns) it calls the listed tool it has not called yet with the most words in common with
  the task (ties: the first listed).
- `search-first`: calls `search_tools` with the task, then each result in rank order (directly
  when listed, else through `call_tool`).

Broken endpoints, for the bake-off's own failures (also chosen by `model`): `many-calls` answers
every turn with 500 calls of the first listed tool; `hang` never answers; `html` answers a web
page (200, text/html); `error-500` answers 500; `bad-json` answers 200 with JSON cut short.

Arguments are made from the tool's input schema: every required property gets a value of its
type (strings get the task text). When a policy has nothing left to call it answers in text.
`usage.prompt_tokens` is a chars/4 estimate of the request (messages + tools).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import time
from typing import Any

STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "at", "by", "from", "is", "are", "be", "it", "this", "that", "my", "me", "i", "you", "your", "what", "which", "who", "how", "do", "does", "can", "could", "would", "should", "please", "want", "need", "some", "any", "all", "into", "about", "as", "if", "then", "there", "their", "them", "its", "was", "were", "will", "just", "so", "not", "no"])
WORD = re.compile(r"[a-z0-9]+")
FAVOURITES = re.compile(r"Favourites: ([^\n]*?)\.(?:\s|$)")
SEARCH_FIRST_HINT = "Before calling anything else, call search_tools"
FAVOURITE_MATCH = 2           # words a favourite must share with the task to "match" it
POLICIES = ("first-listed", "follow-instructions", "search-first", "many-calls")
BROKEN = ("hang", "html", "error-500", "bad-json")


def words(text: str) -> set[str]:
    out = set()
    for w in WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()):
        if w in STOP or len(w) < 2:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def overlap(task: set[str], fn: dict[str, Any]) -> int:
    return len(task & words(f"{fn.get('name', '')} {fn.get('description') or ''}"))


def arguments_for(schema: dict[str, Any], task: str) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (props.get(name) or {}).get("type", "string")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        out[name] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(kind, task)
    return out


class Conversation:
    """What a policy knows: the system text, the task, the tools, and what it has called."""

    def __init__(self, body: dict[str, Any]) -> None:
        msgs: list[dict[str, Any]] = body.get("messages") or []
        self.system = "\n".join(str(m.get("content") or "") for m in msgs if m.get("role") == "system")
        users = [str(m.get("content") or "") for m in msgs if m.get("role") == "user"]
        self.task = users[0] if users else ""
        self.task_words = words(self.task)
        self.tools: list[dict[str, Any]] = [t["function"] for t in body.get("tools") or [] if t.get("function")]
        self.listed = {f["name"]: f for f in self.tools}
        self.called: list[tuple[str, dict[str, Any]]] = []
        self.results: list[str] = []
        for m in msgs:
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                self.called.append((fn.get("name", ""), args if isinstance(args, dict) else {}))
            if m.get("role") == "tool":
                self.results.append(str(m.get("content") or ""))

    def called_names(self) -> set[str]:
        """Every tool called so far, through call_tool too."""
        out = set()
        for name, args in self.called:
            out.add(str(args.get("name")) if name == "call_tool" and args.get("name") else name)
        return out

    def call(self, name: str) -> tuple[str, dict[str, Any]]:
        fn = self.listed.get(name)
        if fn is not None:
            return name, arguments_for(fn.get("parameters") or {}, self.task)
        return "call_tool", {"name": name, "arguments": {}}

    def best_overlap(self, candidates: list[dict[str, Any]], *, minimum: int = 0) -> str | None:
        done = self.called_names()
        best: tuple[int, str] | None = None
        for fn in candidates:
            if fn["name"] in done or fn["name"] in ("search_tools", "call_tool"):
                continue
            score = overlap(self.task_words, fn)
            if score >= minimum and (best is None or score > best[0]):
                best = (score, fn["name"])
        return best[1] if best else None

    def search_hits(self) -> list[str] | None:
        """Tool names from the latest search_tools result, or None when nothing was searched."""
        for (name, _), result in zip(reversed(self.called), reversed(self.results), strict=False):
            if name == "search_tools":
                try:
                    payload = json.loads(result)
                except ValueError:
                    return []
                return [str(h.get("name")) for h in payload.get("tools") or [] if isinstance(h, dict)]
        return None


def first_listed(c: Conversation) -> tuple[str, dict[str, Any]] | None:
    done = c.called_names()
    for fn in c.tools:
        if fn["name"] not in done:
            if fn["name"] == "search_tools":
                return "search_tools", {"query": c.task}
            return c.call(fn["name"])
    return None


def search_first(c: Conversation) -> tuple[str, dict[str, Any]] | None:
    hits = c.search_hits()
    if hits is None:
        return ("search_tools", {"query": c.task}) if "search_tools" in c.listed else None
    done = c.called_names()
    for name in hits:
        if name not in done:
            return c.call(name)
    return None


def follow_instructions(c: Conversation) -> tuple[str, dict[str, Any]] | None:
    if SEARCH_FIRST_HINT in c.system and "search_tools" in c.listed:
        return search_first(c)
    if "PREFER" in c.system and not c.called:
        m = FAVOURITES.search(c.system)
        favs = {n.strip() for n in m.group(1).split(",")} if m else set()
        pick = c.best_overlap([f for f in c.tools if f["name"] in favs], minimum=FAVOURITE_MATCH)
        if pick:
            return c.call(pick)
    pick = c.best_overlap(c.tools)
    return c.call(pick) if pick else None


def respond(body: dict[str, Any]) -> dict[str, Any]:
    policy = str(body.get("model") or "")
    if policy not in POLICIES:
        raise ValueError(f"unknown model {policy!r}: the stand-in serves {', '.join(POLICIES)}")
    c = Conversation(body)
    prompt = (len(json.dumps(body.get("messages") or [])) + len(json.dumps(body.get("tools") or [])) + 3) // 4
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if policy == "many-calls":
        name, args = c.call(next(f["name"] for f in c.tools if f["name"] not in ("search_tools", "call_tool")))
        message["tool_calls"] = [{"id": f"call_{len(c.called) + i}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}} for i in range(500)]
        finish = "tool_calls"
        step = None
    else:
        step = {"first-listed": first_listed, "follow-instructions": follow_instructions,
                "search-first": search_first}[policy](c)
        finish = "stop"
    if step is None and finish == "stop":
        message["content"] = "I have nothing more to try."
    elif step is not None:
        name, args = step
        message["tool_calls"] = [{"id": f"call_{len(c.called) + 1}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}]
        finish = "tool_calls"
    return {"id": f"chatcmpl-{len(c.called)}", "object": "chat.completion", "created": int(time.time()),
            "model": policy, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}}


def app() -> Any:
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    async def completions(request: Request) -> Response:
        body = await request.json()
        broken = body.get("model") if isinstance(body, dict) else None
        if broken == "hang":
            await anyio.sleep_forever()
        if broken == "html":
            return HTMLResponse("<!doctype html><html><head><title>Welcome</title></head><body><h1>It works!</h1>"
                                "</body></html>")
        if broken == "error-500":
            return Response("Internal Server Error", status_code=500)
        if broken == "bad-json":
            return Response('{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assis',
                            media_type="application/json")
        try:
            return JSONResponse(respond(body))
        except ValueError as e:
            return JSONResponse({"error": {"message": str(e), "type": "invalid_request_error"}}, status_code=400)

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": p, "object": "model"} for p in POLICIES + BROKEN]})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/v1/models", models, methods=["GET"])])


def main() -> None:
    import uvicorn

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    opts = p.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((opts.host, opts.port))
    sock.listen(64)
    print(f"http://{opts.host}:{sock.getsockname()[1]}/v1", flush=True)
    config = uvicorn.Config(app(), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
