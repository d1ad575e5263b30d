"""`ask` through the real gateway (`mcpctl serve` over stdio, the SDK's client in the handshake
era): the bundled notes server's notes (`notes://<id>` resources) as the knowledge (issue 23)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, text_of, wait_tools
from test_relay_requests import gateway_client

from ci_support import SLACK
from mcpctl.catalogue.rank import semantic_status
from mcpctl.examples.notes import NoteStore

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
BARE = {"names": {"style": "bare"}, "search": {"ranker": "auto"}}   # auto: hybrid with the model
ASK = {"enabled": True, "topK": 3}

# The fact is in note 2; the question shares none of its content words ("ship", "versions" vs
# "release train", "leaves"), so only meaning finds it (hybrid: BM25F alone would not).
NOTES = [
    ("Coffee machine", "The espresso machine on the third floor is descaled every Monday morning by facilities."),
    ("Release train", "The release train leaves every Thursday at 14:00 UTC. Freeze the main branch on "
                      "Wednesday evening; hotfixes go through the on-call engineer."),
    ("Parking", "Visitors park in bay C; badges are printed at reception."),
]
QUESTION = "When do we ship new versions to customers?"


def _notes(kit: Kit, tmp_path: Path, name: str = "notes") -> Path:
    d = tmp_path / name
    store = NoteStore(d)
    for title, body in NOTES:
        store.create(title, body, [])
    kit.server(name, "-m", "mcpctl.examples.notes", "--dir", str(d), command=sys.executable)
    return d


def _payload(r: Any) -> dict[str, Any]:
    assert not r.is_error, text_of(r)
    return dict(r.structured_content)


async def _ask(c: Any, question: str, **kw: Any) -> dict[str, Any]:
    return _payload(await c.call_tool("ask", {"question": question, **kw}))


def _need_model() -> None:
    ok, why = semantic_status()
    if not ok:
        from ci_support import skip_unless_ci
        skip_unless_ci(f"the embedding model is needed for a question sharing no words with its note: {why}")


async def test_a_fact_in_a_note_is_found_by_meaning_and_cites_its_uri_without_a_model(kit: Kit,
                                                                                     tmp_path: Path) -> None:
    _need_model()
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask=ASK)
    async with kit.client("p") as c:
        tools = {tl.name: tl for tl in await wait_tools(c, {"ask", "create_note"})}
        assert tools["ask"].input_schema["required"] == ["question"]
        got = await _ask(c, QUESTION)
    assert got["passages"][0]["uri"] == "notes://2", got
    assert "Thursday" in got["passages"][0]["text"]
    assert "answer" not in got and "No model was lent" in got["note"]
    assert len(got["passages"]) <= 3


async def test_a_note_created_during_the_session_is_found_after_list_changed(kit: Kit, tmp_path: Path) -> None:
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask=ASK)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, t.ResourceListChangedNotification):
            changed.set()

    async with kit.client("p", message_handler=on_message) as c:
        await wait_tools(c, {"ask", "create_note"})
        before = await _ask(c, "zebra crossing budget")
        assert all("zebra" not in p["text"].lower() for p in before["passages"])
        r = await c.call_tool("create_note", {"title": "Zebra", "body": "The zebra crossing budget is 40,000 EUR."})
        assert not r.is_error, text_of(r)
        with anyio.fail_after(20 * SLACK):
            await changed.wait()              # the gateway re-listed the notes server
        got = await _ask(c, "zebra crossing budget", top_k=1)
    assert got["passages"][0]["uri"] == "notes://4" and "40,000" in got["passages"][0]["text"]


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_the_sampling_client_answers_from_the_passages_only_and_cites_the_uri(kit: Kit, tmp_path: Path,
                                                                                  front: str) -> None:
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask={**ASK, "topK": 2})
    asked: list[t.CreateMessageRequestParams] = []

    async def sampling(ctx: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        asked.append(params)
        text = params.messages[0].content.text      # the passages and the question
        uri = text.split("[1] ", 1)[1].split(" ", 1)[0]   # "[1] notes://N (title)": the first passage
        return t.CreateMessageResult(role="assistant", model="test-model",
                                     content=t.TextContent(type="text", text=f"Thursdays at 14:00 UTC [{uri}]."))

    async with gateway_client(kit, "p", front, "legacy", sampling_callback=sampling) as c:
        await wait_tools(c, {"ask"})
        got = await _ask(c, "release train Thursday freeze")
    assert got["answer"] == "Thursdays at 14:00 UTC [notes://2]." and got["citations"] == ["notes://2"]
    assert got["model"] == "test-model" and "note" not in got
    assert len(asked) == 1
    sent = asked[0].messages[0].content.text
    assert len(asked[0].messages) == 1 and asked[0].include_context == "none"
    passages = got["passages"]
    assert 1 <= len(passages) <= 2                  # top_k 2 (by keyword alone while vectors are computed)
    for p in passages:                                # every retrieved passage is in the request...
        assert p["text"] in sent and p["uri"] in sent
    for _title, body in NOTES:                        # ...and no note that was not retrieved
        if not any(body in p["text"] for p in passages):
            assert body not in sent
    assert sent.rstrip().endswith("Question: release train Thursday freeze")


async def test_a_profile_that_denies_the_notes_server_gets_nothing_from_it(kit: Kit, tmp_path: Path) -> None:
    _notes(kit, tmp_path)
    _notes(kit, tmp_path, "docs")
    profiles = {"no-notes": {"deny": ["notes/*"]}}
    kit.project("p", ["notes", "docs"], **BARE, ask=ASK, profiles=profiles)
    async with kit.client("p") as c:              # the full view: both servers
        await wait_tools(c, {"ask"})
        full = await _ask(c, "release train Thursday", top_k=5)
    assert {p["server"] for p in full["passages"]} == {"notes", "docs"}
    from mcp import Client
    from mcp.client.stdio import stdio_client

    params = kit.params("p", "--profile", "no-notes")
    async with Client(stdio_client(params), mode="legacy") as c:
        await wait_tools(c, {"ask"})
        got = await _ask(c, "release train Thursday", top_k=5)
        listed = (await c.list_resources()).resources
    assert got["passages"] and {p["server"] for p in got["passages"]} == {"docs"}
    assert all("notes" not in json.dumps(p) or p["server"] == "docs" for p in got["passages"])
    assert all(not str(r.uri).startswith("mcpctl://notes/") for r in listed)


async def test_ask_calls_are_logged_and_bad_arguments_are_tool_errors(kit: Kit, tmp_path: Path) -> None:
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask=ASK)
    async with kit.client("p") as c:
        await wait_tools(c, {"ask"})
        r = await c.call_tool("ask", {"question": "  "})
        assert r.is_error and "'question' must be a non-empty string" in text_of(r)
        r = await c.call_tool("ask", {"question": "parking", "top_k": 50})
        assert r.is_error and "'top_k'" in text_of(r)
        await _ask(c, "parking for visitors")
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as lg:                  # the gateway drained its log as it stopped
        rows = lg.query(project="p", canonical_id="mcpctl/ask")
    assert sorted(r.outcome for r in rows) == ["ok", "tool_error", "tool_error"]


async def test_a_client_that_declines_sampling_gets_the_passages_and_why(kit: Kit, tmp_path: Path) -> None:
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask=ASK)

    async def sampling(ctx: Any, params: t.CreateMessageRequestParams) -> t.ErrorData:
        return t.ErrorData(code=-1, message="the user said no")

    async with kit.client("p", sampling_callback=sampling) as c:
        await wait_tools(c, {"ask"})
        got = await _ask(c, "visitors park in which bay")
    assert "answer" not in got and got["passages"][0]["uri"] == "notes://3"
    assert "declined" in got["note"] and "the user said no" in got["note"]


async def test_a_2026_client_is_not_asked_and_gets_the_passages(kit: Kit, tmp_path: Path) -> None:
    _notes(kit, tmp_path)
    kit.project("p", ["notes"], **BARE, ask=ASK)
    asked: list[Any] = []

    async def sampling(ctx: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        asked.append(params)
        return t.CreateMessageResult(role="assistant", model="m", content=t.TextContent(type="text", text="x"))

    async with kit.client("p", mode="auto", sampling_callback=sampling) as c:
        await wait_tools(c, {"ask"})
        got = await _ask(c, "visitors park in which bay")
    assert not asked and "answer" not in got and "No model was asked: in the 2026-07-28 protocol" in got["note"]
    assert got["passages"][0]["uri"] == "notes://3"
