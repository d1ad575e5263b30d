"""The limits on manifests, and the guards that enforce them before anything is stored.

A real manifest is a few kB and about six levels deep. These limits leave two or three orders
of magnitude of room and bound the time, the memory and the size of what is stored, whatever
the input (docs/internals.md, "Guarantees: the invocation log and manifests"):

- MAX_INPUT_BYTES, 4 MiB: one file, or stdin; refused before it is parsed (`stat`, bounded read).
- MAX_TOTAL_BYTES, 16 MiB: everything one command reads (`-f ... -f DIR`), counted while reading.
- MAX_DOCUMENT_BYTES, 1 MiB: one document, refused before it is parsed (`---`/`...` split the
  text; JSON after decoding); also the most a document's aliases may expand it to.
- MAX_DEPTH, 64 levels: the nesting of a document (a scalar is one level), checked while
  composing (YAML) or after decoding (JSON); also with its aliases expanded.
- Aliases must not refer to themselves. What they expand to is checked on the node graph, each
  node once, so a "billion laughs" costs a few hundred steps.
- A key may appear once in a JSON object, as in YAML (the refusal names both lines).

`yamlio` reads and parses manifests and calls these guards; each refusal is an InvalidResource
naming the source (and the document and line where known).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Final

from ruamel.yaml.composer import Composer
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mcpctl.errors import InvalidResource

MAX_DOCUMENT_BYTES: Final = 1024 * 1024        # one document; also the most its aliases may expand to
MAX_INPUT_BYTES: Final = 4 * 1024 * 1024       # one file, or stdin (refused before it is parsed)
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024      # everything one command reads (-f ... -f DIR)
MAX_DEPTH: Final = 64                          # nesting levels of a document (scalars count as one)

_DOC_MARK_RE = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')
_JSON_COLON_RE = re.compile(r"\s*:")


def mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB".replace(".0 MiB", " MiB")


def line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def too_big_input(source: str, size: int | None = None) -> InvalidResource:
    what = f"is {mib(size)}, more than" if size is not None else "is larger than"
    return InvalidResource(f"{source}: the input {what} the {mib(MAX_INPUT_BYTES)} mcpctl reads from one file "
                           "or stdin", hint=f"split it into several files (each document may hold up to "
                                            f"{mib(MAX_DOCUMENT_BYTES)})")


def check_input_size(text: str, source: str) -> None:
    if len(text) > MAX_INPUT_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise too_big_input(source, len(text.encode("utf-8", "surrogatepass")))


def document_too_big(source: str, number: int, line: int | None, size: int) -> InvalidResource:
    at = f", line {line}" if line is not None else ""
    return InvalidResource(
        f"{source}, document {number}{at}: the document is {mib(size)}, more than the "
        f"{mib(MAX_DOCUMENT_BYTES)} a document may hold",
        hint="a Server or Project manifest is a few kB: split the input into smaller documents")


def check_yaml_documents(text: str, source: str) -> None:
    """Refuse a YAML document larger than MAX_DOCUMENT_BYTES before it is parsed.

    A `---` or `...` at the start of a line always ends a document (YAML forbids them inside
    scalars), so documents are split here without parsing. Only done for long inputs."""
    if len(text) <= MAX_DOCUMENT_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) <= MAX_DOCUMENT_BYTES:
        return
    bounds = [0, *(m.start() for m in _DOC_MARK_RE.finditer(text)), len(text)]
    number = 0
    for start, end in itertools.pairwise(bounds):
        segment = text[start:end]
        body = segment[3:] if segment.startswith(("---", "...")) else segment
        content = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if not content and not segment.startswith("---"):
            continue
        number += 1
        size = len(segment.encode("utf-8", "surrogatepass"))
        if size > MAX_DOCUMENT_BYTES:
            first = text.find(content[0], start) if content else start
            raise document_too_big(source, number, line_col(text, first)[0], size)


_ALIAS_HINT: Final = "write the values out instead of repeating aliases (*name), or split the document"


class Refused(Exception):
    """A document that is valid YAML but beyond mcpctl's limits (raised while composing)."""

    def __init__(self, message: str, node: Node | None, document: int, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.line = node.start_mark.line + 1 if node is not None and node.start_mark is not None else None
        self.document = document


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: Node, document: int) -> None:
    """Refuse a document whose aliases expand it beyond MAX_DOCUMENT_BYTES or MAX_DEPTH, or that
    refers to itself. Each distinct node is visited once (the graph is walked, not the tree), so
    a "billion laughs" of nine aliases to nine aliases... costs a few hundred steps."""
    size: dict[int, int] = {}      # characters of the subtree with its aliases expanded, plus one per node
    height: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            own = len(node.value) if isinstance(node, ScalarNode) and isinstance(node.value, str) else 0
            size[key] = 1 + own + sum(size[id(k)] for k in kids)
            height[key] = 1 + max((height[id(k)] for k in kids), default=0)
            anchor = f" (anchor &{node.anchor})" if getattr(node, "anchor", None) else ""
            if size[key] > MAX_DOCUMENT_BYTES:
                raise Refused(f"with its aliases expanded the document holds more than {mib(MAX_DOCUMENT_BYTES)} "
                              f"at this node{anchor}: too many aliases (an alias bomb?)", node, document, _ALIAS_HINT)
            if height[key] > MAX_DEPTH:
                raise Refused(f"with its aliases expanded the document is nested more than {MAX_DEPTH} levels "
                              f"deep at this node{anchor}", node, document, _ALIAS_HINT)
            continue
        if key in size:
            continue
        if key in on_path:
            name = getattr(node, "anchor", None) or "?"
            raise Refused(f"the anchor &{name} refers to itself: a recursive alias", node, document,
                          f"an alias (*{name}) cannot stand inside the node its anchor names")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


class GuardedComposer(Composer):
    """ruamel's composer, counting documents and checking what aliases expand to."""

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.document = 0
        self.aliases = 0

    def compose_document(self: Any) -> Any:
        self.document += 1
        self.aliases = 0
        node = super().compose_document()
        if self.aliases and node is not None:
            _check_expansion(node, self.document)
        return node

    def return_alias(self, a: Any) -> Any:
        self.aliases += 1
        return a


def json_depth(data: Any) -> int:
    """Nesting levels of plain JSON data (a scalar is one level), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return deepest


class DuplicateKey(ValueError):
    pass


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(k)
        out[k] = v
    return out


def json_duplicate(text: str) -> tuple[str, int, int] | None:
    """The first key given twice in one JSON object: (key, line of the repeat, line of the first)."""
    objects: list[dict[str, int] | None] = []
    for m in _JSON_TOKEN_RE.finditer(text):
        tok = m.group()
        if tok in "{[":
            objects.append({} if tok == "{" else None)
        elif tok in "}]":
            if objects:
                objects.pop()
        elif objects and objects[-1] is not None and _JSON_COLON_RE.match(text, m.end()):
            key = json.loads(tok)
            seen = objects[-1]
            if key in seen:
                return key, line_col(text, m.start())[0], line_col(text, seen[key])[0]
            seen[key] = m.start()
    return None
