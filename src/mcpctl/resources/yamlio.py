"""Reading manifests (YAML or JSON; files, directories, stdin) and writing resources.

Loading keeps each document's position (source, document number, line of every field) so a
validation error can point at the line. Dumping is deterministic: the same object always
gives the same bytes, keys in the order apiVersion, kind, metadata, spec, status.

What is refused before it is stored (size, nesting, alias expansion, duplicate JSON keys) and
the guards that check it are in `limits`; the guards are called from here.
"""

from __future__ import annotations

import functools
import io
import json
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import MaxDepthExceededError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from mcpctl.errors import InvalidResource
from mcpctl.resources.limits import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    MAX_INPUT_BYTES,
    MAX_TOTAL_BYTES,
    DuplicateKey,
    GuardedComposer,
    Refused,
    check_input_size,
    check_yaml_documents,
    document_too_big,
    json_depth,
    json_duplicate,
    line_col,
    mib,
    too_big_input,
    unique_pairs,
)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# Characters that neither YAML nor JSON allow anywhere: their presence means binary input.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


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


def _not_text(source: str, text: str) -> InvalidResource | None:
    """A control character YAML and JSON both forbid: the input is binary, not a manifest."""
    m = _CONTROL_RE.search(text)
    if m is None:
        return None
    line, col = line_col(text, m.start())
    return InvalidResource(
        f"{source}: not a text file: it holds the control character U+{ord(m.group()):04X} at line {line}, "
        f"column {col}, which neither YAML nor JSON allows",
        hint="pass a YAML or JSON manifest (is this a binary file?)")


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidResource(f"{source}: not a text file: byte 0x{data[e.start]:02x} at offset {e.start} is not "
                              "UTF-8", hint="pass a YAML or JSON manifest in UTF-8 (is this a binary file?)") from None


def _yaml_error(source: str, e: YAMLError, text: str) -> InvalidResource:
    if isinstance(e, ReaderError):     # a character YAML does not allow: not a text manifest
        index = e.position if isinstance(e.position, int) else 0
        line, col = line_col(text, min(index, len(text)))
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        return InvalidResource(f"{source}, line {line}, column {col}: not a text file: YAML does not allow "
                               f"the character {char}", hint="pass a YAML or JSON manifest (is this a binary file?)")
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    where = source
    hint = "fix the YAML syntax there"
    if mark is not None:
        where += f", line {mark.line + 1}, column {mark.column + 1}"
        # The document number: '---' separators before the error line (a leading one opens doc 1).
        lines = text.splitlines()
        seps = [i for i, ln in enumerate(lines) if ln.rstrip() == "---" or ln.startswith("--- ")]
        first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), 0)
        doc = sum(1 for i in seps if i < mark.line) + (0 if seps and seps[0] <= first else 1)
        where = f"{source}, document {max(doc, 1)}" + where[len(source):]
        # A tab where YAML wants spaces: in the line's indentation, or at the very spot of the error.
        line_text = lines[mark.line] if 0 <= mark.line < len(lines) else ""
        indent = line_text[:len(line_text) - len(line_text.lstrip(" \t"))]
        if "\t" in indent and mark.column <= len(indent):
            hint = "YAML does not allow tab characters for indentation: indent with spaces"
        elif line_text[mark.column:mark.column + 1] == "\t":
            hint = "YAML does not allow a tab character there: use spaces"
    return InvalidResource(f"{where}: invalid YAML: {problem}", hint=hint)


def _parse_json(text: str, source: str) -> list[Document]:
    try:
        data = json.loads(text, object_pairs_hook=unique_pairs)
    except DuplicateKey as e:
        found = json_duplicate(text)
        key = found[0] if found else str(e)
        at = f", line {found[1]}" if found else ""
        first = f" (first at line {found[2]})" if found else ""
        raise InvalidResource(f"{source}{at}: invalid JSON: duplicate key {key!r}{first}",
                              hint="keep one of them: a key may appear once in an object") from None
    except RecursionError:
        raise InvalidResource(f"{source}: invalid JSON: nested more than {MAX_DEPTH} levels deep",
                              hint="a manifest is a few levels deep: check the brackets") from None
    items = data if isinstance(data, list) else [data]
    docs = [Document(source, i + 1, d) for i, d in enumerate(items)]
    big = len(text) > MAX_DOCUMENT_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES
    for d in docs:
        if json_depth(d.data) > MAX_DEPTH:
            raise InvalidResource(f"{d.where()}: invalid JSON: nested more than {MAX_DEPTH} levels deep",
                                  hint="a manifest is a few levels deep: check the brackets")
        if big:
            size = len(json.dumps(d.data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
            if size > MAX_DOCUMENT_BYTES:
                raise document_too_big(source, d.index, None, size)
    return docs


def _loader() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Composer = GuardedComposer
    yaml.max_depth = MAX_DEPTH
    return yaml


def parse_text(text: str, source: str) -> list[Document]:
    """Parse a YAML (multi-document) or JSON text into documents; `List` kinds are expanded.

    Refused with an InvalidResource naming the source (and document and line where known):
    binary input, input over MAX_INPUT_BYTES, a document over MAX_DOCUMENT_BYTES or nested
    deeper than MAX_DEPTH, aliases that expand past those limits or refer to themselves,
    and duplicate keys (YAML and JSON alike)."""
    if not text.strip():
        return []
    check_input_size(text, source)
    bad = _not_text(source, text)
    if bad is not None:
        raise bad
    stripped = text.lstrip()
    json_error: InvalidResource | None = None
    if source.endswith(".json") or stripped.startswith(("{", "[")):
        try:
            return _expand_lists(_parse_json(text, source))
        except json.JSONDecodeError as e:
            json_error = InvalidResource(f"{source}, line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}",
                                         hint="fix the JSON syntax there")
            if source.endswith(".json"):
                raise json_error from None
            # maybe YAML flow style: fall through
    check_yaml_documents(text, source)
    yaml = _loader()
    try:
        docs = [Document(source, i + 1, _plain(n), n) for i, n in enumerate(yaml.load_all(text)) if n is not None]
    except Refused as e:
        at = f", line {e.line}" if e.line is not None else ""
        raise InvalidResource(f"{source}, document {e.document}{at}: {e.message}", hint=e.hint) from None
    except MaxDepthExceededError as e:
        mark = e.problem_mark
        document = getattr(getattr(yaml, "_composer", None), "document", 0) or 1
        at = f", line {mark.line + 1}" if mark is not None else ""
        raise InvalidResource(f"{source}, document {document}{at}: nested more than {MAX_DEPTH} levels deep",
                              hint="a manifest is a few levels deep: check the brackets and indentation") from None
    except (MarkedYAMLError, YAMLError) as e:
        raise (json_error or _yaml_error(source, e, text)) from None
    except RecursionError:   # pragma: no cover - the limits above come first
        raise InvalidResource(f"{source}: nested too deeply to read",
                              hint=f"a manifest may be nested at most {MAX_DEPTH} levels deep") from None
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


def _manifest_files(directory: Path, recursive: bool) -> tuple[list[Path], list[Path]]:
    """(manifests, other files) in `directory`, sorted; hidden files and directories are ignored."""
    pattern = "**/*" if recursive else "*"
    files = sorted(p for p in directory.glob(pattern)
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts))
    manifests = [p for p in files if p.suffix.lower() in MANIFEST_SUFFIXES]
    return manifests, [p for p in files if p.suffix.lower() not in MANIFEST_SUFFIXES]


def skipped_message(paths: list[Path], shown: int = 10) -> str:
    """One line for the files of a directory that were not read (they are not manifests)."""
    names = ", ".join(str(p) for p in paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
    n = len(paths)
    return f"skipped {n} file{'s' if n != 1 else ''} that {'are' if n != 1 else 'is'} not .yaml, .yml or .json: {names}"


class _Budget:
    """What one command may read in all: MAX_TOTAL_BYTES."""

    def __init__(self) -> None:
        self.left = MAX_TOTAL_BYTES

    def take(self, n: int, source: str) -> None:
        self.left -= n
        if self.left < 0:
            raise InvalidResource(f"{source}: the inputs hold more than the {mib(MAX_TOTAL_BYTES)} mcpctl reads in "
                                  "one command", hint="apply them in several commands")


def _read_file(path: Path, budget: _Budget) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise too_big_input(str(path), size)
        with path.open("rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as e:
        raise InvalidResource(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise too_big_input(str(path))
    budget.take(len(data), str(path))
    return _decode(data, str(path))


def _read_stdin(stream: TextIO, budget: _Budget) -> str:
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        data = raw.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise too_big_input("<stdin>")
        budget.take(len(data), "<stdin>")
        return _decode(data, "<stdin>")
    try:
        text = stream.read(MAX_INPUT_BYTES + 1)
    except UnicodeDecodeError:
        raise InvalidResource("<stdin>: not a text file: it is not UTF-8",
                              hint="pass a YAML or JSON manifest in UTF-8") from None
    check_input_size(text, "<stdin>")
    budget.take(len(text), "<stdin>")
    return text


def load_sources(sources: Iterable[str], *, stdin: TextIO | None = None, recursive: bool = False,
                 on_skip: Callable[[list[Path]], None] | None = None) -> list[Document]:
    """Load every document of every `-f` source (file, directory or `-`).

    In a directory only `.yaml`, `.yml` and `.json` files are read (as kubectl does); the other
    files are passed to `on_skip` (one call per directory), so the caller can say so."""
    docs: list[Document] = []
    budget = _Budget()
    for src in sources:
        if src == "-":
            text = _read_stdin(stdin if stdin is not None else sys.stdin, budget)
            if not text.strip():
                raise InvalidResource("no input on stdin", hint="pipe a manifest in, e.g. mcpctl get project p -o yaml | mcpctl apply -f -")
            docs.extend(parse_text(text, "<stdin>"))
            continue
        path = Path(src).expanduser()
        if path.is_dir():
            files, others = _manifest_files(path, recursive)
            if others and on_skip is not None:
                on_skip(others)
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
            parsed = parse_text(_read_file(f, budget), str(f))
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


def dump_stored(res: dict[str, Any]) -> str:
    """The on-disk form of a resource (no status: observed state lives elsewhere)."""
    return to_yaml({k: v for k, v in res.items() if k != "status"})


@functools.cache
def _c_loader() -> bool:
    """True when ruamel's C parser (ruamel.yaml.clib, a dependency where it has wheels) is installed."""
    import importlib.util

    return importlib.util.find_spec("_ruamel_yaml") is not None


_stored_loaders = threading.local()


def _stored_loader() -> YAML:
    """This thread's loader of stored resources: building one costs as much as parsing a small
    file (a project of 6,620 servers read them in 2.8 s with a loader each, 1.9 s with one)."""
    loader: YAML | None = getattr(_stored_loaders, "yaml", None)
    if loader is None:
        loader = _stored_loaders.yaml = YAML(typ="safe", pure=not _c_loader())
    return loader


def load_stored(text: str, path: Path) -> dict[str, Any]:
    """A stored resource (mcpctl wrote it: plain YAML), with the C parser where it is installed:
    2-3x faster, which a store of thousands of servers feels in every command that reads it."""
    try:
        data = _stored_loader().load(text)
    except YAMLError as e:
        raise InvalidResource(f"{path}: the stored resource is not valid YAML ({e})",
                              hint="fix or delete the file by hand") from None
    if not isinstance(data, dict):
        raise InvalidResource(f"{path}: the stored resource is not a mapping", hint="fix or delete the file by hand")
    return data
