"""Listing servers from the CLI: connect now, with a progress bar on stderr, report each failure once.

`tools list`, `tools search` and `favourites` list a project's never-listed servers by themselves
(a fresh user should not have to run `serve` first); `tools list --refresh` lists them all;
`create server` checks the server it registered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING

from ._common import err, the_store, warn

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

        results = refresh(servers, the_store(), done)
    for name in servers:
        r = results.get(name)
        if r is not None and not r.ok:
            warn(f"server {name!r} failed to list: {r.error}")
    index_for_search([n for n, r in results.items() if r.ok])
    return results


def index_for_search(servers: list[str]) -> None:
    """Embed the listed tools for semantic search now (with the catalogue, not at the first
    search: a fresh gateway's first `search_tools` then ranks by meaning). Nothing to do without
    the model or for projects whose ranker is bm25."""
    from mcpctl.presentation.search import index_listed

    if not servers:
        return
    with err.status("indexing the tools for semantic search…") if err.is_terminal else nullcontext():
        index_listed(servers, the_store())


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
        cached = cached_catalogue(project, the_store())
    failed: list[str] = []
    if refresh or cached.unlisted:
        todo = set(cached.project.servers) if refresh else set(cached.unlisted)
        what = "listing servers" if refresh else "listing servers never listed"
        results = list_project_now(project, lambda n: n in todo, what)
        failed = [n for n, r in results.items() if not r.ok]
        cached = cached_catalogue(project, the_store())
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
