"""Tool definitions that carry what tool poisoning uses: flagged, never blocked.

A tool's definition goes into the model's context verbatim, so an upstream (or whoever changed it)
can address the model there: in the description, and in every other field the model reads (the
title, parameter names, descriptions, defaults, enum values, nested schemas, the output schema).
This package knows the marks such definitions share and says which a definition carries
(`scan_definition`; one text: `scan`); `doctor` and `surface` report the flags, nothing refuses a
tool because of them. Each `Flag` names the tool, the kind of mark, why (and where, when not in
the description: "title: …", "parameter 'path' default: …") and the offending text with every
invisible character written as a visible escape (`shown`); callers still pass it through the
terminal helpers (`terminal.visible`, the CLI's `safe`).

The kinds:

- invisible: characters that show nothing but reach the model: zero-width characters, the
  bidirectional controls `terminal` escapes, Unicode tag characters (which spell ASCII no screen
  shows: the flag decodes them), variation selectors past U+E0100 (bytes hidden in an emoji), and
  C0/C1 controls such as the ANSI escapes that hide or overwrite text on a terminal;
- instruction: sentences aimed at the model rather than describing the tool (`marks`): to ignore
  other instructions, to read credentials or name secret files, to conceal what it does, to call a
  tool first or call other tools, to change other calls' arguments, to use other servers' tools
  otherwise, to prefer this tool over any other, claims to be another server's or an official
  tool, shell commands, callbacks and image-URL exfiltration, posing as the user or the system,
  asking for the conversation or the system prompt; and names that read as such sentences
  (`content_from_reading_ssh_id_rsa`);
- markup: `<IMPORTANT>`-style tags, chat-template tokens, Markdown and HTML comments;
- obfuscation: what is written so a reader or a filter misses it (`hidden`): look-alike letters,
  fullwidth or mathematical letters, base64 that decodes to words, paths spelled out in words,
  padding that pushes text out of view, and an instruction that matches only once these are
  undone; a schema nested past MAX_DEPTH levels;
- length: descriptions over MAX_DESCRIPTION characters. Of 1,190 real descriptions (LiveMCPBench,
  MetaTool, ToolLens) the longest is 3,866 characters and the 99th percentile 2,532; 4,000
  characters is about 1,000 tokens, `doctor`'s budget for one tool's whole definition.

Measured on a labelled corpus of 158 poisoned definitions from published techniques and on 1,246
real ones: docs/poisoning.md. The modules: `flags` (Flag, kinds, `shown`), `marks` (the
patterns), `hidden` (what hides text), `text` (one text, one name), `schema` (where the texts of a
definition are). No I/O and no `mcp` here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from mcpctl.catalogue.poison.flags import INSTRUCTION, INVISIBLE, LENGTH, MARKUP, OBFUSCATION, Flag, shown
from mcpctl.catalogue.poison.schema import MAX_DEPTH, MAX_PARAMETERS, Texts, walk
from mcpctl.catalogue.poison.text import MAX_DESCRIPTION, scan, scan_name

ENUM_SENTENCE = 6       # words; no enum value of 1,246 real tools has more than 4


def scan_all(tools: Iterable[tuple[str, str | None]]) -> list[Flag]:
    """The flags of every (tool id, description), tool by tool."""
    return [f for tool, description in tools for f in scan(tool, description)]


def parameter_texts(schema: Any, depth: int = 0, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(parameter path, text) of every parameter description and title in an input schema."""
    for path, key, text in walk(schema).texts:
        if path and key in ("description", "title") and path.startswith(prefix):
            yield path, text


def _at(where: str, flags: list[Flag]) -> list[Flag]:
    return [replace(f, why=f"{shown(where)}: {f.why}") for f in flags]


def _schema_flags(tool: str, found: Texts) -> list[Flag]:
    out: list[Flag] = []
    for path, key, text in found.texts:
        flags = scan(tool, text)
        if key == "enum" and len(text.split()) >= ENUM_SENTENCE:
            flags.append(Flag(tool, INSTRUCTION, f"an enum value of {len(text.split())} words (a sentence, not a "
                                                 "choice)", shown(" ".join(text[:80].split()))))
        if flags:
            out += _at(found.label(path, key), flags)
    for path, key, name in found.names:
        flags = scan_name(tool, name)
        if flags:
            out += _at(found.label(path, key), flags)
    return out


def scan_definition(tool: str, wire: Mapping[str, Any]) -> list[Flag]:
    """The flags of a whole tool definition: its description, title, name, then its schemas' texts."""
    description = wire.get("description")
    out = scan(tool, description if isinstance(description, str) else None)
    title = wire.get("title")
    if isinstance(title, str):
        out += _at("title", scan(tool, title))
    annotations = wire.get("annotations")
    if isinstance(annotations, Mapping) and isinstance(annotations.get("title"), str):
        out += _at("annotations.title", scan(tool, annotations["title"]))
    name = wire.get("name")
    if isinstance(name, str):
        out += _at("tool name", scan_name(tool, name))
    for key, prefix in (("inputSchema", "parameter"), ("outputSchema", "output")):
        found = walk(wire.get(key), prefix)
        out += _schema_flags(tool, found)
        if found.too_deep:
            out.append(Flag(tool, OBFUSCATION, f"{key} nested past {MAX_DEPTH} levels (what lies deeper is not "
                                               "read)", key))
    return out


def scan_definitions(tools: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Flag]:
    """The flags of every (tool id, wire definition), tool by tool."""
    return [f for tool, wire in tools for f in scan_definition(tool, wire)]


__all__ = ["INSTRUCTION", "INVISIBLE", "LENGTH", "MARKUP", "MAX_DEPTH", "MAX_DESCRIPTION", "MAX_PARAMETERS",
           "OBFUSCATION", "Flag", "parameter_texts", "scan", "scan_all", "scan_definition", "scan_definitions",
           "shown"]
