"""Build the bake-off's shipped task set and catalogue (src/mcpctl/bakeoff/data/user-requests-145/).

    .venv/bin/python scripts/make_bakeoff_data.py [--shared ../shared/data] [--check]

Inputs (both licensed for redistribution):
- tests/fixtures/user_requests/: 108 requests over the real tool lists of 8 MCP servers (56 tools),
  original work for mcpctl (Apache-2.0); split dev (every 3rd) / test. The fixture now also holds
  the 4 tools the everything server lists only to a client offering roots, sampling and
  elicitation (CAPABLE_CLIENT_ONLY); the shipped set keeps the 56 it was built and measured on
  (docs/bakeoff.md's runs), so they are left out here.
- LiveMCPBench's tools.jsonl (GitHub icip-cas/LiveMCPBench, commit a928e57d, Apache-2.0), as
  normalised in the shared data: real tool definitions of 70 public MCP servers.

Output:
- tools.jsonl: the 56 user_requests tools, then 89 LiveMCPBench tools as distractors (145 in all,
  the size of the catalogue the favourite index was first measured on). Distractor servers: every
  LiveMCPBench server except the four user_requests also has (filesystem, memory, time, fetch:
  the same tools, older versions, which would make the gold ambiguous) and those whose
  descriptions are mostly not English; ranked by how many words their tool names share with the
  user_requests tool names (the confusable ones first), then by name; whole servers while they
  fit, the last one cut to its first tools in listing order. Server names are made valid mcpctl
  names (lowercase, '-'); a tool keeps its name, description and inputSchema verbatim.
- servers.jsonl: the user_requests servers' own instructions.
- tasks.jsonl: the 72 test-portion requests with their gold groups.
- favourites.txt: the 10 tools most often gold in the 36 dev-portion requests (ties: first seen),
  standing in for what `mcpctl favourites suggest` would pin from a user's traffic; no test
  request was looked at to choose them.
`--check` rebuilds in memory and fails if the shipped files differ (JSON lines compared as rows).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
USER_REQUESTS = REPO / "tests" / "fixtures" / "user_requests"
OUT = REPO / "src" / "mcpctl" / "bakeoff" / "data" / "user-requests-145"
TOTAL = 145
N_FAVOURITES = 10
SHARED_SERVERS = {"filesystem", "memory", "time", "fetch"}
CAPABLE_CLIENT_ONLY = {("everything", "get-roots-list"), ("everything", "trigger-elicitation-request"),
                       ("everything", "trigger-url-elicitation"), ("everything", "trigger-sampling-request")}
WORD = re.compile(r"[a-z0-9]+")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dump(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def mcpctl_name(raw: str, taken: set[str]) -> str:
    base = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", raw.lower())).strip("-")[:60] or "server"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def english(rows: list[dict]) -> bool:
    text = " ".join(r.get("description") or "" for r in rows)
    return sum(1 for ch in text if ord(ch) > 0x2E80) < 0.05 * max(1, len(text))


def name_words(name: str) -> set[str]:
    return set(WORD.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()))


def build(shared: Path) -> dict[str, str]:
    ur_tools = [r for r in jsonl(USER_REQUESTS / "tools.jsonl") if (r["server"], r["name"]) not in CAPABLE_CLIENT_ONLY]
    tools = [{k: r[k] for k in ("server", "name", "description", "inputSchema") if k in r} for r in ur_tools]
    ur_words = set().union(*(name_words(r["name"]) for r in ur_tools))
    lmb = collections.defaultdict(list)
    for r in jsonl(shared / "livemcpbench" / "tools.jsonl"):
        lmb[r["server"]].append(r)
    candidates = [s for s, rows in lmb.items() if s not in SHARED_SERVERS and english(rows)]

    def shared_words(server: str) -> int:
        return len(ur_words & set().union(*(name_words(r["name"]) for r in lmb[server])))

    candidates.sort(key=lambda s: (-shared_words(s), s))
    taken = {r["server"] for r in tools}
    for server in candidates:
        room = TOTAL - len(tools)
        if room <= 0:
            break
        rows = lmb[server]
        if len(rows) > room and any(len(lmb[s]) <= room for s in candidates[candidates.index(server) + 1:]):
            continue                          # a whole later server still fits: keep servers whole
        name = mcpctl_name(server, taken)
        for r in rows[:room]:
            tools.append({"server": name, "name": r["name"], "description": r.get("description") or "",
                          "inputSchema": r.get("inputSchema") or {"type": "object"}})
    servers = [{"server": r["server"], "instructions": r["instructions"]}
               for r in jsonl(USER_REQUESTS / "servers.jsonl") if r.get("instructions")]
    queries = jsonl(USER_REQUESTS / "queries.jsonl")
    tasks = [{"id": q["id"], "query": q["query"], "relevant_groups": q["relevant_groups"]}
             for q in queries if q.get("split") == "test"]
    counts: collections.Counter[str] = collections.Counter()
    order: dict[str, int] = {}
    for q in queries:
        if q.get("split") == "dev":
            for group in q["relevant_groups"]:
                order.setdefault(group[0], len(order))
                counts[group[0]] += 1
    favourites = sorted(counts, key=lambda cid: (-counts[cid], order[cid]))[:N_FAVOURITES]
    fav_text = ("# the 10 tools most often gold in the dev portion of user_requests "
                "(scripts/make_bakeoff_data.py)\n" + "".join(f"{f}\n" for f in favourites))
    return {"tools.jsonl": dump(tools), "servers.jsonl": dump(servers), "tasks.jsonl": dump(tasks),
            "favourites.txt": fav_text}


def same(name: str, shipped: str, rebuilt: str) -> bool:
    """The shipped file holds what a rebuild makes: the same rows for JSON lines (a re-capture of
    the fixture that orders a schema's keys differently changes no tool), else the same text."""
    if name.endswith(".jsonl"):
        return [json.loads(x) for x in shipped.splitlines() if x.strip()] == \
            [json.loads(x) for x in rebuilt.splitlines() if x.strip()]
    return shipped == rebuilt


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    p.add_argument("--check", action="store_true", help="fail if the shipped files differ from a rebuild")
    opts = p.parse_args()
    files = build(opts.shared)
    if opts.check:
        stale = [n for n, text in files.items() if not (OUT / n).is_file() or not same(n, (OUT / n).read_text("utf-8"), text)]
        if stale:
            print(f"stale: {', '.join(stale)} (run scripts/make_bakeoff_data.py)", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (OUT / n).write_text(text, encoding="utf-8")
    tools = [json.loads(x) for x in files["tools.jsonl"].splitlines()]
    print(f"{OUT}: {len(tools)} tools on {len({t['server'] for t in tools})} servers, "
          f"{len(files['tasks.jsonl'].splitlines())} tasks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
