"""Reading manifests (YAML or JSON; files, directories, stdin) and writing resources.

Loading keeps each document's position (source, document number, line of every field) so a
validation error can point at the line. Dumping is deterministic: the same object always
gives the same bytes, keys in the order apiVersion, kind, metadata, spec, status.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from mcpctl.errors import InvalidResource

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class Document:
    """One document of a manifest, with where it came from."""

    source: str                 # a path, or "<stdin>"
    index: int                  # 1-based document number within the source
    data: Any                   # plain Python (dict/list/str/...)
    node: Any = None            # the ruamel node, for line numbers (None for JSON)
    item: int | None = None     # 1-based position inside a `kind: List`

    def where(self, path: tuple[str | int, ...] = ()) -> str:
        """`file.yaml, document 2, line 7` for the field at `path` (as far as known)."""
        parts = [self.source]
        parts.append(f"document {self.index}" + (f" item {self.item}" if self.item else ""))
        line = self.line_of(path)
        if line is not None:
            parts.append(f"line {line}")
        return ", ".join(parts)

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        node = self.node
        line: int | None = None
        if isinstance(node, CommentedMap | CommentedSeq) and node.lc.line is not None:
            line = node.lc.line + 1
        for key in path:
            try:
                if isinstance(node, CommentedMap) and key in node:
                    line = node.lc.key(key)[0] + 1
                    node = node[key]
                elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
                    line = node.lc.item(key)[0] + 1
                    node = node[key]
                else:
                    break
            except (AttributeError, KeyError, TypeError, IndexError):
                break
        return line


def _plain(node: Any) -> Any:
    """ruamel round-trip types → plain dict/list/str/int/float/bool/None."""
    if isinstance(node, Mapping):
        return {str(k) if not isinstance(k, str | int | float | bool) else k: _plain(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return str(node)   # dates and other YAML tags become strings


def _yaml_error(source: str, e: YAMLError, text: str) -> InvalidResource:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    where = source
    if mark is not None:
        where += f", line {mark.line + 1}, column {mark.column + 1}"
        # The document number: '---' separators before the error line (a leading one opens doc 1).
        lines = text.splitlines()
        seps = [i for i, ln in enumerate(lines) if ln.rstrip() == "---" or ln.startswith("--- ")]
        first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), 0)
        doc = sum(1 for i in seps if i < mark.line) + (0 if seps and seps[0] <= first else 1)
        where = f"{source}, document {max(doc, 1)}" + where[len(source):]
    hint = "fix the YAML syntax there"
    if "\t" in text and ("\\t" in str(e) or "tab" in str(e).lower()):
        hint = "YAML does not allow tab characters for indentation: indent with spaces"
    return InvalidResource(f"{where}: invalid YAML: {problem}", hint=hint)


def parse_text(text: str, source: str) -> list[Document]:
    """Parse a YAML (multi-document) or JSON text into documents; `List` kinds are expanded."""
    if not text.strip():
        return []
    stripped = text.lstrip()
    docs: list[Document] = []
    json_error: InvalidResource | None = None
    if source.endswith(".json") or stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            json_error = InvalidResource(f"{source}, line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}",
                                         hint="fix the JSON syntax there")
            if source.endswith(".json"):
                raise json_error from None
            # maybe YAML flow style: fall through
        else:
            items = data if isinstance(data, list) else [data]
            docs = [Document(source, i + 1, d) for i, d in enumerate(items)]
            return _expand_lists(docs)
    yaml = YAML(typ="rt")
    try:
        nodes = [n for n in yaml.load_all(text) if n is not None]
    except (MarkedYAMLError, YAMLError) as e:
        raise (json_error or _yaml_error(source, e, text)) from None
    docs = [Document(source, i + 1, _plain(n), n) for i, n in enumerate(nodes)]
    return _expand_lists(docs)


def _expand_lists(docs: list[Document]) -> list[Document]:
    out: list[Document] = []
    for d in docs:
        if isinstance(d.data, dict) and d.data.get("kind") == "List":
            items = d.data.get("items")
            if not isinstance(items, list):
                raise InvalidResource(f"{d.where(('items',))}: a List needs an 'items' list")
            nodes = d.node.get("items") if isinstance(d.node, CommentedMap) else None
            for i, item in enumerate(items):
                node = nodes[i] if isinstance(nodes, CommentedSeq) and i < len(nodes) else None
                out.append(Document(d.source, d.index, item, node, item=i + 1))
        else:
            out.append(d)
    return out


def _manifest_files(directory: Path, recursive: bool) -> list[Path]:
    pattern = "**/*" if recursive else "*"
    files = sorted(p for p in directory.glob(pattern) if p.is_file() and not p.name.startswith("."))
    bad = [p for p in files if p.suffix.lower() not in MANIFEST_SUFFIXES]
    if bad:
        raise InvalidResource(
            f"{bad[0]}: not a manifest (mcpctl reads .yaml, .yml and .json files)",
            hint=f"move it out of {directory} or pass the manifests one by one with -f",
        )
    return [p for p in files if p.suffix.lower() in MANIFEST_SUFFIXES]


def load_sources(sources: Iterable[str], *, stdin: TextIO | None = None, recursive: bool = False) -> list[Document]:
    """Load every document of every `-f` source (file, directory or `-`)."""
    docs: list[Document] = []
    for src in sources:
        if src == "-":
            stream = stdin if stdin is not None else sys.stdin
            text = stream.read()
            if not text.strip():
                raise InvalidResource("no input on stdin", hint="pipe a manifest in, e.g. mcpctl get project p -o yaml | mcpctl apply -f -")
            docs.extend(parse_text(text, "<stdin>"))
            continue
        path = Path(src).expanduser()
        if path.is_dir():
            files = _manifest_files(path, recursive)
            if not files:
                raise InvalidResource(f"{src}: no .yaml, .yml or .json files in this directory")
        elif path.exists():
            if path.suffix.lower() not in MANIFEST_SUFFIXES:
                raise InvalidResource(f"{src}: not a manifest (mcpctl reads .yaml, .yml and .json files)",
                                      hint="rename it, or pipe it in with -f -")
            files = [path]
        else:
            raise InvalidResource(f"{src}: no such file or directory")
        for f in files:
            try:
                text = f.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InvalidResource(f"{f}: not a UTF-8 text file") from None
            except OSError as e:
                raise InvalidResource(f"{f}: cannot read: {e.strerror}") from None
            parsed = parse_text(text, str(f))
            if not parsed:
                raise InvalidResource(f"{f}: the file holds no documents", hint="add a Server or Project manifest")
            docs.extend(parsed)
    if not docs:
        raise InvalidResource("no documents found in the input")
    return docs


# -- dumping --------------------------------------------------------------------------------

def _yaml_out() -> YAML:
    y = YAML(typ="rt")
    y.default_flow_style = False
    y.indent(mapping=2, sequence=2, offset=0)
    y.width = 4096
    return y


def to_yaml(data: Any) -> str:
    buf = io.StringIO()
    _yaml_out().dump(data, buf)
    return buf.getvalue()


def to_yaml_documents(items: list[Any]) -> str:
    return "".join(("---\n" if i else "") + to_yaml(it) for i, it in enumerate(items))


def dump_stored(res: dict[str, Any]) -> str:
    """The on-disk form of a resource (no status: observed state lives elsewhere)."""
    return to_yaml({k: v for k, v in res.items() if k != "status"})


def load_stored(text: str, path: Path) -> dict[str, Any]:
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as e:
        raise InvalidResource(f"{path}: the stored resource is not valid YAML ({e})",
                              hint="fix or delete the file by hand") from None
    if not isinstance(data, dict):
        raise InvalidResource(f"{path}: the stored resource is not a mapping", hint="fix or delete the file by hand")
    return data
