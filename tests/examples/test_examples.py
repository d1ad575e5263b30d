"""Each example server, run as `python -m mcpctl.examples.<name>`, in both protocol eras."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ci_support import SLACK

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


def text(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def ok(result: Any) -> str:
    assert not result.is_error, text(result)
    return text(result)


def check_tools_are_well_described(tools: list[Any]) -> None:
    for tool in tools:
        assert tool.description and len(tool.description) > 30, tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None
        schema = tool.input_schema
        assert schema["type"] == "object" and schema.get("additionalProperties") is False
        for pname, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{pname} has no description"
            assert "title" not in prop


@pytest.mark.parametrize("mode", MODES)
async def test_notes_over_stdio(stdio_example: Any, tmp_path: Path, mode: str) -> None:
    notes_dir = tmp_path / "notes"
    with anyio.fail_after(30 * SLACK):
        async with stdio_example("notes", "--dir", str(notes_dir), mode=mode) as c:
            assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            tools = (await c.list_tools()).tools
            names = [t.name for t in tools]
            assert names == ["create_note", "list_notes", "read_note", "search_notes", "update_note", "delete_note"]
            check_tools_are_well_described(tools)
            ann = {t.name: t.annotations for t in tools}
            assert ann["delete_note"].destructive_hint is True and ann["delete_note"].read_only_hint is False
            assert ann["create_note"].destructive_hint is False
            assert all(ann[n].read_only_hint for n in ("list_notes", "read_note", "search_notes"))

            first = json.loads(ok(await c.call_tool(
                "create_note", {"title": "Groceries", "body": "buy oat milk and eggs", "tags": ["home"]})))
            second = json.loads(ok(await c.call_tool(
                "create_note", {"title": "Standup", "body": "ask about the milk budget", "tags": ["work"]})))
            assert (first["id"], second["id"]) == ("1", "2")
            assert json.loads((notes_dir / "notes.json").read_text())["notes"]["1"]["title"] == "Groceries"

            listed = json.loads(ok(await c.call_tool("list_notes", {"tag": "work"})))
            assert [n["id"] for n in listed] == ["2"]
            found = json.loads(ok(await c.call_tool("search_notes", {"query": "a milk, eggs"})))
            assert [n["id"] for n in found] == ["1"]
            found = json.loads(ok(await c.call_tool("search_notes", {"query": "MILK"})))
            assert {n["id"] for n in found} == {"1", "2"}
            assert json.loads(ok(await c.call_tool("read_note", {"id": "2"})))["body"] == "ask about the milk budget"

            updated = json.loads(ok(await c.call_tool("update_note", {"id": "1", "body": "bread", "tags": ["x", "x"]})))
            assert (updated["title"], updated["body"], updated["tags"]) == ("Groceries", "bread", ["x"])
            assert "Deleted note 2" in ok(await c.call_tool("delete_note", {"id": "2"}))

            missing = await c.call_tool("read_note", {"id": "2"})
            assert missing.is_error and "no note with id '2'" in text(missing)
            bad = await c.call_tool("create_note", {"title": "", "colour": "red"})
            assert bad.is_error and "title" in text(bad) and "colour" in text(bad)
            empty = await c.call_tool("update_note", {"id": "1"})
            assert empty.is_error and "nothing to change" in text(empty)

            resources = (await c.list_resources()).resources
            assert [(r.uri, r.name) for r in resources] == [("notes://1", "Groceries")]
            content = (await c.read_resource("notes://1")).contents[0]
            assert content.text.startswith("# Groceries\n\nbread")
            templates = (await c.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["notes://{id}"]

            prompts = (await c.list_prompts()).prompts
            assert [p.name for p in prompts] == ["summarize_notes"]
            prompt = await c.get_prompt("summarize_notes", {"style": "paragraph"})
            assert "one short paragraph" in prompt.messages[0].content.text
            assert "# Groceries" in prompt.messages[0].content.text


@pytest.mark.parametrize("mode", MODES)
async def test_notes_dir_from_env_and_shared_between_processes(stdio_example: Any, tmp_path: Path,
                                                               mode: str) -> None:
    env = {"NOTES_DIR": str(tmp_path / "shared")}
    with anyio.fail_after(30 * SLACK):
        async with stdio_example("notes", mode=mode, env=env) as a, stdio_example("notes", mode=mode, env=env) as b:
            for i in range(5):
                ok(await a.call_tool("create_note", {"title": f"a{i}"}))
                ok(await b.call_tool("create_note", {"title": f"b{i}"}))
            listed = json.loads(ok(await a.call_tool("list_notes", {"limit": 100})))
    assert sorted(int(n["id"]) for n in listed) == list(range(1, 11))


@pytest.mark.parametrize("mode", MODES)
async def test_calc_over_stdio(stdio_example: Any, mode: str) -> None:
    with anyio.fail_after(30 * SLACK):
        async with stdio_example("calc", mode=mode) as c:
            tools = (await c.list_tools()).tools
            assert [t.name for t in tools] == ["add", "multiply", "statistics", "convert_units", "long_computation"]
            check_tools_are_well_described(tools)
            assert all(t.annotations.read_only_hint for t in tools)
            stats_tool = next(t for t in tools if t.name == "statistics")
            assert stats_tool.output_schema["properties"]["mean"]["type"] == "number"

            assert ok(await c.call_tool("add", {"a": 2, "b": 40})) == "42"
            assert ok(await c.call_tool("add", {"a": 0.1, "b": 0.2})) == "0.30000000000000004"
            assert ok(await c.call_tool("multiply", {"a": 6, "b": -7})) == "-42"
            bad = await c.call_tool("add", {"a": "two", "b": 1})
            assert bad.is_error and "a:" in text(bad)

            r = await c.call_tool("statistics", {"values": [2, 4, 4, 4, 5, 5, 7, 9]})
            assert not r.is_error
            s = r.structured_content
            assert (s["count"], s["sum"], s["mean"], s["median"], s["min"], s["max"]) == (8, 40, 5, 4.5, 2, 9)
            assert s["variance"] == pytest.approx(32 / 7)
            assert json.loads(text(r)) == s
            assert (await c.call_tool("statistics", {"values": [3]})).structured_content["stdev"] == 0
            assert (await c.call_tool("statistics", {"values": []})).is_error

            assert ok(await c.call_tool("convert_units", {"value": 100, "from_unit": "C", "to_unit": "F"})) \
                == "100 C = 212 F"
            assert ok(await c.call_tool("convert_units", {"value": 1, "from_unit": "mi", "to_unit": "km"})) \
                == "1 mi = 1.609344 km"
            assert ok(await c.call_tool("convert_units", {"value": 1, "from_unit": "GiB", "to_unit": "MB"})) \
                == "1 GiB = 1073.741824 MB"
            mixed = await c.call_tool("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "m"})
            assert mixed.is_error and "different things" in text(mixed)
            unknown = await c.call_tool("convert_units", {"value": 1, "from_unit": "parsec", "to_unit": "m"})
            assert unknown.is_error and "unknown unit 'parsec'" in text(unknown)

            progress: list[tuple[float, float | None]] = []
            all_four = anyio.Event()

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append((p, total))
                if len(progress) >= 4:
                    all_four.set()

            r = await c.call_tool("long_computation", {"steps": 4, "step_ms": 5}, progress_callback=on_progress)
            assert ok(r) == "sum of squares 1..4 = 30"
            with anyio.fail_after(5 * SLACK):  # notifications may trail the result by a moment
                await all_four.wait()
            assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("mode", MODES)
async def test_textkit_over_stdio(stdio_example: Any, mode: str) -> None:
    with anyio.fail_after(30 * SLACK):
        async with stdio_example("textkit", mode=mode) as c:
            tools = (await c.list_tools()).tools
            assert [t.name for t in tools] == ["word_count", "slugify", "regex_search", "diff_text", "hash_text", "echo"]
            check_tools_are_well_described(tools)
            assert all(t.annotations.read_only_hint and t.annotations.open_world_hint is False for t in tools)

            wc = (await c.call_tool("word_count", {"text": "One two. Three!\n\nFour five six?"})).structured_content
            assert wc == {"words": 6, "characters": 31, "characters_no_spaces": 25, "lines": 3, "sentences": 3,
                          "paragraphs": 2}
            assert ok(await c.call_tool("slugify", {"text": "Héllo, Wörld! 2026"})) == "hello-world-2026"
            assert ok(await c.call_tool("slugify", {"text": "a b c", "separator": "_", "max_length": 3})) == "a_b"
            assert (await c.call_tool("slugify", {"text": "!!!"})).is_error

            found = json.loads(ok(await c.call_tool(
                "regex_search", {"pattern": r"(?P<k>\w+)=(\d+)", "text": "a=1\nbb=22", "max_matches": 5})))
            assert found["count"] == 2 and not found["truncated"]
            assert found["matches"][1] == {"match": "bb=22", "start": 4, "end": 9, "line": 2,
                                           "groups": ["bb", "22"], "named": {"k": "bb"}}
            capped = json.loads(ok(await c.call_tool("regex_search", {"pattern": "x", "text": "xxx",
                                                                       "max_matches": 2})))
            assert (capped["count"], capped["truncated"]) == (2, True)
            bad = await c.call_tool("regex_search", {"pattern": "(", "text": "x"})
            assert bad.is_error and "invalid regular expression" in text(bad)

            diff = ok(await c.call_tool("diff_text", {"before": "a\nb\nc\n", "after": "a\nB\nc\n"}))
            assert diff.splitlines() == ["--- before", "+++ after", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
            assert ok(await c.call_tool("diff_text", {"before": "same", "after": "same"})) == "The texts are identical."

            assert ok(await c.call_tool("hash_text", {"text": "héllo"})) == hashlib.sha256("héllo".encode()).hexdigest()
            assert ok(await c.call_tool("hash_text", {"text": "x", "algorithm": "md5"})) == hashlib.md5(b"x").hexdigest()
            assert (await c.call_tool("hash_text", {"text": "x", "algorithm": "crc32"})).is_error
            assert ok(await c.call_tool("echo", {"text": "  spaced\nout  "})) == "  spaced\nout  "


async def test_examples_write_nothing_but_protocol_to_stdout(tmp_path: Path) -> None:
    """A client sending only EOF gets an empty stdout: no banner, no stray prints."""
    for name in ("notes", "calc", "textkit"):
        with anyio.fail_after(20 * SLACK):
            proc = await anyio.run_process([sys.executable, "-m", f"mcpctl.examples.{name}", "--log-level", "DEBUG"],
                                           input=b"", check=False, env={"NOTES_DIR": str(tmp_path),
                                                                        "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == b""
