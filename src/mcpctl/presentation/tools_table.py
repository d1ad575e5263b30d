"""`mcpctl tools list` and `tools show` on a terminal: the rows of `presentation.tools.tool_rows`
as a rich table (`-o wide`: with each tool's effect and description) and the flagged tools it says
after it; one tool upstream, overridden and as the agent sees it (`presentation.tool_override`'s
comparison) side by side. The CLI prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpctl.presentation.tables import Part, cell

if TYPE_CHECKING:
    from rich.table import Table

    from mcpctl.catalogue.poison import Flag


def _hint(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _state(r: dict[str, Any], mark: str) -> str:
    state: str = r["state"] if r["listed"] or r["state"] != "enabled" else "via search"
    if r["pinned"]:
        state += f", {r['pinned']} (tools changes)"
    if r["flags"]:
        state += f", {mark} flagged"
    if r["overridden"]:
        state += ", overridden"
    return state


def tools_table(rows: list[dict[str, Any]], *, wide: bool) -> Table:
    """SERVER, CANONICAL ID, PRESENTED NAME, STATE, ★, READ-ONLY, DESTRUCTIVE (and EFFECT, DESCRIPTION)."""
    from rich.table import Table

    from mcpctl.catalogue.poison.flags import MARK

    table = Table(box=None, pad_edge=False, header_style="bold")
    cols = ["SERVER", "CANONICAL ID", "PRESENTED NAME", "STATE", "★", "READ-ONLY", "DESTRUCTIVE"]
    if wide:
        cols += ["EFFECT", "DESCRIPTION"]
    for c in cols:
        table.add_column(c, overflow="fold" if c == "DESCRIPTION" else "ignore", no_wrap=c != "DESCRIPTION")
    for r in rows:
        cells = [r["server"], r["canonicalId"], r["presentedName"], _state(r, MARK),
                 "★" if r["favouriteName"] else "", _hint(r["readOnly"]), _hint(r["destructive"])]
        if wide:
            effect = r["effect"]
            cells += [f"{effect['class']} ({effect['source']})" if effect["class"] else "-",
                      r["description"].split("\n", 1)[0][:120]]
        table.add_row(*map(cell, cells))
    return table


def flagged(rows: list[dict[str, Any]]) -> dict[str, list[Flag]]:
    """The flagged tools of `rows` and their flags, by canonical id."""
    from mcpctl.catalogue.poison import Flag

    return {r["canonicalId"]: [Flag(r["canonicalId"], f["kind"], f["why"], f["text"]) for f in r["flags"]]
            for r in rows if r["flags"]}


def override_parts(data: dict[str, Any]) -> list[Part]:
    """`tools show`: the tool's id and presented name, then FIELD, UPSTREAM, OVERRIDE, AGENT SEES."""
    from rich.table import Table

    from mcpctl.presentation.tool_override import comparison_rows

    table = Table(box=None, pad_edge=False, header_style="bold", show_lines=False)
    for c in ("FIELD", "UPSTREAM", "OVERRIDE", "AGENT SEES"):
        table.add_column(c, overflow="fold", no_wrap=c == "FIELD")
    for row in comparison_rows(data):
        table.add_row(*(cell(text) for text in row))
    name = data["presentedName"] or "not presented in this project"
    return [f"{cell(data['canonicalId'])} (presented as {cell(name)})", table]
