"""A gateway's memory with semantic search active, alone and five at once (not a test).

    .venv/bin/python benchmarks/bench_memory.py [--rounds 3] [--baseline MCPCTL_EXE] [--shared] [--json out.jsonl]

Each round starts `mcpctl serve --project demo` (the three example servers, `search.ranker: auto`
with the model installed) and, over stdio with a raw client: initialize, tools/list, one
`search_tools` call (a query never asked before, so the model runs) and one tools/call. Then it
reads the gateway process's peak RSS (VmHWM), its RSS and its PSS (`/proc/PID/smaps_rollup`:
shared pages divided among the processes that map them). Then five gateways on the same project,
each after the same session and all alive at once: the sum of their PSS, against one's.

With `--shared` the five are `mcpctl serve --project demo --shared` (issue 37): five relays and the
one shared gateway behind them, the sum of the six processes' PSS against one unshared gateway's
(the same session in each); each relay's PSS is shown too. (Upstream processes are counted in
neither figure: five unshared gateways also run five sets of them, the shared one one set.)

With `--baseline` every measurement runs for both executables in each round, the order reversed
every other round; the summary gives medians (and current/baseline as the median of the
per-round ratios). The store is the demo's (`mcpctl demo --home`, its project's `search.ranker` set to
`auto`), copied for the baseline. The
embedding cache is warmed (`tools list --refresh` and one session per target) before the rounds, as a listing
leaves it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MCPCTL = str(Path(sys.executable).parent / "mcpctl")
HANDSHAKE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "1"}}}
QUERIES = ("add two numbers together", "write down a note about the meeting", "turn a title into a url slug",
           "find notes that mention groceries", "multiply seven by six", "count the words in a text")


class Gateway:
    """One `mcpctl serve --project demo` (`shared`: a relay, `--shared`) with a raw newline-delimited JSON-RPC client."""

    def __init__(self, exe: str, env: dict[str, str], shared: bool = False) -> None:
        self.p = subprocess.Popen([exe, "serve", "--project", "demo", *(["--shared"] if shared else [])],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self._id = 0

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.p.stdin is not None and self.p.stdout is not None
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method} | ({"params": params} if params is not None else {})
        if not method.startswith("notifications/"):
            self._id += 1
            msg["id"] = self._id
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        if "id" not in msg:
            return {}
        while line := self.p.stdout.readline():
            got = json.loads(line)
            if got.get("id") == msg["id"]:
                return dict(got)
        raise SystemExit(f"the gateway closed stdout before answering {method}")

    def session(self, query: str) -> None:
        self.ask("initialize", HANDSHAKE["params"])   # type: ignore[arg-type]
        self.ask("notifications/initialized")
        tools = [t["name"] for t in self.ask("tools/list")["result"]["tools"]]
        search = next(n for n in tools if n.endswith("search_tools"))
        got = self.ask("tools/call", {"name": search, "arguments": {"query": query, "top_k": 5}})
        if got.get("result", {}).get("isError") is not False:
            raise SystemExit(f"search_tools failed: {got}")
        add = next(n for n in tools if n.endswith("add") and "calc" in n)
        self.ask("tools/call", {"name": add, "arguments": {"a": 1, "b": 2}})

    def memory_mb(self) -> dict[str, float]:
        return memory_mb(self.p.pid)

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        self.p.wait(timeout=60)


def memory_mb(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()

    def kb(text: str, field: str) -> float:
        return int(text.split(f"\n{field}:")[1].split()[0]) / 1024 if f"\n{field}:" in text else 0.0

    return {"peak_rss": kb("\n" + status, "VmHWM"), "rss": kb("\n" + status, "VmRSS"), "pss": kb("\n" + rollup, "Pss")}


def shared_daemon(home: str) -> int:
    """The pid of the shared gateway serving the store at `home` (its command line and environment)."""
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"--shared-daemon" in (d / "cmdline").read_bytes() \
                    and f"MCPCTL_HOME={home}".encode() + b"\0" in (d / "environ").read_bytes():
                return int(d.name)
        except OSError:
            continue
    raise SystemExit("no shared gateway found")


def five_shared(exe: str, env: dict[str, str], queries: list[str]) -> dict[str, float]:
    """Five relays and their shared gateway, each relay after the session; then the gateway's exit is awaited."""
    relays = [Gateway(exe, env, shared=True) for _ in range(5)]
    daemon = None
    try:
        for g, q in zip(relays, queries, strict=True):
            g.session(q)
        daemon = shared_daemon(env["MCPCTL_HOME"])
        mems = [g.memory_mb() for g in relays]
        gw = memory_mb(daemon)
        return {"pss_sum": sum(m["pss"] for m in mems) + gw["pss"], "rss_sum": sum(m["rss"] for m in mems) + gw["rss"],
                "relay_pss": statistics.median(m["pss"] for m in mems), "shared_gateway_pss": gw["pss"]}
    finally:
        for g in relays:
            g.close()
        with contextlib.suppress(ProcessLookupError):
            fd = os.pidfd_open(daemon if daemon is not None else shared_daemon(env["MCPCTL_HOME"]))
            select.select([fd], [], [], 60)      # gone after its grace: the next round starts one afresh
            os.close(fd)


def one(exe: str, env: dict[str, str], query: str) -> dict[str, float]:
    g = Gateway(exe, env)
    try:
        g.session(query)
        return g.memory_mb()
    finally:
        g.close()


def five(exe: str, env: dict[str, str], queries: list[str]) -> dict[str, float]:
    gateways = [Gateway(exe, env) for _ in range(5)]
    try:
        for g, q in zip(gateways, queries, strict=True):
            g.session(q)
        mems = [g.memory_mb() for g in gateways]
        return {"pss_sum": sum(m["pss"] for m in mems), "rss_sum": sum(m["rss"] for m in mems)}
    finally:
        for g in gateways:
            g.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl, measured in the same rounds")
    ap.add_argument("--shared", action="store_true", help="the five are relays to one shared gateway (serve --shared)")
    ap.add_argument("--json", type=Path, help="append the per-round numbers to this file")
    a = ap.parse_args()
    targets = {"current": MCPCTL} | ({"baseline": a.baseline} if a.baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        subprocess.run([MCPCTL, "demo", "--home", str(home)], check=True, stdout=subprocess.DEVNULL)
        env = {**os.environ, "MCPCTL_HOME": str(home)}
        spec = subprocess.run([MCPCTL, "get", "project", "demo", "-o", "yaml"], env=env, check=True,
                              capture_output=True, text=True).stdout
        subprocess.run([MCPCTL, "apply", "-f", "-"], input=spec.replace("ranker: bm25", "ranker: auto"), env=env,
                       check=True, capture_output=True, text=True)
        envs = {}
        for t, exe in targets.items():
            if t != "current":
                shutil.copytree(home, Path(tmp) / t)
            envs[t] = {**os.environ, "MCPCTL_HOME": str(home if t == "current" else Path(tmp) / t)}
            # the tools' vectors, as a listing leaves them (a gateway closed while embedding them would
            # leave the next ones to embed them, a batch of the model in their peak)
            subprocess.run([exe, "tools", "list", "--project", "demo", "--refresh"], env=envs[t], check=True,
                           capture_output=True)
            one(exe, envs[t], "warm up")
        got: dict[str, list[dict[str, float]]] = {t: [] for t in targets}
        for r in range(a.rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            qs = [f"{q} (round {r})" for q in QUERIES]
            for t in order:
                many = five_shared if a.shared else five
                got[t].append(one(targets[t], envs[t], qs[0]) | many(targets[t], envs[t], qs[1:6]))
    load = os.getloadavg()
    print(f"{a.rounds} rounds, medians, MB; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    fields = ("peak_rss", "rss", "pss", "pss_sum")
    summary: dict[str, Any] = {}
    for t in targets:
        row = {f: statistics.median(x[f] for x in got[t]) for f in fields}
        row["five_over_one"] = statistics.median(x["pss_sum"] / x["pss"] for x in got[t])
        summary[t] = row
        print(f"{t:9s} peak RSS {row['peak_rss']:6.1f}  RSS {row['rss']:6.1f}  PSS {row['pss']:6.1f}  "
              f"five {'relays + the shared gateway' if a.shared else 'gateways'}' PSS {row['pss_sum']:6.1f} "
              f"({row['five_over_one']:.2f}x one)")
        if a.shared:
            print(f"          a relay's PSS {statistics.median(x['relay_pss'] for x in got[t]):5.1f}, "
                  f"the shared gateway's {statistics.median(x['shared_gateway_pss'] for x in got[t]):6.1f}")
    if a.baseline:
        for f in fields:
            ratio = statistics.median(c[f] / b[f] for c, b in zip(got["current"], got["baseline"], strict=True))
            print(f"  {f}: current/baseline {ratio:.3f}x")
    if a.json:
        with a.json.open("a") as f:
            f.write(json.dumps({"rounds": a.rounds, "shared": a.shared, "summary": summary, "per_round": got}) + "\n")


if __name__ == "__main__":
    main()
