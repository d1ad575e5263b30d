"""`ask`'s retrieval scored on a fixed dataset (`mcpctl eval --dataset tests/fixtures/ask`).

An ask dataset is a folder with `queries.jsonl` (`{id, text, uris}`: the resources that answer
the question, any one will do) and one or more other `*.jsonl` files of resources
(`{server, uri, name, text}`), and no `tools.jsonl`. The resources are cut into passages and
indexed exactly as the gateway does (`ask.index.PassageIndex`); a question's ranking is the
resources of its ranked passages, each counted at its best passage, so R@k is "a passage of an
answering resource is among the first k resources found".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcpctl.ask.index import PassageIndex
from mcpctl.errors import MCPCtlError
from mcpctl.evaluation.datasets import Query, _records
from mcpctl.evaluation.evaluate import Result

QUERIES = "queries.jsonl"


@dataclass(frozen=True)
class Resource:
    server: str
    uri: str
    name: str
    text: str


@dataclass(frozen=True)
class AskDataset:
    name: str
    resources: tuple[Resource, ...]
    queries: tuple[Query, ...]


def is_ask_dataset(folder: Path) -> bool:
    return (folder / QUERIES).is_file() and not (folder / "tools.jsonl").exists()


def load_ask_dataset(folder: Path | str) -> AskDataset:
    """Raises MCPCtlError naming the file and line of a bad record."""
    folder = Path(folder)
    resources: list[Resource] = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name == QUERIES:
            continue
        for line, rec in _records(path):
            try:
                resources.append(Resource(str(rec["server"]), str(rec["uri"]), str(rec.get("name") or rec["uri"]),
                                          str(rec["text"])))
            except KeyError as e:
                raise MCPCtlError(f"{path}:{line}: a resource needs {e.args[0]!r}",
                                  hint="each line is {\"server\", \"uri\", \"name\", \"text\"}") from None
    known = {r.uri for r in resources}
    queries: list[Query] = []
    qpath = folder / QUERIES
    for line, rec in _records(qpath):
        uris = rec.get("uris")
        if not isinstance(uris, list) or not uris or not isinstance(rec.get("text"), str):
            raise MCPCtlError(f"{qpath}:{line}: a question needs \"text\" and a non-empty list \"uris\"")
        missing = [u for u in uris if u not in known]
        if missing:
            raise MCPCtlError(f"{qpath}:{line}: no resource {missing[0]!r} in {folder}")
        queries.append(Query(str(rec.get("id", line)), rec["text"], (frozenset(uris),)))
    if not resources:
        raise MCPCtlError(f"no resources in {folder}", hint="add *.jsonl files of {server, uri, name, text}")
    return AskDataset(folder.name, tuple(resources), tuple(queries))


class ResourceRanker:
    """The passage index as a ranker of resource URIs (for `evaluation.evaluate`)."""

    def __init__(self, resources: Sequence[Resource], kind: str) -> None:
        self.index = PassageIndex(kind, max_bytes=2**30)
        for r in resources:
            self.index.put(r.server, r.uri, r.name, r.text)
        ranker, _ = self.index.ranker()
        self.kind = getattr(ranker, "kind", kind)
        self.fallback = getattr(ranker, "fallback", None)

    def __len__(self) -> int:
        return len(self.index)

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        out: dict[str, float] = {}
        for hit in self.index.search(query, len(self.index)):
            if hit.passage.uri not in out:
                out[hit.passage.uri] = hit.score
                if len(out) >= top_k:
                    break
        return list(out.items())


def evaluate_ask(ds: AskDataset, kind: str) -> Result:
    """R@k etc. of ask's retrieval with a `kind` ranker (the TOOLS column counts passages)."""
    from mcpctl.evaluation.evaluate import evaluate

    ranker = ResourceRanker(ds.resources, kind)
    label = ranker.kind if ranker.kind == kind else f"{kind}->{ranker.kind}"
    return Result(f"ask:{ds.name}", label, "all", len(ds.queries), len(ranker), evaluate(ranker, ds.queries))
