"""An OpenAI-compatible chat-completions client with tool calling (httpx2; no `openai` package).

`POST {endpoint}/chat/completions` with `model`, `messages`, `tools` (`{"type": "function",
"function": {name, description, parameters}}`), `tool_choice: "auto"`, `temperature` and `seed`:
what Ollama, vLLM, llama.cpp's server and hosted APIs all accept. The endpoint is the base URL
that ends in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.errors import UpstreamError

READ_TIMEOUT_S: Final = 600.0      # a CPU model with a long tool list can take minutes per turn
HEARTBEAT_S: Final = 30.0          # a request still waiting is said this often (on stderr)
FAILURES_IN_ROW: Final = 3         # failed requests in a row (no answer between) that stop the run
TIMEOUTS_IN_ROW: Final = 2         # ... of which timeouts: each costs the whole request timeout

Waiting = Callable[[float], None]   # told the seconds a request has waited, every HEARTBEAT_S


class EndpointError(UpstreamError):
    """The model endpoint refused or failed a request. `fatal`: no later request can do better
    (unreachable, a 4xx such as an unknown model, an answer that is not chat completions before
    any was, or FAILURES_IN_ROW failures without an answer between): the run stops; otherwise (a
    5xx, a timeout, one malformed answer among good ones) the task is recorded as an error and the
    run goes on."""

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
    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *,
                 timeout: float = READ_TIMEOUT_S) -> None:
        import httpx2

        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.answered = False           # a well-formed answer came back at least once
        self.failures = 0               # failed requests since the last answer
        self.timeouts = 0               # ... of which timeouts
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(min(30.0, timeout), read=timeout))

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
                       temperature: float, seed: int | None, waiting: Waiting | None = None) -> Reply:
        """One chat completion; `waiting` hears how long a slow one has waited, every HEARTBEAT_S."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if seed is not None:
            body["seed"] = seed
        try:
            reply = self._reply(await self._post(body, waiting))
        except EndpointError as e:
            raise self._failed(e) from e.__cause__
        self.answered, self.failures, self.timeouts = True, 0, 0
        return reply

    async def _post(self, body: dict[str, Any], waiting: Waiting | None) -> Any:
        import httpx2

        url = f"{self.endpoint}/chat/completions"
        started = time.monotonic()
        request = asyncio.ensure_future(self._http.post(url, json=body))
        try:
            while not request.done():
                await asyncio.wait({request}, timeout=HEARTBEAT_S)
                if not request.done() and waiting is not None:
                    waiting(time.monotonic() - started)
            r = request.result()
        except httpx2.TimeoutException as e:
            self.timeouts += 1
            raise EndpointError(f"--endpoint {self.endpoint}: no answer within {self.timeout:g} s "
                                f"(--request-timeout; {type(e).__name__})") from e
        except httpx2.HTTPError as e:
            raise EndpointError(f"--endpoint {self.endpoint}: {type(e).__name__}: {e}", fatal=True,
                                hint="is the model server running? the endpoint is its base URL ending in /v1") from e
        finally:
            request.cancel()
        if r.status_code >= 400:
            raise EndpointError(f"--endpoint {self.endpoint}: {url} answered {r.status_code}: {_excerpt(r.text)}",
                                fatal=r.status_code < 500 and r.status_code != 429,
                                hint=f"check --model {self.model} is served there and supports tool calling")
        return r

    def _reply(self, r: Any) -> Reply:
        try:
            data = r.json()
            message = dict(data["choices"][0]["message"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            kind = r.headers.get("content-type", "no content type").split(";")[0]
            raise EndpointError(f"--endpoint {self.endpoint}: not a chat-completions answer ({r.status_code}, "
                                f"{kind}): {_excerpt(r.text)}", fatal=not self.answered,
                                hint="the endpoint must be OpenAI-compatible (POST /chat/completions): its base "
                                "URL ends in /v1") from e
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


def _excerpt(text: str, limit: int = 300) -> str:
    """The start of an answer's text on one line (an HTML page's tags and all)."""
    flat = " ".join(text.split())
    return flat[:limit] + ("…" if len(flat) > limit else "")
