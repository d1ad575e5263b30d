"""How well `catalogue.poison` finds tool poisoning, and what it costs (not a test).

    .venv/bin/python benchmarks/bench_poison.py [--split dev|test|all] [--misses] [--false-positives]
                                                [--data ../shared/data] [--mcp-safetybench DIR]
                                                [--python-servers DIR ...] [--runs 30]

Recall: the labelled corpus `tests/fixtures/poisoning/corpus.jsonl` (poisoned definitions written
for mcpctl after published techniques; README beside it), per technique and per split. A
definition counts as found when `scan_definition` raises at least one flag on it. The split is
fixed by a rule written before any tuning (README): tune on dev, report test.

False positives: real tool definitions that poison nothing, per set; a tool counts once however
many flags it carries. The shared datasets (`../shared/data/{livemcpbench,metatool,toollens}`,
read where they are, never vendored: ToolLens states no licence) when present, then the vendored
sets in tests/fixtures (user_requests: the npm reference servers, mcp-server-time and -fetch and
the bundled examples as they list themselves).

External check (optional): `--mcp-safetybench DIR`, a checkout of github.com/xjzzzzzzzz/MCPSafety
(no licence: read in place, never copied): recall over the distinct poisoned tool descriptions in
its task configs (`mcp_server_modifications[].modification_description`), per attack category,
split dev/test by the SHA-1 of the text (`--misses` lists the dev ones missed; never the test ones).

Unseen benign (optional): `--python-servers DIR …`, Python MCP server sources read in place (the
clean servers of MCP-SafetyBench and MSB were never looked at while tuning): the docstrings of
their tool functions, as descriptions.

Speed: `scan_definitions` over the 527 LiveMCPBench tools (else the vendored slice), median and
minimum of --runs, as `doctor` and `surface` run it on a listing; CPU time of this process (on a
shared machine, wall time grows with the others' load, CPU time much less).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from mcpctl.catalogue.poison import Flag, scan_definition, scan_definitions  # noqa: E402

CORPUS = REPO / "tests" / "fixtures" / "poisoning" / "corpus.jsonl"
FIXTURES = REPO / "tests" / "fixtures"
SHARED_SETS = ("livemcpbench", "metatool", "toollens")
VENDORED_SETS = ("user_requests", "livemcpbench_slice", "metatool_slice")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tool_id(row: dict[str, Any]) -> str:
    return f"{row.get('server', '?')}/{row.get('name', '?')}"


def flags_of(row: dict[str, Any]) -> list[Flag]:
    return scan_definition(tool_id(row), row)


def recall_table(corpus: list[dict[str, Any]], splits: list[str]) -> tuple[list[str], list[str]]:
    """Lines of the per-technique table, and the ids missed (in the splits shown)."""
    found: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    missed: list[str] = []
    for item in corpus:
        hit = bool(flags_of(item))
        for key in ((item["technique"], item["split"]), ("all", item["split"])):
            found[key][0] += int(hit)
            found[key][1] += 1
        if not hit and item["split"] in splits:
            missed.append(item["id"])
    techniques = [*dict.fromkeys(item["technique"] for item in corpus), "all"]
    width = max(len(t) for t in techniques)
    lines = [f"{'technique':<{width}}  " + "  ".join(f"{s:>14}" for s in splits)]
    for t in techniques:
        cells = []
        for s in splits:
            hits, total = found[(t, s)]
            cells.append(f"{hits:>3}/{total:<3} {100 * hits / total:5.1f}%" if total else f"{'-':>14}")
        lines.append(f"{t:<{width}}  " + "  ".join(cells))
    return lines, missed


def benign_sets(data: Path) -> Iterable[tuple[str, list[dict[str, Any]]]]:
    for name in SHARED_SETS:
        path = data / name / "tools.jsonl"
        if path.exists():
            yield name, rows(path)
        else:
            print(f"({name}: {path} absent, skipped)")
    for name in VENDORED_SETS:
        yield f"{name} (vendored)", rows(FIXTURES / name / "tools.jsonl")


def false_positive_table(data: Path, show: bool, servers: list[Path]) -> list[str]:
    lines = [f"{'set':<30} {'tools':>6} {'flagged':>8} {'rate':>7}"]
    extra = [("python servers (unseen)", python_server_tools(servers))] if servers else []
    for name, tools in [*benign_sets(data), *extra]:
        flagged = [(tool_id(r), fl) for r in tools if (fl := flags_of(r))]
        lines.append(f"{name:<30} {len(tools):>6} {len(flagged):>8} {100 * len(flagged) / len(tools):6.2f}%")
        if show:
            lines += [f"    {tid}: {f.kind}: {f.why}: {f.text}" for tid, fl in flagged for f in fl]
    return lines


def safetybench_split(text: str) -> str:
    """MCP-SafetyBench's descriptions split as the corpus is, by a rule fixed before tuning on them:
    dev when the SHA-1 of the text is even."""
    return "dev" if int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "test"


def mcp_safetybench(root: Path, show_misses: bool) -> list[str]:
    """Recall over MCP-SafetyBench's poisoned descriptions, per attack category and split (read in place)."""
    seen: set[str] = set()
    found: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    missed: list[str] = []
    for path in sorted((root / "mcpuniverse" / "benchmark" / "configs" / "test").rglob("*.json")):
        task = json.loads(path.read_text(encoding="utf-8"))
        for mod in task.get("mcp_server_modifications") or []:
            text = mod.get("modification_description")
            if not isinstance(text, str) or text in seen:
                continue
            seen.add(text)
            split = safetybench_split(text)
            hit = bool(scan_definition(f"safetybench/{mod.get('tool_name')}", {"description": text}))
            for key in ((str(task.get("attack_category")), split), ("all", split)):
                found[key][0] += int(hit)
                found[key][1] += 1
            if not hit and split == "dev":
                missed.append(f"    [{task.get('attack_category')}] {' '.join(text.split())}")
    lines = [f"{'category':<45} {'dev':>14} {'test':>14}"]
    for cat in sorted({c for c, _ in found}, key=lambda c: (c == "all", c)):
        cells = [f"{h:>3}/{n:<3} {100 * h / n:5.1f}%" if n else f"{'-':>14}"
                 for h, n in (found[(cat, "dev")], found[(cat, "test")])]
        lines.append(f"{cat:<45} {cells[0]:>14} {cells[1]:>14}")
    return lines + (["  missed (dev):", *missed] if show_misses else [])


def python_server_tools(roots: list[Path]) -> list[dict[str, Any]]:
    """The docstrings of the tool functions (decorated with something named *tool*) of Python MCP
    servers, as definitions; files whose names hold "-" or are attack.py are MSB's poisoned variants."""
    seen: set[str] = set()
    tools: list[dict[str, Any]] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "-" in path.name or path.name == "attack.py":
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                doc = ast.get_docstring(node)
                if doc and doc not in seen and any("tool" in ast.unparse(d) for d in node.decorator_list):
                    seen.add(doc)
                    tools.append({"server": path.parent.name, "name": node.name, "description": doc})
    return tools


def scan_time(data: Path, runs: int) -> str:
    path = data / "livemcpbench" / "tools.jsonl"
    if not path.exists():
        path = FIXTURES / "livemcpbench_slice" / "tools.jsonl"
    tools = [(tool_id(r), r) for r in rows(path)]
    scan_definitions(tools)
    times = []
    for _ in range(runs):
        start = time.process_time()
        scan_definitions(tools)
        times.append(time.process_time() - start)
    med = statistics.median(times)
    return (f"scan_definitions over {len(tools)} tools ({path.parent.name}), CPU time: median {1000 * med:.1f} ms, "
            f"min {1000 * min(times):.1f} ms ({1e6 * med / len(tools):.0f} µs a tool; {runs} runs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=["dev", "test", "all"], default="all",
                    help="which split's recall to show (tune on dev; all shows both)")
    ap.add_argument("--misses", action="store_true", help="list the corpus ids not flagged (in the splits shown)")
    ap.add_argument("--false-positives", action="store_true", help="list every flag raised on a benign tool")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--mcp-safetybench", type=Path, help="a checkout of xjzzzzzzzz/MCPSafety (read in place)")
    ap.add_argument("--python-servers", type=Path, nargs="+", default=[],
                    help="Python MCP server sources whose tool docstrings are read as benign definitions "
                         "(e.g. MCPSafety's mcpuniverse/mcp/servers, MSB's data/tools/attack_tools)")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    corpus = rows(CORPUS)
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    count: dict[str, int] = defaultdict(int)
    for item in corpus:
        count[item["split"]] += 1
    print(f"Poisoned corpus: {CORPUS.relative_to(REPO)} ({len(corpus)} definitions, "
          f"{len({i['technique'] for i in corpus})} techniques; dev {count['dev']}, test {count['test']})")
    table, missed = recall_table(corpus, splits)
    print("\n".join(table))
    if args.misses:
        print("missed: " + (", ".join(missed) or "none"))
    print("\nBenign real tools (a tool counts once, however many flags):")
    print("\n".join(false_positive_table(args.data, args.false_positives, args.python_servers)))
    if args.mcp_safetybench:
        print(f"\nMCP-SafetyBench poisoned descriptions ({args.mcp_safetybench}), distinct texts:")
        print("\n".join(mcp_safetybench(args.mcp_safetybench, args.misses)))
    print("\n" + scan_time(args.data, args.runs))


if __name__ == "__main__":
    main()
