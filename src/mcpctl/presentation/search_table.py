"""`mcpctl tools search` on a terminal: the hits and the `--explain` table as rich tables
(`presentation.tables`), and what it says on stderr when nothing matches; the CLI prints them.
The JSON forms and the explain header are `presentation.search_explain`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mcpctl.presentation.tables import cell

if TYPE_CHECKING:
    from rich.table import Table

    from mcpctl.catalogue.rank import ToolDoc
    from mcpctl.catalogue.tool import CatalogueTool

EXPLAINED = ("FACTOR: the request's action against the tool's effect (↓: kept below the best reading tool); "
             "LEARNED: what queries that led to the tool added.")


def first_line(text: str, width: int = 90) -> str:
    """A description's first line, cut to `width` characters (… marks the cut)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def hits_table(hits: Sequence[tuple[str, float]], tools: dict[str, CatalogueTool],
               present: Callable[[str], str]) -> Table:
    """#, NAME (as a session calls it), SCORE and the description's first line, best first."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("#", "NAME", "SCORE", "DESCRIPTION"):
        table.add_column(col, justify="right" if col in ("#", "SCORE") else "left", no_wrap=col != "DESCRIPTION")
    for i, (cid, score) in enumerate(hits, start=1):
        table.add_row(str(i), cell(present(cid)), f"{score:.2f}", cell(first_line(tools[cid].description)))
    return table


def explained_table(rows: Sequence[Any], present: Callable[[str], str]) -> Table:
    """`--explain`: each hit's score and its parts: effect, action factor, BM25F, semantic, learned."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("#", "NAME", "SCORE", "EFFECT", "FACTOR", "BM25F", "SEMANTIC", "LEARNED"):
        table.add_column(col, justify="left" if col in ("NAME", "EFFECT") else "right", no_wrap=True)
    for i, e in enumerate(rows, start=1):
        factor = f"{e.factor:.2f}" + (" ↓" if e.capped else "")
        table.add_row(str(i), cell(present(e.id)), f"{e.score:.2f}", e.effect, factor, f"{e.lexical:.2f}",
                      "-" if e.semantic is None else f"{e.semantic:.2f}", f"{e.learned:+.2f}" if e.learned else "-")
    return table


def no_match_lines(project: str, query: str, docs: list[ToolDoc], *, deferred: bool, why: str, said: str
                   ) -> list[str]:
    """What a search that found nothing says (on stderr): that it did, which ranker, how to list the tools."""
    from mcpctl.presentation.builtins import no_match_text

    text = no_match_text(query, len(docs), list(dict.fromkeys(d.server for d in docs)), deferred=deferred, why=why)
    return [text.splitlines()[0], f"({said} ranker) " + " ".join(text.splitlines()[1:2]),
            f"List the tools with: mcpctl tools list --project {project}"]
