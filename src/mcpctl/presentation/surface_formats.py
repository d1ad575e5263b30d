"""`mcpctl surface`'s report as data and text: its JSON (keys pinned by a test) and its markdown
(a pull-request comment), and the sentences the terminal table shares with them.

No rich, no typer: `cli/surface.py` renders the table and prints what these return.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:      # the CLI imports this module at its start: nothing heavy at load
    from mcpctl.presentation.surface_report import SurfaceReport, ToolSurface

TABLE_PAIRS: Final = 12         # near-duplicate pairs shown in full by the table and markdown (json: all)


def _tool_json(t: ToolSurface) -> dict[str, Any]:
    return {
        "id": t.id, "server": t.server, "name": t.name, "enabled": t.enabled, "listed": t.listed,
        "favourite": t.favourite, "tokens": t.tokens,
        "reach": {"kinds": list(t.reach.kinds), "source": t.reach.source, "evidence": t.reach.evidence},
        "calls": t.calls, "failed": t.failed, "neighbour": t.neighbour, "lastCall": t.last_call,
        "profiles": {p: {"visible": v, "calls": t.profile_calls.get(p, 0)} for p, v in t.profiles.items()},
    }


def report_json(r: SurfaceReport) -> dict[str, Any]:
    """The machine-readable report (its keys never depend on the values; a test pins them)."""
    from mcpctl.catalogue.judge import ANNOTATION_NOTE, SIMILARITY_METHOD
    from mcpctl.catalogue.poison import MAX_DESCRIPTION

    cur = r.current
    writers = r.write_reach
    return {
        "project": r.project,
        "presentation": r.presentation,
        "gate": r.gate,
        "tokens": {"label": r.tokenizer.label, "encoding": r.tokenizer.kind, "approximate": True,
                   "counted": "compact JSON of each listed definition's name, description, inputSchema and "
                              "annotations, as presented"},
        "window": {"days": r.window_days, "since": r.since, "until": r.until},
        "total": {"servers": len(r.servers), "tools": len(r.tools), "enabled": len(r.enabled),
                  "listed": cur.listed, "tokens": cur.tokens},
        "servers": [{"name": s.name, "status": s.status, "tools": s.tools, "enabled": s.enabled, "listed": s.listed,
                     "tokens": s.tokens, "share": round(s.share, 4), "fullTokens": s.full_tokens, "calls": s.calls}
                    for s in r.servers],
        "builtins": {"listed": r.builtins_listed, "tokens": r.builtins_tokens,
                     "share": round(r.builtins_tokens / cur.tokens, 4) if cur.tokens else 0.0},
        "modes": [{"mode": m.mode, "current": m.current, "listed": m.listed, "tokens": m.tokens, "bytes": m.bytes,
                   "instructionsTokens": m.instructions_tokens} for m in r.modes],
        # tools.overrides: the project's presentation as the servers wrote the tools, and as reworded
        "overrides": {"tools": r.overrides.tools if r.overrides else 0,
                      "before": r.overrides.before if r.overrides else cur.tokens, "after": cur.tokens},
        "writeReach": {"count": len(writers), "byAnnotations": sum(t.reach.source == "annotations" for t in writers),
                       "byHeuristic": sum(t.reach.source == "heuristic" for t in writers),
                       "tools": [t.id for t in writers], "note": ANNOTATION_NOTE},
        "collisions": [{"name": c.name, "ids": list(c.ids)} for c in r.collisions],
        "nearDuplicates": {"threshold": r.threshold, "method": SIMILARITY_METHOD, "total": r.near_duplicate_total,
                           "pairs": [{"a": p.a, "b": p.b, "score": p.score, "sameName": p.same_name,
                                      "descriptionA": p.description_a, "descriptionB": p.description_b}
                                     for p in r.near_duplicates]},
        "suspicious": {"maxDescription": MAX_DESCRIPTION, "tools": len({f.tool for f in r.suspicious}),
                       "flags": [{"tool": f.tool, "kind": f.kind, "why": f.why, "text": f.text}
                                 for f in r.suspicious]},
        "use": {"calls": r.calls, "failed": r.failed, "neighbour": r.neighbour, "flagged": r.flagged,
                "neverCalled": [t.id for t in r.never_called],
                "neighbourPairs": [{"first": p.first, "then": p.then, "calls": p.calls} for p in r.neighbour_pairs],
                "unknown": dict(r.unknown_calls)},
        "numbers": {"visibleTools": cur.listed, "writeReach": len(writers), "calls": r.calls,
                    "flaggedCalls": r.flagged,
                    "flaggedShare": None if r.flagged_share is None else round(r.flagged_share, 4)},
        "profiles": [{"name": p.name, "tools": p.tools, "writeReach": p.write_reach, "calls": p.calls}
                     for p in r.profiles],
        "tools": [_tool_json(t) for t in r.tools],
        "recommendations": [{"kind": x.kind, "reason": x.reason, "command": x.command, "argv": list(x.argv),
                             "savesTokens": x.saves_tokens} for x in r.recommendations],
        "notes": list(r.notes),
    }


def pct(x: float | None) -> str:
    """A share as a percentage: "-" for none, "<1%" for a sliver."""
    return "-" if x is None else f"{x:.0%}" if x >= 0.01 or x == 0 else "<1%"


def when(ts: float | None) -> str:
    """A timestamp as local "YYYY-MM-DD HH:MM" ("-" for none)."""
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def headline(r: SurfaceReport) -> str:
    """The report's first line for a terminal (`mcpctl surface`): what was judged, over what window,
    and how tokens were counted."""
    return (f"Surface of project {r.project}: {r.presentation} presentation, {len(r.tools)} tools on "
            f"{len(r.servers)} server(s), {len(r.enabled)} enabled; calls from the last {r.window_days:g} days "
            f"(since {when(r.since)}). Tokens counted "
            f"{'with cl100k' if r.tokenizer.exact_encoding else 'as characters / 4'} (approximate).")


def json_lists(r: SurfaceReport) -> str:
    """What `-o json` adds to the near-duplicate pairs shown."""
    listed = len(r.near_duplicates)
    return "-o json lists them all" if listed == r.near_duplicate_total else f"-o json lists the best {listed:,}"


def one_line(text: str, limit: int = 160) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def suspicious_headline(r: SurfaceReport) -> str:
    """The sentence that opens the suspicious descriptions."""
    tools = len({f.tool for f in r.suspicious})
    return (f"Suspicious descriptions: {tools} tool(s) carry what tool poisoning uses ({len(r.suspicious)} mark(s); "
            "flagged, not blocked: read them, and disable what the server should not say)")


def numbers(r: SurfaceReport) -> list[tuple[str, str]]:
    """The three numbers to know before adding a server, each as (value, what it counts)."""
    writers = r.write_reach
    by_ann = sum(t.reach.source == "annotations" for t in writers)
    share = (f"{pct(r.flagged_share)}", f"of calls failed or were followed within a minute by a different tool of "
             f"the same server ({r.flagged} of {r.calls}: {r.failed} failed, {r.neighbour} followed by a neighbour)")
    if r.calls == 0:
        share = ("-", f"no calls in the last {r.window_days:g} days to judge picks by")
    return [
        (str(r.current.listed), f"tools visible in a typical request ({r.presentation} presentation, "
                                f"≈ {r.current.tokens:,} tokens)"),
        (str(len(writers)), f"enabled tools can write, delete or send ({by_ann} by annotations, "
                            f"{len(writers) - by_ann} by name heuristic)"),
        share,
    ]


def kinds(t: ToolSurface) -> str:
    """What a tool can do outward (write, delete, send), comma-separated."""
    return ", ".join(t.reach.kinds)


def overrides_line(r: SurfaceReport) -> str:
    """The tokens tools.overrides changed (only when the report has overrides)."""
    o = r.overrides
    assert o is not None
    saved = o.before - o.after
    change = f"{saved:,} fewer" if saved >= 0 else f"{-saved:,} more"
    return (f"Overrides: {o.tools} tool(s) reworded by tools.overrides: ≈ {o.before:,} tokens as the servers "
            f"wrote them, ≈ {o.after:,} as presented ({change}, {pct(abs(saved) / o.before if o.before else 0.0)})")


def md(text: str) -> str:
    """`text` safe in one markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(r: SurfaceReport) -> str:
    """The report as a pull-request comment (`mcpctl surface -o markdown`)."""
    cur = r.current
    lines = [f"### Tool surface: project `{r.project}`", "",
             f"{r.presentation} presentation · {len(r.tools)} tools on {len(r.servers)} server(s), "
             f"{len(r.enabled)} enabled · calls from the last {r.window_days:g} days · tokens: {r.tokenizer.label}, "
             "approximate", "", "**The three numbers**", ""]
    lines += [f"- **{v}** {t}" for v, t in numbers(r)]
    lines += ["", "| server | tools | enabled | listed | ≈ tokens | share | full ≈ tokens | calls |",
              "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for s in r.servers:
        status = "" if s.status == "listed" else f" ({md(s.status)})"
        lines.append(f"| `{s.name}`{status} | {s.tools} | {s.enabled} | {s.listed} | {s.tokens:,} | {pct(s.share)} "
                     f"| {s.full_tokens:,} | {s.calls} |")
    if r.builtins_listed:
        lines.append(f"| mcpctl built-ins | | | {r.builtins_listed} | {r.builtins_tokens:,} | "
                     f"{pct(r.builtins_tokens / cur.tokens if cur.tokens else 0.0)} | | |")
    lines.append(f"| **total** | {len(r.tools)} | {len(r.enabled)} | {cur.listed} | {cur.tokens:,} | | "
                 f"{sum(s.full_tokens for s in r.servers):,} | {r.calls} |")
    lines += ["", "| presentation | listed | ≈ tokens | instructions ≈ tokens |", "|---|--:|--:|--:|"]
    lines += [f"| {m.mode}{' (this project)' if m.current else ''} | {m.listed} | {m.tokens:,} | "
              f"{m.instructions_tokens:,} |" for m in r.modes]
    if r.overrides:
        lines += ["", overrides_line(r)]
    writers = r.write_reach
    lines += ["", f"**Write reach**: {len(writers)} of {len(r.enabled)} enabled tools can write, delete or send"]
    if writers:
        lines += ["", "| tool | can | from | evidence |", "|---|---|---|---|"]
        lines += [f"| `{w.id}` | {kinds(w)} | {w.reach.source} | {md(w.reach.evidence)} |" for w in writers]
    lines += ["", "**Name collisions**: " + (", ".join(f"`{c.name}` ×{len(c.ids)} ({', '.join(c.ids)})"
                                                      for c in r.collisions) or "none")]
    pairs = r.near_duplicates
    lines += ["", f"**Near-duplicate descriptions** (cross-server, similarity ≥ {r.threshold:.2f}): "
              + (f"{r.near_duplicate_total:,} pair(s)" if pairs else "none")]
    if pairs:
        lines += ["", "| score | tool | description | tool | description |", "|--:|---|---|---|---|"]
        lines += [f"| {p.score:.2f} | `{p.a}` | {md(one_line(p.description_a, 120))} | `{p.b}` | "
                  f"{md(one_line(p.description_b, 120))} |" for p in pairs[:TABLE_PAIRS]]
        if r.near_duplicate_total > TABLE_PAIRS:
            lines.append(f"\n… and {r.near_duplicate_total - TABLE_PAIRS:,} more (`{json_lists(r)}`)")
    if r.suspicious:
        lines += ["", f"**{suspicious_headline(r)}**", "", "| tool | mark | text |", "|---|---|---|"]
        lines += [f"| `{f.tool}` | {md(f.why)} | {md(f.text)} |" for f in r.suspicious]
    used = sorted((x for x in r.tools if x.calls), key=lambda x: (-x.calls, x.id))
    lines += ["", f"**Use** (last {r.window_days:g} days): {r.calls} call(s), {r.failed} failed, {r.neighbour} "
              "followed within a minute by a different tool of the same server"]
    if used:
        lines += ["", "| tool | calls | failed | neighbour next |", "|---|--:|--:|--:|"]
        lines += [f"| `{x.id}`{'' if x.enabled else ' (disabled)'} | {x.calls} | {x.failed} | {x.neighbour} |"
                  for x in used]
    never = r.never_called
    if never:
        lines += ["", f"Never called ({len(never)}): " + ", ".join(f"`{x.id}`" for x in never)]
    if r.profiles:
        lines += ["", "| tool | " + " | ".join(p.name for p in r.profiles) + " |",
                  "|---|" + "--:|" * len(r.profiles)]
        lines += [f"| `{x.id}` | " + " | ".join(str(x.profile_calls.get(p.name, 0)) if x.profiles.get(p.name)
                                                 else "·" for p in r.profiles) + " |" for x in r.enabled]
    if r.recommendations:
        lines += ["", "**Recommendations**", "", "```sh"]
        for rec in r.recommendations:
            saves = f"; saves ≈ {rec.saves_tokens:,} tokens" if rec.saves_tokens else ""
            lines += [f"# {rec.reason}{saves}", rec.command]
        lines.append("```")
    else:
        lines += ["", "**Recommendations**: none"]
    lines += [""] + [f"<sub>{md(n)}</sub><br>" for n in r.notes]
    return "\n".join(lines) + "\n"
