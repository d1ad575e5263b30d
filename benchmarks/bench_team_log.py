"""The invocation log on PostgreSQL against the SQLite default, paired in one run (not a test).

    .venv/bin/python benchmarks/bench_team_log.py [--rounds 6] [--iters 400] [--seconds 3]
                                                  [--rows 1000000] [--json out.json]

A temporary PostgreSQL cluster (tests/pg_support.py: initdb as an unprivileged user, unix socket
only), restarted with PostgreSQL's durable defaults (fsync, synchronous_commit on: the tests turn
them off; SQLite's log commits with synchronous=NORMAL) and one MCPCTL_HOME with one fault_server upstream. Measured:
  1. `mcpctl serve` over stdio (bench_gateway's raw JSON-RPC client), the same gateway with the
     log in SQLite (no database URL) and in PostgreSQL (MCPCTL_DATABASE_URL), in interleaved
     rounds (order reversed every other round): tools/call round trip p50 (sequential calls) and
     calls/s with 16 in flight. Reported: medians of the per-round ratios PostgreSQL / SQLite
     (targets: calls/s >= 0.95x, p50 <= 1.05x).
  2. `mcpctl favourites suggest --project bench --window 30 -o json` end to end (a subprocess:
     interpreter start, imports, the query, the report) over --rows logged calls in the last 30
     days (20 tools, 2,000 sessions, 1 in 12 failing), on each backend; median of 5 runs
     (target < 1 s on PostgreSQL); the `usage()` query alone in process too.
The machine's load average is printed with the numbers: on a shared machine they all grow with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

from bench_gateway import (  # noqa: E402
    MCPCTL,
    RawClient,
    make_home,
    measure_calls,
    measure_concurrency,
    upstream,
    wait_full,
)

TARGET_CPS_RATIO = 0.95
TARGET_P50_RATIO = 1.05
TARGET_SUGGEST_S = 1.0
SESSIONS = 2_000        # agent sessions in the 30 days (usage() returns a row per session and tool)


async def one_gateway(home: Path, env: dict[str, str], iters: int, seconds: float, echo: str) -> dict[str, float]:
    async with RawClient.spawn([MCPCTL, "serve", "--project", "bench"], {"MCPCTL_HOME": str(home), **env}) as g:
        await g.initialize()
        await wait_full(g, 21)
        call = await measure_calls(g, f"s0__{echo}", iters)
        cps = await measure_concurrency(g, f"s0__{echo}", seconds)
        return {**call, "calls_per_s": cps}


async def bench_calls(home: Path, url: str, rounds: int, iters: int, seconds: float, echo: str
                      ) -> list[dict[str, dict[str, float]]]:
    targets = {"sqlite": {}, "postgresql": {"MCPCTL_DATABASE_URL": url}}
    out = []
    for rnd in range(rounds):
        names = list(targets) if rnd % 2 == 0 else list(targets)[::-1]
        got = {name: await one_gateway(home, targets[name], iters, seconds, echo) for name in names}
        out.append(got)
        print(f"  round {rnd + 1}: p50 sqlite {got['sqlite']['p50_ms']:.3f} ms, postgresql "
              f"{got['postgresql']['p50_ms']:.3f} ms; {got['sqlite']['calls_per_s']:.0f} vs "
              f"{got['postgresql']['calls_per_s']:.0f} calls/s", flush=True)
    return out


def fill(url: str, sqlite_path: Path, rows: int, tools: list[str]) -> None:
    """`rows` calls over the last 30 days into both logs (PostgreSQL by COPY)."""
    import psycopg

    from mcpctl.audit.log import InvocationLog
    from mcpctl.audit.records import CallRecord

    rng = random.Random(5)
    now = time.time()
    sessions = [f"s{i:05d}" for i in range(SESSIONS)]
    cols = "uid, ts, duration_ms, project, presented_name, canonical_id, outcome, client_name, session_id, host"
    lite = InvocationLog(sqlite_path)
    t0 = time.perf_counter()
    import uuid

    with psycopg.connect(url) as conn, conn.cursor() as cur:
        batch: list[CallRecord] = []
        with cur.copy(f"COPY invocations ({cols}) FROM STDIN") as copy:
            for _ in range(rows):
                tool = rng.choice(tools)
                ts = now - rng.random() * 29.5 * 86400
                outcome = "tool_error" if rng.random() < 1 / 12 else "ok"
                sid = rng.choice(sessions)
                copy.write_row((uuid.uuid4(), ts, 12.0, "bench", tool.replace("/", "__"), tool, outcome, "bench",
                                sid, "bench-host"))
                batch.append(CallRecord(ts=ts, duration_ms=12.0, project="bench",
                                        presented_name=tool.replace("/", "__"), canonical_id=tool, outcome=outcome,
                                        client_name="bench", session_id=sid, host="bench-host"))
                if len(batch) >= 50_000:
                    lite.record_many(batch)
                    batch = []
        lite.record_many(batch)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE invocations")     # what autovacuum does after a bulk load
    lite.close()
    print(f"  filled {rows:,} calls into both logs in {time.perf_counter() - t0:.1f}s", flush=True)


def time_suggest(home: Path, env: dict[str, str], runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run([MCPCTL, "favourites", "suggest", "--project", "bench", "--window", "30", "-o", "json"],
                           env={**os.environ, "MCPCTL_HOME": str(home), **env}, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"favourites suggest failed: {r.stderr[-2000:]}")
    return times


def time_usage(home: Path, url: str | None, runs: int = 5) -> list[float]:
    os.environ["MCPCTL_HOME"] = str(home)
    from mcpctl.audit.log import InvocationLog
    from mcpctl.audit.pglog import PgInvocationLog

    log: Any = PgInvocationLog(url) if url else InvocationLog(home / "data" / "invocations.db")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        log.usage("bench", since=time.time() - 30 * 86400)
        times.append(time.perf_counter() - t0)
    log.close()
    return times


def calls_part(home: Path, url: str, args: argparse.Namespace, echo: str) -> tuple[Any, float, float, Any]:
    if args.skip_calls:
        asyncio.run(one_gateway(home, {}, 20, 0.1, echo))      # lists the catalogue into the cache
        return [], float("nan"), float("nan"), {}
    print("1. gateway calls, the log in SQLite vs PostgreSQL (paired rounds)", flush=True)
    rounds = asyncio.run(bench_calls(home, url, args.rounds, args.iters, args.seconds, echo))
    cps_ratio = statistics.median(r["postgresql"]["calls_per_s"] / r["sqlite"]["calls_per_s"] for r in rounds)
    p50_ratio = statistics.median(r["postgresql"]["p50_ms"] / r["sqlite"]["p50_ms"] for r in rounds)
    med = {b: {k: statistics.median(r[b][k] for r in rounds) for k in ("p50_ms", "p95_ms", "calls_per_s")}
           for b in ("sqlite", "postgresql")}
    print(f"  calls/s: sqlite {med['sqlite']['calls_per_s']:.0f}, postgresql {med['postgresql']['calls_per_s']:.0f}"
          f"; ratio {cps_ratio:.3f} (target >= {TARGET_CPS_RATIO})", flush=True)
    print(f"  p50: sqlite {med['sqlite']['p50_ms']:.3f} ms, postgresql {med['postgresql']['p50_ms']:.3f} ms; "
          f"ratio {p50_ratio:.3f} (target <= {TARGET_P50_RATIO})", flush=True)
    return rounds, cps_ratio, p50_ratio, med


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--skip-calls", action="store_true", help="only the favourites suggest part")
    args = ap.parse_args()

    import pg_support
    from mcpctl.db import migrations, pool

    cluster = pg_support._start_cluster()
    try:
        cluster.stop()          # again with fsync and synchronous_commit on (the tests run without)
        opts = f"-k {cluster.socket_dir} -p {cluster.port} -c listen_addresses='' -c max_connections=200"
        cluster.pg_ctl("-o", opts, "-l", str(cluster.root / "server.log"), "-w", "-t", "60", "start")
        url = cluster.create_database()
        migrations.migrate(url)
        pool.close()
        root = Path(tempfile.mkdtemp(prefix="bench-team-log-"))
        up = upstream(0, 20, use_shared=False)
        home = make_home(root, [up])
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
        rounds, cps_ratio, p50_ratio, med = calls_part(home, url, args, up.echo)
        print(f"2. favourites suggest --window 30 over {args.rows:,} logged calls", flush=True)
        tools = [f"s0/synthetic_{i:04d}" for i in range(6)] + ["s0/echo", "s0/add", "s0/structured", "s0/fail"]
        tools += [f"s0/gone_{i}" for i in range(10)]          # tools the catalogue no longer has
        # the gateways above left this home's SQLite log with their calls: start it over for the fill
        for suffix in ("", "-wal", "-shm"):
            (home / "data" / f"invocations.db{suffix}").unlink(missing_ok=True)
        with __import__("psycopg").connect(url) as conn:
            conn.execute("TRUNCATE invocations")
        fill(url, home / "data" / "invocations.db", args.rows, tools)
        t0 = time.perf_counter()
        subprocess.run([MCPCTL, "--version"], capture_output=True, check=True)
        print(f"  (mcpctl --version alone: {time.perf_counter() - t0:.3f}s)", flush=True)
        suggest = {"sqlite": time_suggest(home, {}), "postgresql": time_suggest(home, {"MCPCTL_DATABASE_URL": url})}
        usage = {"sqlite": time_usage(home, None), "postgresql": time_usage(home, url)}
        for b in ("sqlite", "postgresql"):
            print(f"  {b}: suggest end to end median {statistics.median(suggest[b]):.3f}s "
                  f"(min {min(suggest[b]):.3f}s); usage() query median {statistics.median(usage[b]):.3f}s", flush=True)
        ok = statistics.median(suggest["postgresql"]) < TARGET_SUGGEST_S
        print(f"  postgresql suggest < {TARGET_SUGGEST_S:g}s: {'yes' if ok else 'NO'}", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"rounds": rounds, "cps_ratio": cps_ratio, "p50_ratio": p50_ratio,
                                             "medians": med, "suggest_s": suggest, "usage_s": usage,
                                             "rows": args.rows}, indent=2))
    finally:
        pool.close()
        cluster.stop()
        import shutil

        shutil.rmtree(cluster.root, ignore_errors=True)


if __name__ == "__main__":
    main()
