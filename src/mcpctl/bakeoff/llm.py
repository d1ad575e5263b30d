"""The bake-off's OpenAI-compatible chat-completions client: `mcpctl.chat`'s endpoint (the one
`ask` uses too) with tool calling.

`POST {endpoint}/chat/completions` with `model`, `messages`, `tools` (`{"type": "function",
"function": {name, description, parameters}}`), `tool_choice: "auto"`, `temperature` and `seed`:
what Ollama, vLLM, llama.cpp's server and hosted APIs all accept. The endpoint is the base URL
that ends in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.chat import UNREACHABLE_HINT, ChatEndpoint, Waiting
from mcpctl.chat import EndpointError as EndpointError

READ_TIMEOUT_S: Final = 600.0      # a CPU model with a long tool list can take minutes per turn
HEARTBEAT_S: Final = 30.0          # a request still waiting is said this often (on stderr)
FAILURES_IN_ROW: Final = 3         # failed requests in a row (no answer between) that stop the run
TIMEOUTS_IN_ROW: Final = 2         # ... of which timeouts: each costs the whole request timeout


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str


@dataclass(frozen=True)
class Reply:
    message: dict[str, Any]          # the assistant message, to append to the conversation as is
    calls: list[ToolCall]
    prompt_tokens: int | None        # as the endpoint reported it (usage.prompt_tokens)


def function_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MCP tool definitions (wire dicts) as OpenAI function tools: name, description, schema."""
    out = []
    for tool in tools:
        fn: dict[str, Any] = {"name": tool["name"], "parameters": tool.get("inputSchema") or {"type": "object"}}
        if tool.get("description"):
            fn["description"] = tool["description"]
        out.append({"type": "function", "function": fn})
    return out


def _parse_calls(message: dict[str, Any]) -> list[ToolCall]:
    calls = []
    for n, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        raw = fn.get("arguments")
        if isinstance(raw, dict):                 # some servers send an object, not a JSON string
            args, raw = raw, json.dumps(raw)
        else:
            raw = raw if isinstance(raw, str) else ""
            try:
                parsed = json.loads(raw) if raw.strip() else {}
            except ValueError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else {}
        calls.append(ToolCall(str(call.get("id") or f"call_{n}"), str(fn.get("name") or ""), args, raw))
    return calls


class ChatClient(ChatEndpoint):
    """The bake-off's endpoint (`mcpctl.chat`) with tool calling, that counts the requests failed
    in a row: past FAILURES_IN_ROW (or TIMEOUTS_IN_ROW timeouts) the run stops."""

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *,
                 timeout: float = READ_TIMEOUT_S) -> None:
        super().__init__(endpoint, model, api_key, timeout=timeout)
        self.failures = 0               # failed requests since the last answer

    def heartbeat(self) -> float:
        return HEARTBEAT_S              # (this module's, read when asked: a test shortens it)

    def status_hint(self) -> str:
        return f"check --model {self.model} is served there and supports tool calling"

    async def check(self) -> None:
        """Fail before any gateway starts when the endpoint cannot be reached at all
        (`GET {endpoint}/models`; an endpoint without that route is fine)."""
        import httpx2

        try:
            await self._http.get(f"{self.endpoint}/models", timeout=30.0)
        except httpx2.HTTPError as e:
            raise EndpointError(f"{self.where()}: {type(e).__name__}: {e}", fatal=True, hint=UNREACHABLE_HINT) from e

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       temperature: float, seed: int | None, waiting: Waiting | None = None) -> Reply:
        """One chat completion; `waiting` hears how long a slow one has waited, every HEARTBEAT_S."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if seed is not None:
            body["seed"] = seed
        try:
            reply = self._reply(*self.message(await self.post(body, waiting)))
        except EndpointError as e:
            raise self._failed(e) from e.__cause__
        self.answered, self.failures, self.timeouts = True, 0, 0
        return reply

    @staticmethod
    def _reply(message: dict[str, Any], data: dict[str, Any]) -> Reply:
        usage = data.get("usage") or {}
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        message.setdefault("content", None)
        message["role"] = "assistant"
        return Reply(message, _parse_calls(message), int(prompt) if isinstance(prompt, int) else None)

    def _failed(self, e: EndpointError) -> EndpointError:
        """`e`, made fatal when the endpoint has failed too often in a row to go on."""
        self.failures += 1
        if not e.fatal and (self.failures >= FAILURES_IN_ROW or self.timeouts >= TIMEOUTS_IN_ROW):
            e.fatal = True
            e.message = f"{e.message} ({self.failures} request(s) in a row failed: the run stops)"
        return e
