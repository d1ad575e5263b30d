"""`search_tools` in the gateway: a ranker over what a session may see, rebuilt on change.

The ranker indexes a view's `searchable` tools (the upstream tools that pass curation and the
credential view; never mcpctl's built-ins), each with what its server said about itself (its
`about` section in the catalogue cache: title, instructions), and is rebuilt off the event loop
whenever the catalogue changes, never per query. The project's `search.ranker` picks it (`auto`:
hybrid when the embedding model loads, else BM25F); the log says once which one runs. Results
carry the name the session calls the tool by (`View.present`), so a favourite comes back under
its favourite name and, in the deferred presentation, the long tail under the name `call_tool`
takes. A search that finds nothing says so, and how to find tools anyway, in a second text block
(`builtins.no_match_text`); the structured result keeps its shape.

A semantic ranker never answers lexically without saying so. Its tool vectors are computed
where the catalogue is listed (the CLI's listings: `index_listed`; the gateway builds the index
as soon as a listing changes: `ToolSearch.warm`), so they are usually ready by the first search.
When they are not, a search waits for them while at most FIRST_SEARCH_WAIT_TOOLS texts remain to
embed (at most FIRST_SEARCH_WAIT_S); otherwise, or past that, it answers with BM25F and a second
text block says the answer is keyword-only while the index warms (`WARMING_NOTE`).

Where the project learns from its use (`search.learn`, on by default where queries are recorded),
a search first reads what the log teaches (`catalogue.learn`: each recorded query followed by a
call that answered, from at least `minSessions` distinct sessions per tool, over `windowDays`),
at most every LEARN_REFRESH_S, in a worker thread; a change rebuilds the index with the learned
queries and uses (`Learning`). The log is the project's own SQLite file or the team's PostgreSQL,
so a team's gateways learn from each other's traffic.
"""

from __future__ import annotations

import functools
import logging
import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathlib import Path

    from mcpctl.audit.records import SearchEvidence
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.learn import Learned
    from mcpctl.catalogue.rank import Ranker
    from mcpctl.catalogue.tool import CatalogueTool
    from mcpctl.presentation.view import View
    from mcpctl.resources.settings import LearnSettings
    from mcpctl.resources.store import ResourceStore

log = logging.getLogger("mcpctl.gateway")

# A search that finds the tool vectors still being computed waits for them when this few texts
# remain (tools plus servers' about texts): MiniLM embeds a tool text in 20-60 ms on one core of
# the shared 2-core machine (docs/ranking.md), so 64 texts are 1.5-4 s, plus the model's first
# load (0.4-1.5 s). It waits at most FIRST_SEARCH_WAIT_S, then answers keyword-only and says so.
FIRST_SEARCH_WAIT_TOOLS: Final = 64
FIRST_SEARCH_WAIT_S: Final = 10.0
WARMING_NOTE: Final = ("This answer is keyword-only (BM25F): semantic search is still indexing this project's "
                       "{total} tools ({pending} to embed), and ranks by meaning from a later search once that "
                       "is done. If no tool here fits, search again in a moment.")


# How often a search re-reads what the log teaches (a team's other gateways write to it too).
LEARN_REFRESH_S: Final = 10.0

Evidence = Callable[..., "Sequence[SearchEvidence]"]


class Learning:
    """What one project's search learns from: its settings and the log's evidence
    (`log.search_evidence(project, since=...)`), read at most every `refresh_s`."""

    def __init__(self, project: str, settings: LearnSettings, evidence: Evidence,
                 refresh_s: float = LEARN_REFRESH_S) -> None:
        self.project = project
        self.settings = settings
        self.evidence = evidence
        self.refresh_s = refresh_s
        self.read_at = -float("inf")
        self._failed = False

    def stale(self) -> bool:
        return time.monotonic() - self.read_at >= self.refresh_s

    def read(self, known: Collection[str] | None) -> Learned | None:
        """What the log teaches now about `known` tools (None: every tool it names), or None when
        the log could not be read."""
        self.read_at = time.monotonic()
        try:
            found = read_learned(self.evidence, self.project, self.settings, known)
        except Exception as e:   # the log away (a database outage): search goes on with what it had
            if not self._failed:
                log.warning("search cannot read what it learned from the log (%s: %s); using what it had",
                            type(e).__name__, e)
            self._failed = True
            return None
        self._failed = False
        return found


def read_learned(evidence: Evidence, project: str, settings: LearnSettings, known: Collection[str] | None) -> Learned:
    """What `project`'s log (`evidence`: `log.search_evidence`) teaches about the `known` tools
    now, under `settings` (`search.learn`)."""
    from mcpctl.catalogue.learn import learn

    now = time.time()
    rows = evidence(project, since=now - settings.window_days * 86400.0)
    return learn(rows, min_sessions=settings.min_sessions, window_days=settings.window_days, now=now, known=known)


def tool_docs(tools: dict[str, CatalogueTool], cache: CatalogueCache) -> list[Any]:
    """ToolDocs of the searchable tools, with their servers' about texts (read from the cache)."""
    from mcpctl.catalogue.rank import ToolDoc

    about = cache.read_about({t.server for t in tools.values()})
    return [ToolDoc.from_wire(t.server, dict(t.wire), about[t.server], t.canonical_id) for t in tools.values()]


def index_listed(servers: Collection[str], store: ResourceStore, cache: CatalogueCache) -> int:
    """Embed now the tools a search will rank after `servers` were listed: those of every project
    with any of them (searchable in its open view, under its `search.ranker`), and of each server
    no project has yet (with its name in the text, as in a project of several servers). Returns
    how many texts were embedded (0 without the model, or when all were cached)."""
    from mcpctl.catalogue.rank import warm_index

    return sum(warm_index(docs, kind, with_server=with_server) or 0
               for docs, kind, with_server in _to_index(servers, store, cache))


def pending_listed(servers: Collection[str], store: ResourceStore, cache: CatalogueCache) -> int:
    """How many texts `index_listed(servers, store, cache)` would embed (without loading the model)."""
    from mcpctl.catalogue.rank import pending_index

    return sum(pending_index(docs, kind, with_server=with_server)[0]
               for docs, kind, with_server in _to_index(servers, store, cache))


def index_in_background(url: str | None, servers: Collection[str], entry: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a process of its own that embeds what listing `servers` needs: `entry`
    ("module:function", called with the storage URL, "" for files, and the servers' names) opens
    that process's storage, as every process root does, and calls `index_listed`. It outlives the
    command that started it, and its stderr goes to a log file. Returns the process and that file."""
    import sys

    from mcpctl import paths

    module, function = entry.split(":")
    log_path = paths.log_dir() / "indexing.log"
    paths.private_dir(log_path.parent)
    code = f"import sys\nfrom {module} import {function}\n{function}(sys.argv[1], sys.argv[2:])\n"
    with open(log_path, "ab", opener=paths.open_private) as log:
        proc = subprocess.Popen([sys.executable, "-c", code, url or "", *servers], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    return proc, log_path


def _to_index(servers: Collection[str], store: ResourceStore,
              cache: CatalogueCache) -> list[tuple[list[Any], str, bool | None]]:
    """(docs, ranker kind, with_server) of each index that listing `servers` concerns."""
    from mcpctl.catalogue.rank import DEFAULT_KIND, ToolDoc
    from mcpctl.presentation.catalogue import cached_catalogue
    from mcpctl.resources.kinds import ProjectSpec

    out, covered = [], set()
    for res in store.list("Project"):
        spec = ProjectSpec.from_resource(res)
        if not spec.search.enabled or spec.search.ranker == "bm25" or not set(spec.servers) & set(servers):
            continue
        covered |= set(spec.servers)
        view = cached_catalogue(res["metadata"]["name"], store, cache).view()
        out.append((tool_docs({t.canonical_id: t for t in view.searchable}, cache), spec.search.ranker, None))
    alone = [s for s in servers if s not in covered]
    about = cache.read_about(alone)
    docs = [ToolDoc.from_wire(s, tool, about[s]) for s in alone for tool in cache.read_server_tools(s) or []]
    return [*out, (docs, DEFAULT_KIND, True)]


def _close(ranker: Ranker | None) -> None:
    close = getattr(ranker, "close", None)      # (a HybridRanker; the lexical one has nothing to stop)
    if close is not None:
        close()


class ToolSearch:
    """The ranker over one catalogue's searchable tools, rebuilt when they change."""

    def __init__(self, kind: str, cache: CatalogueCache, learning: Learning | None = None) -> None:
        """`cache`: where the servers' about texts are read from when the index is built."""
        from mcpctl.catalogue.learn import NOTHING

        self.kind = kind
        self.cache = cache
        self.learning = learning
        self.learned = NOTHING
        self._ranker: Ranker | None = None
        self._tools: dict[str, CatalogueTool] = {}
        self._built: tuple[int, str | None, int] | None = None
        self._said: str | None = None
        self._warming = False
        self._next: tuple[int, View] | None = None
        self._closed = False
        import anyio  # (not at module level: the early stdio front must not import anyio)

        self._lock = anyio.Lock()
        self._reading: anyio.Event | None = None     # set when the read of what was learned in flight ends
        self._read_once = False

    @property
    def ranker(self) -> Ranker | None:
        return self._ranker

    def describe(self) -> str:
        """What runs, e.g. `auto: hybrid` (or the kind asked for, before the first build)."""
        from mcpctl.catalogue.rank import describe

        return describe(self._ranker, self.kind) if self._ranker is not None else self.kind

    async def learn(self) -> None:
        """Read what the log teaches, when it is time to (in a worker thread). One read at a time:
        until the first has ended, a search waits for it (a search racing the gateway's warm-up
        would otherwise rank without what was learned); a later refresh in flight answers with
        what the last read taught."""
        learning = self.learning
        if learning is None:
            return
        reading = self._reading
        if reading is not None:
            if not self._read_once:
                await reading.wait()
            return
        if not learning.stale():
            return
        import anyio.to_thread

        self._reading = reading = anyio.Event()
        try:
            # every tool the log names, not only those listed yet: an upstream still connecting is
            # listed later, and what was learned for it applies then (`Learned.apply`)
            found = await anyio.to_thread.run_sync(learning.read, None)
            if found is not None:
                self.learned = found
        finally:
            self._read_once = True
            self._reading = None
            reading.set()

    async def ensure(self, version: int, view: View) -> None:
        """Rebuild the index in a worker thread if the catalogue (or what was learned) changed
        since the last build."""
        learned = self.learned
        # the gate does not change what is searchable
        key = (version, view.session.profile, hash(learned.key()))
        if self._built == key:
            return
        async with self._lock:
            if self._built == key:
                return
            from mcpctl.catalogue.rank import build_ranker, ranked_by  # loaded on the first search

            tools = {t.canonical_id: t for t in view.searchable}
            import anyio.to_thread

            docs = learned.apply(await anyio.to_thread.run_sync(tool_docs, tools, self.cache))
            # Shielded: a ranker built as the gateway stops is adopted and closed below, never
            # dropped with its embedding thread still running.
            with anyio.CancelScope(shield=True):
                ranker = await anyio.to_thread.run_sync(functools.partial(build_ranker, docs, self.kind, wait=False))
            _close(self._ranker)       # its vectors, if still computing, are no longer wanted
            self._ranker, self._tools, self._built = ranker, tools, key
            if self._closed:
                _close(ranker)
            said = f"search_tools ranks with {ranked_by(ranker, self.kind)}"
            if said != self._said:      # once, and again only if it changes (the model installed)
                self._said = said
                log.info("%s", said)

    def close(self) -> None:
        """The gateway is stopping, or this search was replaced: a background embedding stops
        (what it computed stays in the cache)."""
        self._closed = True
        _close(self._ranker)

    async def warm(self, version: int, view: View) -> None:
        """Build the index of catalogue `version` now (the gateway calls this once a listing that
        changed the catalogue is in the cache, about texts included), so that its vectors are
        computed before the first search. Calls made while one runs coalesce: the latest is
        built next."""
        self._next = (version, view)
        if self._warming:
            return
        self._warming = True
        try:
            while self._next is not None:
                target, self._next = self._next, None
                if self._built is None or target[0] >= self._built[0]:   # never an older catalogue
                    await self.learn()
                    await self.ensure(*target)
        except Exception:   # search builds it again at the first query, and reports there
            log.exception("building the search index failed")
        finally:
            self._warming = False

    async def _ranked(self, query: str, top_k: int) -> tuple[list[tuple[str, float]], bool]:
        """(hits, whether a lexical answer stands in for a semantic ranker still warming)."""
        ranker = self._ranker
        if ranker is None:
            return [], False
        if getattr(ranker, "kind", "bm25") == "bm25":
            return ranker.search(query, top_k), False       # well under a millisecond
        import anyio.to_thread  # a model pass: keep the loop free

        wait = getattr(ranker, "wait_ready", None)     # (a HybridRanker: semantic is not imported here)
        if wait is not None and ranker.warming and ranker.pending <= FIRST_SEARCH_WAIT_TOOLS:  # type: ignore[attr-defined]
            await anyio.to_thread.run_sync(wait, FIRST_SEARCH_WAIT_S)
        search_with = getattr(ranker, "search_with", None)
        if search_with is None:
            return await anyio.to_thread.run_sync(ranker.search, query, top_k), False
        hits, semantic = await anyio.to_thread.run_sync(search_with, query, top_k)
        return hits, not semantic

    async def search(self, version: int, view: View, query: str, top_k: int) -> dict[str, Any]:
        """`{tools: [{name, description, inputSchema, score}], total_searched}` (a SearchPayload:
        with a `note` when nothing matched, or when the answer is keyword-only while the index
        warms)."""
        from mcpctl.presentation.builtins import SearchPayload, no_match_text

        await self.learn()
        await self.ensure(version, view)
        hits, lexical = await self._ranked(query, top_k)
        tools = []
        for cid, score in hits:
            tool, name = self._tools.get(cid), view.present(cid)
            if tool is None or name is None:
                continue
            tools.append({"name": name, "description": tool.description,
                          "inputSchema": tool.wire.get("inputSchema") or {"type": "object"},
                          "score": round(float(score), 6)})
        payload = SearchPayload(tools=tools, total_searched=len(self._tools))
        if not tools:
            payload.note = no_match_text(query, len(self._tools), list(dict.fromkeys(t.server for t in self._tools.values())),
                                         deferred=view.mode == "deferred", why=self._why_lexical())
        elif lexical and getattr(self._ranker, "warming", False):
            payload.note = WARMING_NOTE.format(total=len(self._tools), pending=getattr(self._ranker, "pending", "some"))
        elif lexical:
            payload.note = f"This answer is keyword-only (BM25F): {self._why_lexical()}."
        return payload

    def _why_lexical(self) -> str | None:
        """Why this search is keyword-only, when it is."""
        ranker = self._ranker
        if ranker is None:
            return None
        if getattr(ranker, "kind", "bm25") == "bm25":
            return getattr(ranker, "fallback", None) or f"search.ranker: {self.kind}"
        if getattr(ranker, "warming", False):
            return "semantic search is still indexing the tools"
        if not getattr(ranker, "ready", True):
            return "embedding the tools failed; see the gateway's log"
        return None
