"""`ask.model` (issue 39): a project's own OpenAI-compatible model answers `ask` for every client,
of either era, with or without sampling; what reaches it is bounded by the caller's view; when it
fails the ask still gives the passages, with a note naming the endpoint and the error. The model
is a stand-in: a real HTTP server on 127.0.0.1 (port 0) that records what it is sent and answers
citing the first passage's URI of its prompt."""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import mcp.types as t
import pytest
from gwkit import Kit, LoopbackHTTP
from inproc import Harness
from test_ask_inproc import _ask
from typer.testing import CliRunner

from mcpctl.ask import answer
from mcpctl.cli import app
from mcpctl.examples.notes import NoteStore

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

KEY = "s3cret-for-the-model"


class StandIn(LoopbackHTTP):
    """An OpenAI-compatible chat-completions endpoint in a thread: `requests` holds each request's
    headers and JSON body. The model named `error-500` answers 500, `hang` answers after 5 s;
    any other cites the first passage URI of the user message."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                stand_in.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if self.path != "/v1/chat/completions" or body.get("model") == "error-500":
                    return self._send(500, {"error": {"message": "the model fell over"}})
                if body["model"] == "hang":
                    time.sleep(5)
                found = re.search(r"\[\d+\] (\S+) \(", body["messages"][-1]["content"])
                reply = f"The release train leaves on Thursday [{found.group(1) if found else 'nothing'}]."
                self._send(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": reply}}]})

            def _send(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._serve(Handler)
        self.url += "/v1"           # the API's base, as a user configures it

    def prompts(self) -> list[str]:
        return [body["messages"][-1]["content"] for _, body in self.requests]


@pytest.fixture
def endpoint() -> Iterator[StandIn]:
    s = StandIn()
    try:
        yield s
    finally:
        s.close()


def _unused_url() -> str:
    """A base URL nobody listens on (a port bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _notes(kit: Kit, tmp_path: Path, name: str, *notes: tuple[str, str], process: bool = False) -> None:
    """A notes server: in process for the `gw` harness, or (`process`) a process for the CLI."""
    d = tmp_path / name
    for title, body in notes:
        NoteStore(d).create(title, body, [])
    run = ("-m", "mcpctl.examples.notes") if process else ("example-server", "notes")
    kit.server(name, *run, "--dir", str(d), command=sys.executable)


def _project(kit: Kit, tmp_path: Path, url: str, model: str = "small-model", *,
             process: bool = False) -> dict[str, str]:
    """Project p over two notes servers, its model at `url`, and a token that denies notes/*."""
    _notes(kit, tmp_path, "notes", ("Release train", "The release train leaves on Thursday."), process=process)
    _notes(kit, tmp_path, "docs", ("Release guide", "Release notes are written on Thursday."), process=process)
    kit.project("p", ["notes", "docs"], names={"style": "bare"}, search={"ranker": "bm25"},
                ask={"enabled": True, "topK": 5,
                     "model": {"endpoint": url, "model": model, "apiKey": "${env:ASK_MODEL_KEY}"}},
                profiles={"no-notes": {"deny": ["notes/*"]}})
    r = CliRunner().invoke(app, ["create", "token", "nn", "-p", "p", "--profile", "no-notes"])
    assert r.exit_code == 0, r.output
    return {"no-notes": r.stdout.strip()}




async def test_every_client_gets_the_projects_model_answer(kit: Kit, gw: Harness, tmp_path: Path,
                                                           endpoint: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2026-07-28 client, a handshake-era client without sampling and one WITH sampling all get
    the project's model's answer, with its citations and model name; the client's sampling is
    never asked; the endpoint gets the bearer key from ${env:…} and the sampling path's prompt."""
    monkeypatch.setenv("ASK_MODEL_KEY", KEY)
    _project(kit, tmp_path, endpoint.url)
    sampled: list[str] = []

    async def lend(ctx: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        sampled.append("asked")
        return t.CreateMessageResult(role="assistant", model="client", content=t.TextContent(type="text", text="no"))

    async with gw.serve("p") as g, g.client("2026-07-28", "modern") as modern, \
            g.client("legacy", "plain") as plain, g.client("legacy", "lends", sampling_callback=lend) as lends:
        await g.settled()
        got = [await _ask(c, "release train") for c in (modern, plain, lends)]
    assert sampled == []
    for result in got:
        assert result["answer"].startswith("The release train leaves on Thursday [notes://")
        assert result["citations"] == [result["passages"][0]["uri"]] and result["model"] == "small-model"
        assert "note" not in result and result["passages"]
    assert len(endpoint.requests) == 3
    for headers, body in endpoint.requests:
        assert headers["authorization"] == f"Bearer {KEY}"
        assert body["model"] == "small-model" and body["temperature"] == 0
        assert body["max_tokens"] == answer.MAX_ANSWER_TOKENS and "tools" not in body
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][0]["content"] == answer.SYSTEM_PROMPT
        assert "untrusted data" in body["messages"][1]["content"]
        assert body["messages"][1]["content"].endswith("\n\nQuestion: release train")


async def test_what_reaches_the_model_is_bounded_by_the_callers_view(kit: Kit, gw: Harness, tmp_path: Path,
                                                                    endpoint: StandIn,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A token whose profile denies notes/*: no passage of the notes server reaches the endpoint,
    for a client of either era; the full view's ask sends both servers' passages."""
    monkeypatch.setenv("ASK_MODEL_KEY", KEY)
    tokens = _project(kit, tmp_path, endpoint.url)
    async with gw.serve("p") as g, g.client("legacy", "full") as full, \
            g.client("legacy", "nn", token=tokens["no-notes"]) as nn, \
            g.client("2026-07-28", "nn26", token=tokens["no-notes"]) as nn26:
        await g.settled()
        everyone = await _ask(full, "release Thursday")
        denied = await _ask(nn, "release Thursday")
        denied26 = await _ask(nn26, "release train Thursday")
    full_prompt, *denied_prompts = endpoint.prompts()
    assert "leaves on Thursday." in full_prompt and "Release notes are written" in full_prompt
    assert len(denied_prompts) == 2
    for prompt in denied_prompts:
        assert "Release notes are written" in prompt and "leaves on Thursday." not in prompt
    assert {p["server"] for p in everyone["passages"]} == {"notes", "docs"}
    assert {p["server"] for p in denied["passages"] + denied26["passages"]} == {"docs"}
    assert denied["answer"] and denied26["answer"] and denied["model"] == "small-model"


@pytest.mark.parametrize("failing", ["error-500", "unreachable", "hang"])
async def test_a_failing_model_gives_the_passages_and_a_note(kit: Kit, gw: Harness, tmp_path: Path,
                                                            endpoint: StandIn, monkeypatch: pytest.MonkeyPatch,
                                                            failing: str) -> None:
    """An endpoint that answers 500, one nobody listens on, and one slower than ask's bound (made
    1 s here): the ask answers, with the passages and a note naming the endpoint and the error;
    the client's sampling is still not asked."""
    monkeypatch.setenv("ASK_MODEL_KEY", KEY)
    monkeypatch.setattr(answer, "MODEL_S", 1.0)
    url = _unused_url() if failing == "unreachable" else endpoint.url
    _project(kit, tmp_path, url, model=failing)

    async def lend(ctx: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        raise AssertionError("the project's model is set: the client's is not asked")

    async with gw.serve("p") as g, g.client("legacy", "lends", sampling_callback=lend) as c:
        await g.settled()
        started = time.monotonic()
        got = await _ask(c, "release train")
        took = time.monotonic() - started
    assert "answer" not in got and "model" not in got and got["passages"]
    assert got["note"].startswith(f"The project's model ({failing} at {url}) gave no answer: ")
    assert got["note"].endswith("These are the passages found, best first; answer from them and cite their URIs.")
    why = {"error-500": "answered 500: {\"error\": {\"message\": \"the model fell over\"}}",
           "unreachable": "ConnectError", "hang": "no answer within 1 s (ask's bound on its model; "}[failing]
    assert why in got["note"], got["note"]
    assert took < 4.5, took                     # the hung endpoint was not waited out (it answers at 5 s)


async def test_a_key_that_cannot_be_resolved_is_said_in_the_note(kit: Kit, gw: Harness, tmp_path: Path,
                                                                endpoint: StandIn,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASK_MODEL_KEY", raising=False)
    _project(kit, tmp_path, endpoint.url)
    async with gw.serve("p") as g, g.client("legacy") as c:
        await g.settled()
        got = await _ask(c, "release train")
    assert "answer" not in got and got["passages"] and endpoint.requests == []
    assert "spec.ask.model.apiKey: environment variable 'ASK_MODEL_KEY' is not set" in got["note"]


def test_the_cli_ask_uses_the_projects_model(kit: Kit, tmp_path: Path, endpoint: StandIn,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`mcpctl ask` answers with the project's model when it has one, and --profile bounds what
    the model is sent as it bounds the passages."""
    monkeypatch.setenv("ASK_MODEL_KEY", KEY)
    _project(kit, tmp_path, endpoint.url, process=True)
    runner = CliRunner()
    r = runner.invoke(app, ["ask", "release train", "-p", "p", "-o", "json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["answer"].startswith("The release train leaves") and got["model"] == "small-model"
    assert got["citations"] == [got["passages"][0]["uri"]]
    r = runner.invoke(app, ["ask", "release Thursday", "-p", "p", "--profile", "no-notes"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("The release train leaves on Thursday [notes://1].\n\nCited: notes://1")
    assert [h["authorization"] for h, _ in endpoint.requests] == [f"Bearer {KEY}"] * 2
    assert "leaves on Thursday." not in endpoint.prompts()[1]


# -- apply ------------------------------------------------------------------------------------------

PROJECT = """\
apiVersion: mcpctl/v1
kind: Project
metadata: {name: kb}
spec:
  servers: []
  ask:
    enabled: true
    model:
      endpoint: %s
      model: %s
      apiKey: ${env:ASK_MODEL_KEY}
"""


def test_apply_refuses_a_bad_model_and_round_trips_a_good_one(kit: Kit, tmp_path: Path) -> None:
    """A bad endpoint or an empty model is refused, naming the field, and the store keeps what it
    had; `get project -o yaml | apply -f -` says unchanged."""
    runner = CliRunner()
    good = tmp_path / "good.yaml"
    good.write_text(PROJECT % ("http://127.0.0.1:11434/v1", "qwen3:8b"))
    r = runner.invoke(app, ["apply", "-f", str(good)])
    assert r.exit_code == 0 and r.stdout == "project/kb created\n", r.output
    before = runner.invoke(app, ["get", "project", "kb", "-o", "yaml"]).stdout
    assert "    model:\n      endpoint: http://127.0.0.1:11434/v1\n      model: qwen3:8b\n" in before
    assert "      apiKey: ${env:ASK_MODEL_KEY}\n" in before
    assert runner.invoke(app, ["apply", "-f", "-"], input=before).stdout == "project/kb unchanged\n"
    for endpoint, model, says in (("localhost:11434/v1", "m", "spec.ask.model.endpoint: 'localhost:11434/v1' "
                                   "is not an http:// or https:// URL"),
                                  ("ftp://models.example/v1", "m", "spec.ask.model.endpoint: 'ftp://"),
                                  ("http://127.0.0.1:11434/v1", "''", "spec.ask.model.model: must not be empty")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(PROJECT % (endpoint, model))
        r = runner.invoke(app, ["apply", "-f", str(bad)])
        assert r.exit_code != 0 and says in " ".join(r.output.split()), r.output
    literal = tmp_path / "literal.yaml"
    literal.write_text((PROJECT % ("http://127.0.0.1:11434/v1", "m")).replace("${env:ASK_MODEL_KEY}", "sk-abc"))
    r = runner.invoke(app, ["apply", "-f", str(literal)])
    assert r.exit_code != 0 and "spec.ask.model.apiKey: must be a reference" in " ".join(r.output.split())
    assert runner.invoke(app, ["get", "project", "kb", "-o", "yaml"]).stdout == before
