"""Listing servers from the CLI: connect now, with a progress bar on stderr, report each failure once.

`tools list`, `tools search` and `favourites` list a project's never-listed servers by themselves
(a fresh user should not have to run `serve` first); `tools list --refresh` lists them all;
`create server` checks the server it registered.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Final

from ._common import err, storage, the_cache, the_store, warn

if TYPE_CHECKING:
    from mcpctl.gateway.refresh import Listed
    from mcpctl.presentation.catalogue import CachedCatalogue
    from mcpctl.resources.kinds import ServerSpec


def list_now(servers: Mapping[str, ServerSpec | str], what: str) -> dict[str, Listed]:
    """List `servers` once (in parallel), showing progress; every failure is warned about once."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from mcpctl.gateway.refresh import refresh

    if not servers:
        return {}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(what, total=len(servers))

        def done(r: Listed) -> None:
            bar.update(task, advance=1, description=f"{what}: {r.server} {'listed' if r.ok else 'failed'}")

        results = refresh(servers, the_store(), the_cache(), done)
    for name in servers:
        r = results.get(name)
        if r is not None and not r.ok:
            warn(f"server {name!r} failed to list: {r.error}")
    index_for_search([n for n, r in results.items() if r.ok])
    return results


# Up to this many texts to embed (about 2-8 s on one core of a shared 2-core machine), a listing
# embeds them before it returns; more are embedded by a process of their own in the background,
# so that `create server` of a large upstream returns once its tools are listed and stored.
FOREGROUND_TEXTS: Final = 128


def index_for_search(servers: list[str]) -> None:
    """Embed the listed tools for semantic search now (with the catalogue, not at the first
    search: a fresh gateway's first `search_tools` then ranks by meaning), or, for more than
    FOREGROUND_TEXTS texts or while another process embeds (a gateway embedding a large catalogue
    holds the vectors' lock for minutes: the command would wait for all of it), in a background
    process. Nothing to do without the model or for projects whose ranker is bm25."""
    from mcpctl.catalogue.rank import embedding_elsewhere
    from mcpctl.presentation.search import index_listed, pending_listed

    if not servers:
        return
    store, cache = the_store(), the_cache()
    todo = pending_listed(servers, store, cache)
    if not todo:
        return
    if todo > FOREGROUND_TEXTS or embedding_elsewhere():
        index_in_background(servers, todo)
        return
    with err.status(f"indexing {todo} tool texts for semantic search…") if err.is_terminal else nullcontext():
        index_listed(servers, store, cache)


def index_in_background(servers: Collection[str], todo: int) -> subprocess.Popen[bytes]:
    """Embed what listing `servers` needs in a process of its own (`presentation.search.index_in_background`,
    on this command's storage), and say so on stderr. Searches rank by keyword until it is done,
    and say so."""
    from mcpctl.presentation.search import index_in_background as start

    proc, log_path = start(storage().url, servers, "mcpctl.cli._storage:index_child")
    err.print(f"  indexing {todo} tool texts for semantic search in the background (pid {proc.pid}, log "
              f"{log_path}); until it is done, searches rank by keyword (BM25F) and say so", highlight=False,
              markup=False)
    return proc


def list_project_now(project: str, which: Callable[[str], bool], what: str) -> dict[str, Listed]:
    from mcpctl.presentation.catalogue import load_gateway_config

    _, servers = load_gateway_config(project, the_store())
    return list_now({n: s for n, s in servers.items() if which(n)}, what)


def listed_catalogue(project: str, *, refresh: bool = False, progress: bool = False
                     ) -> tuple[CachedCatalogue, list[str]]:
    """The project's catalogue from the cache, after listing its never-listed servers now (all of
    them with `refresh`), as the gateway's first start would, and re-reading it; with the servers
    that failed to list now. `progress`: say on a terminal that the catalogue is being read."""
    from mcpctl.presentation.catalogue import cached_catalogue

    with working(f"reading project {project}'s catalogue") if progress else nullcontext():
        cached = cached_catalogue(project, the_store(), the_cache())
    failed: list[str] = []
    if refresh or cached.unlisted:
        todo = set(cached.project.servers) if refresh else set(cached.unlisted)
        what = "listing servers" if refresh else "listing servers never listed"
        results = list_project_now(project, lambda n: n in todo, what)
        failed = [n for n, r in results.items() if not r.ok]
        cached = cached_catalogue(project, the_store(), the_cache())
    return cached, failed


def warn_unservable(cached: CachedCatalogue, failed: list[str]) -> list[str]:
    """Warn once about each server that cannot be listed (not registered, bad spec) and did not
    just fail to list; returns `failed` with them added."""
    for name, why in cached.missing.items():
        if name not in failed:
            warn(f"server {name!r} cannot be listed: {why}")
            failed.append(name)
    return failed


@contextlib.contextmanager
def working(first: str) -> Iterator[Callable[[str], None]]:
    """Say on stderr what a long command is doing: a transient status line (on a terminal only, as
    the listing's progress bar), updated with each stage the body reports; scripts see nothing."""
    if not err.is_terminal:
        yield lambda _text: None
        return
    from rich.live import Live
    from rich.spinner import Spinner

    spinner = Spinner("dots", text=f"{first}…", style="status.spinner")
    with Live(spinner, console=err, transient=True, refresh_per_second=12.5) as live:

        def stage(text: str) -> None:
            spinner.update(text=f"{text}…")
            live.refresh()          # each stage is shown, however short

        yield stage
