"""Benchmark `mcpctl serve` against its upstreams, side by side in one run (not a test).

    .venv/bin/python benchmarks/bench_gateway.py [--quick] [--json out.jsonl] [--no-shared]
                                                 [--baseline MCPCTL_EXE]

Measures, with a raw newline-delimited JSON-RPC client over stdio (the same client cost for
every target):
  1. tools/call round trip, direct to one upstream vs through `mcpctl serve` (median, p95,
     gateway CPU per call);
  2. calls/s with 16 calls in flight, direct vs gateway;
  3. tools/list latency with 1,000 tools from 20 upstreams (vs one upstream listing 1,000);
  4. time to the first full tools/list with 10 and 20 upstreams, first start vs from cache;
  5. the gateway process's own peak RSS with 20 upstreams.
Then, when the neutral harness `../shared/bench` exists (relative to the repo root), runs its
`mcpbench.py` against the direct upstream and against `mcpctl serve` too, for numbers
comparable with the peers in `../shared/bench/PEERS.md`. Upstreams are
`../shared/bench/synth_server.py` when present, else `tests/servers/fault_server.py`.

`--baseline MCPCTL_EXE` adds a third target, `baseline`: the `mcpctl` executable of another
installation (e.g. an older commit installed in its own venv), to report a change to the call
path before and after in one run. It is measured in the same interleaved rounds (order reversed
every other round) as `direct` and this checkout's gateway in 1 and 2, and in 3-5, where without
it each gateway start is measured once, both gateways are started in as many rounds as 1 and 2
use, each from its own fresh MCPCTL_HOME (written with this checkout's store, whose format both
must read) so neither reads the other's cache; the figures printed for this checkout are then
medians over those rounds. The summary then adds a table of current vs baseline: tools/call round
trip and overhead over direct (median, p95), gateway CPU per call, calls/s with 16 in flight,
tools/list latency with 1,000 tools, time to the first full tools/list (from cache and on a first
start) and peak RSS with 20 upstreams, each with current/baseline as the median of the per-round
ratios (on a noisy machine only such paired ratios mean anything: compare two copies of the same
code first to see the noise floor). `--json` then also carries the baseline's per-round numbers
and the comparison. The shared harness still runs this checkout only. For example:

    git worktree add ../baseline HEAD      # before the change (any commit will do)
    python3 -m venv ../baseline/.venv && ../baseline/.venv/bin/pip install -q -e ../baseline
    .venv/bin/python benchmarks/bench_gateway.py --baseline ../baseline/.venv/bin/mcpctl
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
SHARED_BENCH = REPO.parent / "shared" / "bench"
PY = sys.executable
MCPCTL = str(Path(sys.executable).parent / "mcpctl")

# Targets from the gateway issue (peers measured in ../shared/bench/PEERS.md).
TARGET_OVERHEAD_MS = 0.5
TARGET_CALLS_PER_S = 1000.0
TARGET_LIST_MS = 20.0
TARGET_CACHED_READY_MS = 200.0
TARGET_RSS_MB = 80.0


# -- upstreams ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    argv: list[str]
    echo: str          # the upstream's own echo tool name


def upstream(index: int, tools: int, use_shared: bool) -> Upstream:
    synth = SHARED_BENCH / "synth_server.py"
    if use_shared and synth.exists():
        prefix = f"s{index}_"
        return Upstream([PY, str(synth), "--tools", str(tools), "--prefix", prefix, "--name", f"s{index}"],
                        f"{prefix}echo")
    fault = REPO / "tests" / "servers" / "fault_server.py"
    # fault_server has 14 fixed tools plus synthetic ones
    return Upstream([PY, str(fault), "--name", f"s{index}", "--tools", str(max(0, tools - 14))], "echo")


def make_home(root: Path, upstreams: Sequence[Upstream], project: str = "bench") -> Path:
    home = root / f"home-{project}-{len(upstreams)}-{time.monotonic_ns()}"
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    code = (
        "import json,sys\nfrom mcpctl.resources.store import Store\n"
        "ups=json.loads(sys.argv[1]); st=Store()\n"
        "for i,a in enumerate(ups):\n"
        "    st.put({'apiVersion':'mcpctl/v1','kind':'Server','metadata':{'name':f's{i}'},"
        "'spec':{'command':a[0],'args':a[1:],'timeouts':{'connect':60,'call':60}}})\n"
        f"st.put({{'apiVersion':'mcpctl/v1','kind':'Project','metadata':{{'name':'{project}'}},"
        "'spec':{'servers':[f's{i}' for i in range(len(ups))]}})\n"
    )
    subprocess.run([PY, "-c", code, json.dumps([u.argv for u in upstreams])], env=env, check=True)
    return home


# -- a raw JSON-RPC client ------------------------------------------------------------------------


class RawClient:
    """Newline-delimited JSON-RPC over a child's stdio, handshake era (2025-11-25)."""

    def __init__(self, proc: asyncio.subprocess.Process, argv: Sequence[str] = (),
                 stderr: IO[bytes] | None = None) -> None:
        self.proc = proc
        self.argv = list(argv)
        self.stderr = stderr
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.list_changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(cls, argv: Sequence[str], env: dict[str, str] | None = None) -> AsyncIterator[RawClient]:
        with tempfile.TemporaryFile() as stderr:     # its tail says why a server died
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=stderr, env={**os.environ, **(env or {})}, limit=256 * 1024 * 1024)
            client = cls(proc, argv, stderr)
            try:
                yield client
            finally:
                client.reader.cancel()
                if proc.stdin:
                    proc.stdin.close()
                try:
                    await asyncio.wait_for(proc.wait(), 15)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif msg.get("method") == "notifications/tools/list_changed":
                self.list_changed.set()
            elif "id" in msg and "method" in msg:      # ping / roots from the server
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        # the server is gone: fail what waits on it instead of hanging the run
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(RuntimeError(f"{self.what()} closed its stdout"))
        self.pending.clear()

    def what(self) -> str:
        tail = b""
        if self.stderr is not None and not self.stderr.closed:
            self.stderr.seek(max(0, self.stderr.seek(0, os.SEEK_END) - 600))
            tail = self.stderr.read()
        return (f"pid {self.proc.pid} ({' '.join(self.argv[:3])}, exit status {self.proc.returncode}; "
                f"stderr ends: {tail.decode(errors='replace')!r})")

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.reader.done():
            raise RuntimeError(f"{method}: {self.what()} has closed its stdout")
        self.next_id += 1
        rid = self.next_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        msg = await fut
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        result: dict[str, Any] = msg["result"]
        return result

    async def initialize(self) -> dict[str, Any]:
        result = await self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                   "clientInfo": {"name": "bench", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def list_all(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor = None
        while True:
            r = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            tools += r.get("tools", [])
            cursor = r.get("nextCursor")
            if not cursor:
                return tools

    async def call(self, name: str, nonce: str) -> None:
        r = await self.request("tools/call", {"name": name, "arguments": {"text": nonce}})
        text = "".join(c.get("text", "") for c in r.get("content", []))
        if nonce not in text:
            raise RuntimeError(f"mismatch: sent {nonce}, got {text[:60]!r}")

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")


async def wait_full(c: RawClient, expect: int, timeout: float = 120.0) -> tuple[float, list[dict[str, Any]]]:
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    while True:
        tools = await c.list_all()
        if len(tools) >= expect:
            return (time.perf_counter() - t0) * 1000, tools
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(tools)} of {expect} tools after {timeout}s")
        c.list_changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(c.list_changed.wait(), 0.05)


# -- measurements -----------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def measure_calls(c: RawClient, tool: str, n: int) -> dict[str, float]:
    for i in range(20):
        await c.call(tool, f"warm{i}")
    lat = []
    cpu0 = c.cpu_seconds()
    for i in range(n):
        t0 = time.perf_counter()
        await c.call(tool, f"n{i}")
        lat.append((time.perf_counter() - t0) * 1000)
    cpu = (c.cpu_seconds() - cpu0) * 1000 / n
    return {"p50_ms": statistics.median(lat), "p95_ms": pct(lat, 0.95), "min_ms": min(lat),
            "cpu_ms_per_call": cpu}


async def measure_concurrency(c: RawClient, tool: str, seconds: float, inflight: int = 16) -> float:
    done = 0
    stop = time.monotonic() + seconds

    async def worker(w: int) -> None:
        nonlocal done
        i = 0
        while time.monotonic() < stop:
            await c.call(tool, f"c{w}-{i}")
            i += 1
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(inflight)))
    return done / (time.perf_counter() - t0)


async def measure_list(c: RawClient, n: int = 50) -> float:
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        await c.list_all()
        lat.append((time.perf_counter() - t0) * 1000)
    return statistics.median(lat)


async def bench_calls(root: Path, use_shared: bool, iters: int, seconds: float, rounds: int,
                      baseline: str | None = None, current_env: dict[str, str] | None = None) -> dict[str, Any]:
    """`current_env`: more environment for this checkout's gateway (`--telemetry`), not the baseline's."""
    up = upstream(0, 20, use_shared)
    gateways = {"gateway": MCPCTL, **({"baseline": baseline} if baseline else {})}
    homes = {name: make_home(root, [up]) for name in gateways}   # each gateway its own cache
    out: dict[str, Any] = {"direct": [], **{name: [] for name in gateways}}

    async def direct() -> None:
        async with RawClient.spawn(up.argv) as d:
            await d.initialize()
            await wait_full(d, 1)
            call = await measure_calls(d, up.echo, iters)
            cps = await measure_concurrency(d, up.echo, seconds)
            out["direct"].append({**call, "calls_per_s": cps})

    def gateway(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            extra = (current_env or {}) if name == "gateway" else {}
            async with RawClient.spawn([gateways[name], "serve", "--project", "bench"],
                                       {"MCPCTL_HOME": str(homes[name]), **extra}) as g:
                await g.initialize()
                await wait_full(g, 21)
                call = await measure_calls(g, f"s0__{up.echo}", iters)
                cps = await measure_concurrency(g, f"s0__{up.echo}", seconds)
                out[name].append({**call, "calls_per_s": cps})
        return run

    targets = [direct, *(gateway(name) for name in gateways)]
    # Interleaved rounds, the order reversed every other round; each round is one paired sample.
    for rnd in range(rounds):
        for target in (targets if rnd % 2 == 0 else targets[::-1]):
            await target()
        last = {name: out[name][-1] for name in out}
        if baseline is None:
            print(f"  round {rnd + 1}: direct p50 {last['direct']['p50_ms']:.3f} ms, gateway p50 "
                  f"{last['gateway']['p50_ms']:.3f} ms; {last['direct']['calls_per_s']:.0f} vs "
                  f"{last['gateway']['calls_per_s']:.0f} calls/s", flush=True)
        else:
            print(f"  round {rnd + 1}: direct p50 {last['direct']['p50_ms']:.3f} ms, gateway p50 "
                  f"{last['gateway']['p50_ms']:.3f} ms, baseline p50 {last['baseline']['p50_ms']:.3f} ms; "
                  f"{last['direct']['calls_per_s']:.0f} vs {last['gateway']['calls_per_s']:.0f} vs "
                  f"{last['baseline']['calls_per_s']:.0f} calls/s", flush=True)
    return out


def paired(calls: dict[str, Any]) -> dict[str, float]:
    """Medians over rounds of the per-round comparisons (noise hits both targets of a round)."""
    pairs = list(zip(calls["direct"], calls["gateway"], strict=True))
    med = statistics.median
    return {
        "direct_p50_ms": med(d["p50_ms"] for d, _ in pairs),
        "gateway_p50_ms": med(g["p50_ms"] for _, g in pairs),
        "overhead_ms": med(g["p50_ms"] - d["p50_ms"] for d, g in pairs),
        "latency_ratio": med(g["p50_ms"] / d["p50_ms"] for d, g in pairs),
        "direct_cps": med(d["calls_per_s"] for d, _ in pairs),
        "gateway_cps": med(g["calls_per_s"] for _, g in pairs),
        "cps_ratio": med(g["calls_per_s"] / d["calls_per_s"] for d, g in pairs),
        "gateway_cpu_ms": med(g["cpu_ms_per_call"] for _, g in pairs),
        "gateway_p95_ms": med(g["p95_ms"] for _, g in pairs),
    }


async def gateway_start(exe: str, home: Path, expect: int) -> dict[str, float]:
    """One gateway started twice on a fresh home: first start (no cache), then from its cache."""
    res: dict[str, float] = {}
    for phase in ("first_start", "cached"):
        t0 = time.perf_counter()
        async with RawClient.spawn([exe, "serve", "--project", "bench"], {"MCPCTL_HOME": str(home)}) as g:
            await g.initialize()
            init_ms = (time.perf_counter() - t0) * 1000
            _, tools = await wait_full(g, expect)
            res[f"{phase}_ready_ms"] = (time.perf_counter() - t0) * 1000
            res[f"{phase}_after_init_ms"] = res[f"{phase}_ready_ms"] - init_ms
            if phase == "first_start":
                # every upstream has listed: the machine is quiet again, measure the steady state
                await asyncio.sleep(1.0)
                res["list_p50_ms"] = await measure_list(g)
                res["list_bytes"] = len(json.dumps(tools))
                res["gateway_peak_rss_mb"] = g.peak_rss_mb()
    return res


def medians(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


async def bench_many(root: Path, use_shared: bool, n_up: int, tools_each: int, baseline: str | None = None,
                     rounds: int = 1) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]]]:
    """This checkout's gateway (medians over the rounds, one round without a baseline) and the
    per-round numbers of each gateway, the baseline's started in the same interleaved rounds."""
    ups = [upstream(i, tools_each, use_shared) for i in range(n_up)]
    expect = n_up * tools_each + 1   # + search_tools
    gateways = {"gateway": MCPCTL, **({"baseline": baseline} if baseline else {})}
    names = list(gateways)
    per: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for rnd in range(rounds if baseline else 1):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            per[name].append(await gateway_start(gateways[name], make_home(root, ups), expect))
            if baseline:
                r = per[name][-1]
                print(f"    round {rnd + 1}, {name:8s}: first start {r['first_start_ready_ms']:.0f} ms, "
                      f"from cache {r['cached_ready_ms']:.0f} ms; list p50 {r['list_p50_ms']:.2f} ms; "
                      f"RSS {r['gateway_peak_rss_mb']:.0f} MB", flush=True)
    res: dict[str, Any] = {"upstreams": n_up, "tools": n_up * tools_each, **medians(per["gateway"])}
    if n_up * tools_each >= 1000:
        big = upstream(0, n_up * tools_each, use_shared)
        async with RawClient.spawn(big.argv) as d:
            await d.initialize()
            await wait_full(d, n_up * tools_each)
            res["direct_list_p50_ms"] = await measure_list(d)
    return res, per


@dataclass(frozen=True)
class Metric:
    """One row of the current-vs-baseline table: a value per round for each gateway."""
    key: str
    label: str
    fmt: str            # format spec of the values
    better: str         # "lower" or "higher"
    current: list[float]
    baseline: list[float]


def baseline_metrics(calls: dict[str, Any], many: dict[int, dict[str, Any]],
                     many_rounds: dict[int, dict[str, list[dict[str, float]]]]) -> list[Metric]:
    d, g, b = calls["direct"], calls["gateway"], calls["baseline"]

    def call(key: str) -> tuple[list[float], list[float]]:
        return [r[key] for r in g], [r[key] for r in b]

    def over(key: str) -> tuple[list[float], list[float]]:
        return ([r[key] - x[key] for r, x in zip(g, d, strict=True)],
                [r[key] - x[key] for r, x in zip(b, d, strict=True)])

    def start(n_up: int, key: str) -> tuple[list[float], list[float]]:
        rounds = many_rounds[n_up]
        return [r[key] for r in rounds["gateway"]], [r[key] for r in rounds["baseline"]]

    rows = [
        Metric("call_p50_ms", "tools/call round trip p50 (ms)", ".3f", "lower", *call("p50_ms")),
        Metric("call_p95_ms", "tools/call round trip p95 (ms)", ".3f", "lower", *call("p95_ms")),
        Metric("overhead_p50_ms", "overhead over direct p50 (ms)", "+.3f", "lower", *over("p50_ms")),
        Metric("overhead_p95_ms", "overhead over direct p95 (ms)", "+.3f", "lower", *over("p95_ms")),
        Metric("cpu_ms_per_call", "gateway CPU per call (ms)", ".3f", "lower", *call("cpu_ms_per_call")),
        Metric("calls_per_s", "calls/s @16 in flight", ".0f", "higher", *call("calls_per_s")),
    ]
    if 20 not in many:      # --calls-only
        return rows
    tools = many[20]["tools"]
    return [
        *rows,
        Metric("list_ms", f"tools/list, {tools} tools, 20 upstreams (ms)", ".2f", "lower",
               *start(20, "list_p50_ms")),
        *(Metric(f"cached_ready_{n}_ms", f"ready from cache, {n} upstreams (ms)", ".0f", "lower",
                 *start(n, "cached_ready_ms")) for n in many),
        *(Metric(f"first_start_ready_{n}_ms", f"ready on first start, {n} upstreams (ms)", ".0f", "lower",
                 *start(n, "first_start_ready_ms")) for n in many),
        Metric("peak_rss_20_mb", "gateway peak RSS, 20 upstreams (MB)", ".1f", "lower",
               *start(20, "gateway_peak_rss_mb")),
    ]


def versus(m: Metric) -> dict[str, Any]:
    """Medians over rounds, and current/baseline as the median of the per-round ratios (rounds where
    the baseline's value is not positive, e.g. an overhead lost in the noise, give no ratio; with
    none left the ratio is None)."""
    ratios = [c / b for c, b in zip(m.current, m.baseline, strict=True) if b > 0]
    return {"current": statistics.median(m.current), "baseline": statistics.median(m.baseline),
            "ratio": statistics.median(ratios) if ratios else None, "ratio_rounds": len(ratios),
            "rounds": len(m.current), "better": m.better}


def print_baseline(exe: str, version: str, metrics: Sequence[Metric]) -> dict[str, dict[str, Any]]:
    rounds = len(metrics[0].current)
    print(f"\n== current vs baseline ({exe}, {version}): medians over {rounds} interleaved rounds; "
          "ratio = median of per-round current/baseline ==")
    print(f"{'':44s} {'current':>10s} {'baseline':>10s} {'ratio':>7s}  better")
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        v = out[m.key] = versus(m)
        note = "" if v["ratio_rounds"] == v["rounds"] else f"  (ratio of {v['ratio_rounds']}/{v['rounds']} rounds)"
        ratio = "n/a" if v["ratio"] is None else f"{v['ratio']:.3f}x"
        print(f"{m.label:44s} {format(v['current'], m.fmt):>10s} {format(v['baseline'], m.fmt):>10s} "
              f"{ratio:>7s}  {m.better}{note}")
    return out


def mcpctl_version(exe: str) -> str:
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    return (p.stdout.strip().splitlines() or ["version unknown"])[-1]


# -- the shared harness ------------------------------------------------------------------------------


def run_shared_harness(root: Path, quick: bool) -> list[dict[str, Any]]:
    harness = SHARED_BENCH / "mcpbench.py"
    if not harness.exists():
        print(f"\n(shared harness not found at {SHARED_BENCH}; skipping the mcpbench.py comparison)")
        return []
    print(f"\nshared harness: {harness}")
    up = upstream(0, 20, True)
    home = make_home(root, [up], project="shared")
    common = ["--cold-runs", "1", "--conc-seconds", "3" if quick else "5", "--max-seconds", "90"]
    runs = [("direct", 20, up.argv), ("mcpctl", 21, [MCPCTL, "serve", "--project", "shared"])]
    records = []
    for label, expect, argv in runs:
        cmd = [PY, str(harness), "--label", label, "--expect-tools", str(expect), *common,
               "--env", f"MCPCTL_HOME={home}", "--", *argv]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        line = (p.stdout.strip().splitlines() or ["{}"])[-1]
        try:
            rec = json.loads(line)
        except ValueError:
            print(f"  {label}: harness failed: {p.stderr[-500:]}")
            continue
        records.append(rec)
        call, conc, mem = rec.get("call", {}), rec.get("conc", {}), rec.get("mem", {})
        print(f"  {label:7s} call p50 {call.get('p50_ms')} ms, cpu/call {call.get('cpu_ms_per_call_root')} ms, "
              f"{conc.get('calls_per_s')} calls/s @16, list p50 {rec.get('list', {}).get('p50_ms')} ms, "
              f"root RSS {mem.get('root_peak_rss_kb', 0) / 1024:.0f} MB, errors {rec.get('errors')}")
    if len(records) == 2:
        d, g = records
        print(f"  mcpctl vs direct: +{g['call']['p50_ms'] - d['call']['p50_ms']:.3f} ms/call at the median, "
              f"{g['conc']['calls_per_s'] / d['conc']['calls_per_s']:.2f}x calls/s")
    return records


# -- report ---------------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "ok " if ok else "MISS"


def print_calls(c: dict[str, Any]) -> None:
    print(f"tools/call p50: direct {c['direct_p50_ms']:.3f} ms, mcpctl {c['gateway_p50_ms']:.3f} ms -> overhead "
          f"{c['overhead_ms']:+.3f} ms ({c['latency_ratio']:.2f}x)   [{verdict(c['overhead_ms'] <= TARGET_OVERHEAD_MS)}] "
          f"target <= {TARGET_OVERHEAD_MS} ms; peers: FastMCP +1.4, magg +2.6")
    print(f"gateway CPU per call: {c['gateway_cpu_ms']:.3f} ms (call p95 {c['gateway_p95_ms']:.3f} ms)")
    print(f"calls/s @16 in flight: direct {c['direct_cps']:.0f}, mcpctl {c['gateway_cps']:.0f} ({c['cps_ratio']:.2f}x)   "
          f"[{verdict(c['gateway_cps'] >= TARGET_CALLS_PER_S)}] target >= {TARGET_CALLS_PER_S:.0f}; peers 300-440 "
          "(0.14-0.23x)")


class _Sink:
    url = ""
    posts = 0


@contextlib.contextmanager
def otlp_sink() -> Iterator[_Sink]:
    """An OTLP/HTTP endpoint on loopback that takes every export and answers 200 (`--telemetry`):
    the gateway pays for making, batching, encoding and sending its spans, as it would to a collector."""
    import http.server
    import threading

    sink = _Sink()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            sink.posts += 1
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer iterations (about a minute)")
    ap.add_argument("--json", type=Path, help="append the results as one JSON line")
    ap.add_argument("--no-shared", action="store_true", help="do not use ../shared/bench even if present")
    ap.add_argument("--baseline", metavar="MCPCTL_EXE",
                    help="the mcpctl executable of another installation, measured in the same rounds "
                         "(quick: about 4 minutes)")
    ap.add_argument("--calls-only", action="store_true",
                    help="only 1 and 2 (tools/call round trip, CPU per call, calls/s): for a change to the "
                         "call path, with --rounds for as many paired rounds as the machine's noise needs")
    ap.add_argument("--rounds", type=int, metavar="N", help="interleaved rounds (default 5; quick: 3)")
    ap.add_argument("--telemetry", action="store_true",
                    help="this checkout's gateway with metrics and tracing on (MCPCTL_METRICS=1, spans exported "
                         "over OTLP/HTTP to a sink in this process: the `otel` extra), the baseline's as it is")
    ap.add_argument("--current-env", action="append", default=[], metavar="NAME=VALUE",
                    help="more environment for this checkout's gateway only (repeatable): e.g. MCPCTL_METRICS=1 "
                         "or MCPCTL_TRACING=1 alone, to part what --telemetry measures together")
    args = ap.parse_args()
    if args.rounds is not None and not 1 <= args.rounds <= 100:
        ap.error("--rounds: from 1 to 100")
    if any("=" not in kv for kv in args.current_env):
        ap.error("--current-env: NAME=VALUE")
    current_env = dict(kv.split("=", 1) for kv in args.current_env)
    baseline: str | None = None
    if args.baseline:
        found = shutil.which(args.baseline)
        if found is None:
            ap.error(f"--baseline: {args.baseline} is not an executable")
        baseline = str(Path(found).absolute())
    use_shared = not args.no_shared and SHARED_BENCH.exists()
    print(f"mcpctl gateway benchmark; upstream: "
          f"{'../shared/bench/synth_server.py' if use_shared else 'tests/servers/fault_server.py'}; "
          f"loadavg {os.getloadavg()[0]:.1f}; {os.cpu_count()} cpus")
    if not SHARED_BENCH.exists():
        print(f"(../shared/bench not found at {SHARED_BENCH}: using the repo's own test server)")
    baseline_version = mcpctl_version(baseline) if baseline else ""
    if baseline:
        print(f"baseline: {baseline} ({baseline_version}); current: {MCPCTL} ({mcpctl_version(MCPCTL)})")
    root = Path(tempfile.mkdtemp(prefix="mcpctl-bench-"))
    iters, seconds, rounds = (300, 2.0, 3) if args.quick else (1000, 5.0, 5)
    rounds = args.rounds or rounds
    try:
        print("\n[1,2] tools/call: direct vs through mcpctl serve (1 upstream, 20 tools)"
              + (" vs the baseline's" if baseline else ""))
        with otlp_sink() if args.telemetry else contextlib.nullcontext() as sink:
            env = {**current_env, **({} if sink is None else {"MCPCTL_METRICS": "1",
                                                              "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url})}
            calls = asyncio.run(bench_calls(root, use_shared, iters, seconds, rounds, baseline, env or None))
            if sink is not None:
                print(f"  telemetry on: {sink.posts} OTLP export(s) received", flush=True)
        c = paired(calls)
        if args.calls_only:
            print_calls(c)
            if baseline:
                print_baseline(baseline, baseline_version, baseline_metrics(calls, {}, {}))
            return
        print("\n[3,4,5] many upstreams" + (f" (this checkout and the baseline, {rounds} interleaved rounds)"
                                            if baseline else ""))
        many: dict[int, dict[str, Any]] = {}
        many_rounds: dict[int, dict[str, list[dict[str, float]]]] = {}
        for n_up in (10, 20):
            many[n_up], many_rounds[n_up] = asyncio.run(bench_many(root, use_shared, n_up, 50, baseline, rounds))
            m = many[n_up]
            print(f"  {n_up} upstreams, {m['tools']} tools: first start {m['first_start_ready_ms']:.0f} ms, "
                  f"from cache {m['cached_ready_ms']:.0f} ms; list p50 {m['list_p50_ms']:.2f} ms; "
                  f"gateway RSS {m['gateway_peak_rss_mb']:.0f} MB", flush=True)
        shared = [] if args.no_shared else run_shared_harness(root, args.quick)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    m20 = many[20]
    print(f"\n== summary (same run; medians over {rounds} interleaved rounds of per-round comparisons) ==")
    print_calls(c)
    print(f"tools/list of {m20['tools']} tools from 20 upstreams: {m20['list_p50_ms']:.2f} ms "
          f"(one upstream listing them: {m20.get('direct_list_p50_ms', float('nan')):.2f} ms)   "
          f"[{verdict(m20['list_p50_ms'] <= TARGET_LIST_MS)}] target <= {TARGET_LIST_MS:.0f} ms; peers 178-252")
    for n_up, m in many.items():
        print(f"first full tools/list, {n_up} upstreams: from cache {m['cached_ready_ms']:.0f} ms "
              f"(after initialize {m['cached_after_init_ms']:.0f} ms), first start {m['first_start_ready_ms']:.0f} ms"
              + (f"   [{verdict(m['cached_ready_ms'] < TARGET_CACHED_READY_MS)}] target < "
                 f"{TARGET_CACHED_READY_MS:.0f} ms; peers 7.3 s" if n_up == 20 else ""))
    print(f"gateway peak RSS with 20 upstreams: {m20['gateway_peak_rss_mb']:.0f} MB   "
          f"[{verdict(m20['gateway_peak_rss_mb'] < TARGET_RSS_MB)}] target < {TARGET_RSS_MB:.0f} MB; peers 113-124")
    record: dict[str, Any] = {"ts": time.time(), "calls": calls, "many": many, "shared": shared}
    if baseline:
        compare = print_baseline(baseline, baseline_version, baseline_metrics(calls, many, many_rounds))
        record["baseline"] = {"exe": baseline, "version": baseline_version, "rounds": rounds,
                              "many": {n_up: {"current": r["gateway"], "baseline": r["baseline"]}
                                       for n_up, r in many_rounds.items()},
                              "compare": compare}
    if args.json:
        with args.json.open("a") as f:
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
