"""An OpenAI-compatible chat-completions client with tool calling (httpx2; no `openai` package).

`POST {endpoint}/chat/completions` with `model`, `messages`, `tools` (`{"type": "function",
"function": {name, description, parameters}}`), `tool_choice: "auto"`, `temperature` and `seed`:
what Ollama, vLLM, llama.cpp's server and hosted APIs all accept. The endpoint is the base URL
that ends in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.errors import MCPCtlError

READ_TIMEOUT_S: Final = 600.0      # a CPU model with a long tool list can take minutes per turn


class EndpointError(MCPCtlError):
    """The model endpoint refused or failed a request. `fatal`: no later request can do better
    (unreachable, or a 4xx such as an unknown model): the run stops; otherwise (5xx, a timeout)
    the task is recorded as an error and the run goes on."""

    def __init__(self, message: str, *, hint: str | None = None, fatal: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.fatal = fatal


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


class ChatClient:
    def __init__(self, endpoint: str, model: str, api_key: str | None = None) -> None:
        import httpx2

        self.endpoint = endpoint.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=READ_TIMEOUT_S))

    async def check(self) -> None:
        """Fail before any gateway starts when the endpoint cannot be reached at all
        (`GET {endpoint}/models`; an endpoint without that route is fine)."""
        import httpx2

        try:
            await self._http.get(f"{self.endpoint}/models", timeout=30.0)
        except httpx2.HTTPError as e:
            raise EndpointError(f"--endpoint {self.endpoint}: {type(e).__name__}: {e}", fatal=True,
                                hint="is the model server running? the endpoint is its base URL ending in /v1") from e

    async def aclose(self) -> None:
        await self._http.aclose()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       temperature: float, seed: int | None) -> Reply:
        import httpx2

        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if seed is not None:
            body["seed"] = seed
        url = f"{self.endpoint}/chat/completions"
        try:
            r = await self._http.post(url, json=body)
        except httpx2.TimeoutException as e:
            raise EndpointError(f"--endpoint {self.endpoint}: no answer within {READ_TIMEOUT_S:.0f} s ({e})") from e
        except httpx2.HTTPError as e:
            raise EndpointError(f"--endpoint {self.endpoint}: {type(e).__name__}: {e}", fatal=True,
                                hint="is the model server running? the endpoint is its base URL ending in /v1") from e
        if r.status_code >= 400:
            raise EndpointError(f"--endpoint {self.endpoint}: {url} answered {r.status_code}: {r.text[:300]}",
                                fatal=r.status_code < 500 and r.status_code != 429,
                                hint=f"check --model {self.model} is served there and supports tool calling")
        try:
            data = r.json()
            message = dict(data["choices"][0]["message"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise EndpointError(f"--endpoint {self.endpoint}: not a chat-completions answer: {r.text[:300]}",
                                hint="the endpoint must be OpenAI-compatible (POST /chat/completions)") from e
        usage = data.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        message.setdefault("content", None)
        message["role"] = "assistant"
        return Reply(message, _parse_calls(message), int(prompt) if isinstance(prompt, int) else None)
