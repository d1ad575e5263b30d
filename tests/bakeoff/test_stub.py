"""The stub upstream: real definitions listed, arguments checked against the schema, calls recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from mcpctl.bakeoff.stub import problem

CATALOGUE = Path(__file__).resolve().parent / "catalogue"


def test_arguments_are_checked_against_the_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}
    assert problem(schema, None, {}) == "invalid arguments: missing a"
    assert problem(schema, None, {"a": 1}) is None


def test_stub_lists_answers_and_records(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    calls = tmp_path / "calls.jsonl"
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "mcpctl.bakeoff.stub", "--catalogue", str(CATALOGUE), "--server", "calc", "--calls", str(calls)])

    async def go() -> tuple[list[str], bool, str, bool]:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                names = [t.name for t in (await c.list_tools()).tools]
                ok = await c.call_tool("add", {"a": 1, "b": 2})
                bad = await c.call_tool("add", {"a": "one"})
                text = ok.content[0].text if ok.content and hasattr(ok.content[0], "text") else ""
                return names, bool(ok.is_error), text, bool(bad.is_error)

    names, ok_error, text, bad_error = anyio.run(go)
    assert names == ["add", "multiply", "statistics", "convert_units", "long_computation"]
    assert not ok_error and "add" in text and bad_error
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(r["server"], r["tool"], r["ok"]) for r in rows] == [("calc", "add", True), ("calc", "add", False)]
    assert rows[0]["arguments"] == {"a": 1, "b": 2}
