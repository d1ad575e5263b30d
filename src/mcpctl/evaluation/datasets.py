"""Evaluation datasets: a folder with tools.jsonl and queries.jsonl (the shared data format).

- tools.jsonl: {"server", "name", "description", "inputSchema"}, optionally "title" and
  "annotations" (as listed); a tool's id is server + "/" + name (never split an id on "/": names
  may contain it).
- servers.jsonl (optional): {"server", "name", "title", "description", "instructions"}: what
  each server said about itself when listed; ranked as a low-weight field of its tools.
- queries.jsonl: {"id", "query", "relevant_groups": [[ids], ...], ...}; gold is
  relevant_groups. A query's portion is `dev` or `test`: from `split` (train/dev -> dev,
  test -> test) or from `fold` (TEST_FOLD -> test, other folds -> dev); a dataset with neither
  is all test (report on it, never tune on it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from mcpctl.catalogue.cache import about_text
from mcpctl.catalogue.rank import ToolDoc
from mcpctl.errors import InvalidResource, NotFound

TEST_FOLD: Final = 4
PORTIONS: Final = ("test", "dev", "all")


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    groups: tuple[frozenset[str], ...]
    portion: str | None = None    # "dev" | "test" | None (no split: all queries are test)


@dataclass(frozen=True)
class Dataset:
    name: str
    tools: tuple[ToolDoc, ...]
    queries: tuple[Query, ...]

    def select(self, portion: str) -> list[Query]:
        """The queries of a portion: test | dev | all."""
        if portion == "all":
            return list(self.queries)
        if portion == "test":
            return [q for q in self.queries if q.portion in ("test", None)]
        if portion == "dev":
            return [q for q in self.queries if q.portion == "dev"]
        raise ValueError(f"unknown portion {portion!r}; expected one of: {', '.join(PORTIONS)}")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidResource(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(rec, dict):
                raise InvalidResource(f"{path}:{lineno}: expected a JSON object")
            yield lineno, rec


def _portion(rec: dict[str, Any]) -> str | None:
    split = rec.get("split")
    if isinstance(split, str):
        return "test" if split == "test" else "dev"
    fold = rec.get("fold")
    if isinstance(fold, int):
        return "test" if fold == TEST_FOLD else "dev"
    return None


def load_servers(path: Path) -> dict[str, str]:
    """server -> its about text, from servers.jsonl ({} when the file is absent)."""
    if not path.is_file():
        return {}
    about: dict[str, str] = {}
    for lineno, rec in _records(path):
        server = rec.get("server")
        if not isinstance(server, str):
            raise InvalidResource(f"{path}:{lineno}: a server needs a string field 'server'")
        about[server] = about_text([rec])
    return about


def load_tools(path: Path, about: dict[str, str] | None = None) -> list[ToolDoc]:
    about = about or {}
    tools: list[ToolDoc] = []
    for lineno, rec in _records(path):
        server, name = rec.get("server"), rec.get("name")
        if not isinstance(server, str) or not isinstance(name, str):
            raise InvalidResource(f"{path}:{lineno}: a tool needs string fields 'server' and 'name'")
        tools.append(ToolDoc.from_wire(server, rec, about.get(server, "")))
    return tools


def load_queries(path: Path, known_ids: set[str] | None = None) -> list[Query]:
    queries: list[Query] = []
    for lineno, rec in _records(path):
        text = rec.get("query")
        raw_groups = rec.get("relevant_groups")
        if raw_groups is None and isinstance(rec.get("relevant"), list):
            raw_groups = [[tool] for tool in rec["relevant"]]
        if not isinstance(text, str) or not isinstance(raw_groups, list):
            raise InvalidResource(f"{path}:{lineno}: a query needs 'query' and 'relevant_groups'")
        groups = tuple(frozenset(str(t) for t in g) for g in raw_groups if isinstance(g, list) and g)
        if not groups:
            raise InvalidResource(f"{path}:{lineno}: query has no gold group")
        if known_ids is not None:
            unknown = sorted(t for g in groups for t in g if t not in known_ids)
            if unknown:
                raise InvalidResource(f"{path}:{lineno}: gold tool {unknown[0]!r} is not in tools.jsonl")
        queries.append(Query(str(rec.get("id", lineno)), text, groups, _portion(rec)))
    return queries


def load_dataset(folder: Path | str) -> Dataset:
    """Load a dataset folder.

    Raises:
        NotFound: the folder or one of its two files is missing.
        InvalidResource: a line is not valid.
    """
    folder = Path(folder)
    for file in ("tools.jsonl", "queries.jsonl"):
        if not (folder / file).is_file():
            raise NotFound(f"{folder / file} not found",
                           hint="a dataset folder holds tools.jsonl and queries.jsonl (see docs/ranking.md)")
    tools = load_tools(folder / "tools.jsonl", load_servers(folder / "servers.jsonl"))
    queries = load_queries(folder / "queries.jsonl", {t.id for t in tools})
    return Dataset(folder.resolve().name, tuple(tools), tuple(queries))


def find_datasets(root: Path | str) -> list[Path]:
    """The dataset folders directly under `root` (each with tools.jsonl and queries.jsonl)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "tools.jsonl").is_file() and (p / "queries.jsonl").is_file())


def replicate(tools: Sequence[ToolDoc], size: int) -> list[ToolDoc]:
    """A catalogue of `size` tools made of copies of `tools` on renamed servers (for benchmarks)."""
    if not tools:
        raise ValueError("nothing to replicate")
    out: list[ToolDoc] = []
    copy = 0
    while len(out) < size:
        for t in tools[: size - len(out)]:
            server = t.server if copy == 0 else f"{t.server}-{copy}"
            out.append(replace(t, id=f"{server}/{t.name}", server=server))
        copy += 1
    return out
