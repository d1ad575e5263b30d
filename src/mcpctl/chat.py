"""An OpenAI-compatible chat-completions endpoint (httpx2; no `openai` package), the one client
of both `mcpctl bakeoff` (`bakeoff.llm`, which adds tool calling) and `ask`'s project model.

`POST {endpoint}/chat/completions` with `model`, `messages` and what the caller adds: what
Ollama, vLLM, llama.cpp's server and hosted APIs all accept. The endpoint is the base URL that
ends in `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama). Every failure (unreachable, a 4xx
or 5xx, no answer in time, an answer that is not chat completions) is an `EndpointError` naming
the endpoint the way its user wrote it (`--endpoint`, or `ask.model.endpoint`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Final

from mcpctl.errors import UpstreamError

HEARTBEAT_S: Final = 30.0          # a request still waiting is said this often (to `waiting`)
UNREACHABLE_HINT: Final = "is the model server running? the endpoint is its base URL ending in /v1"

Waiting = Callable[[float], None]   # told the seconds a request has waited, every HEARTBEAT_S


class EndpointError(UpstreamError):
    """The model endpoint refused or failed a request. `fatal`: no later request can do better
    (unreachable, a 4xx such as an unknown model, an answer that is not chat completions before
    any was); otherwise (a 5xx, a 429, a timeout, one malformed answer among good ones) a later
    request may succeed. The bake-off stops on a fatal one; `ask` says either in its note."""

    def __init__(self, message: str, *, hint: str | None = None, fatal: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.fatal = fatal


class ChatEndpoint:
    """One endpoint and model, with its bearer key. `timeout` bounds each request as a whole
    (however slowly the answer trickles in); `named` and `timeout_named` are how errors name
    the endpoint and that bound for the person who set them."""

    def __init__(self, endpoint: str, model: str, api_key: str | None = None, *, timeout: float,
                 named: str = "--endpoint", timeout_named: str = "--request-timeout") -> None:
        import httpx2

        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.named = named
        self.timeout_named = timeout_named
        self.answered = False           # a well-formed answer came back at least once
        self.timeouts = 0               # requests that got no answer in time since the last answer
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(min(30.0, timeout), read=timeout))

    async def aclose(self) -> None:
        await self._http.aclose()

    def where(self) -> str:
        """The endpoint as its errors begin: `--endpoint http://…/v1`."""
        return f"{self.named} {self.endpoint}"

    def heartbeat(self) -> float:
        """How often a request still waiting is told to `waiting`, in seconds."""
        return HEARTBEAT_S

    def status_hint(self) -> str:
        """What to check when the endpoint refuses a request (a 4xx or 5xx)."""
        return f"check the model {self.model!r} is served there"

    async def post(self, body: dict[str, Any], waiting: Waiting | None = None) -> Any:
        """`body` posted to `/chat/completions`: the response, whatever its JSON; EndpointError when
        there is none in time, none at all, or its status is 400 or above."""
        import httpx2

        url = f"{self.endpoint}/chat/completions"
        started = time.monotonic()
        request = asyncio.ensure_future(self._http.post(url, json=body))
        try:
            while not request.done():
                left = self.timeout - (time.monotonic() - started)
                if left <= 0:
                    raise httpx2.TimeoutException(f"no answer within {self.timeout:g} s")
                await asyncio.wait({request}, timeout=min(self.heartbeat(), left))
                if not request.done() and waiting is not None:
                    waiting(time.monotonic() - started)
            r = request.result()
        except httpx2.TimeoutException as e:
            self.timeouts += 1
            raise EndpointError(f"{self.where()}: no answer within {self.timeout:g} s "
                                f"({self.timeout_named}; {type(e).__name__})") from e
        except httpx2.HTTPError as e:
            raise EndpointError(f"{self.where()}: {type(e).__name__}: {e}", fatal=True, hint=UNREACHABLE_HINT) from e
        finally:
            request.cancel()
        if r.status_code >= 400:
            raise EndpointError(f"{self.where()}: {url} answered {r.status_code}: {excerpt(r.text)}",
                                fatal=r.status_code < 500 and r.status_code != 429, hint=self.status_hint())
        return r

    def message(self, r: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The first choice's message of a chat-completions response, and the whole answer's JSON;
        EndpointError when the response is not chat completions."""
        try:
            data = r.json()
            message = dict(data["choices"][0]["message"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            kind = r.headers.get("content-type", "no content type").split(";")[0]
            raise EndpointError(f"{self.where()}: not a chat-completions answer ({r.status_code}, "
                                f"{kind}): {excerpt(r.text)}", fatal=not self.answered,
                                hint="the endpoint must be OpenAI-compatible (POST /chat/completions): its base "
                                "URL ends in /v1") from e
        return message, data

    async def answer(self, system: str, user: str, *, max_tokens: int) -> str:
        """The model's text answer to one system and one user message, at temperature 0 (no tools):
        what `ask` asks. EndpointError when the request fails or the answer has no text."""
        body = {"model": self.model, "messages": [{"role": "system", "content": system},
                                                  {"role": "user", "content": user}],
                "max_tokens": max_tokens, "temperature": 0}
        r = await self.post(body)
        message, _ = self.message(r)
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            raise EndpointError(f"{self.where()}: the answer had no text ({excerpt(r.text)})")
        self.answered, self.timeouts = True, 0
        return content


def excerpt(text: str, limit: int = 300) -> str:
    """The start of an answer's text on one line (an HTML page's tags and all)."""
    flat = " ".join(text.split())
    return flat[:limit] + ("…" if len(flat) > limit else "")
