"""The store on PostgreSQL against the files default, paired in one run (not a test).

    .venv/bin/python benchmarks/bench_team.py [--rounds 3] [--calls 300] [--servers 100]

Starts a temporary PostgreSQL cluster (as tests/pg_support.py does: initdb into a temporary
directory, a unix socket only, fsync off) and, in each round, for both backends (order reversed
every other round):
  1. `mcpctl apply -f` of --servers Server manifests in one file (one transaction on PostgreSQL);
  2. `mcpctl get servers -o name` with that many servers;
  3. an HTTP gateway (`mcpctl serve --transport http`) answering --calls sequential `tools/call`s
     from an SDK client presenting a bearer token (so every request looks the token up):
     calls/s and round-trip p50.
Prints medians per backend and the median of the per-round ratios (postgres/files).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
MCPCTL = str(Path(sys.executable).parent / "mcpctl")
FAULT = REPO / "tests" / "servers" / "fault_server.py"


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([MCPCTL, *args], env=env, input=stdin, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"mcpctl {' '.join(args)}: {r.stderr}")
    return time.perf_counter() - t0


@contextlib.contextmanager
def gateway(env: dict[str, str], home: Path) -> Iterator[tuple[str, str]]:
    err = home / "gw.stderr"
    with open(err, "w") as log:
        proc = subprocess.Popen([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", "0"],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while not (m := re.search(r"at (http://[^ ]+/mcp)", err.read_text())):
                assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
                time.sleep(0.05)
            yield m.group(1), ""
        finally:
            proc.terminate()
            proc.wait(timeout=15)


async def calls(url: str, token: str, n: int) -> tuple[float, float]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as h, \
            Client(streamable_http_client(url, http_client=h), mode="legacy") as c:
        for _ in range(50):                     # until the upstream is up
            if any(t.name == "alpha__echo" for t in (await c.list_tools()).tools):
                break
            import anyio

            await anyio.sleep(0.1)
        times = []
        t0 = time.perf_counter()
        for i in range(n):
            s = time.perf_counter()
            await c.session.call_tool("alpha__echo", {"text": str(i)})
            times.append(time.perf_counter() - s)
        return n / (time.perf_counter() - t0), statistics.median(times)


def one(backend: str, url: str | None, servers: int, n: int) -> dict[str, float]:
    import anyio

    home = Path(tempfile.mkdtemp(prefix=f"bench-team-{backend}-"))
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    env.pop("MCPCTL_DATABASE_URL", None)
    if url:
        env["MCPCTL_DATABASE_URL"] = url
    manifest = "".join(f"---\napiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: s{i}}}\nspec: {{command: x}}\n"
                       for i in range(servers))
    out = {"apply": run(env, "apply", "-f", "-", stdin=manifest), "get": run(env, "get", "servers", "-o", "name")}
    run(env, "apply", "-f", "-", stdin=(
        f"apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: alpha}}\n"
        f"spec: {{command: {sys.executable}, args: [{FAULT}, --name, alpha]}}\n---\n"
        "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec: {servers: [alpha]}\n"))
    token = subprocess.run([MCPCTL, "create", "token", "b", "--project", "p"], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    with gateway(env, home) as (gw_url, _):
        out["calls_per_s"], out["p50_ms"] = anyio.run(calls, gw_url, token, n)
    out["p50_ms"] *= 1000
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--servers", type=int, default=100)
    a = ap.parse_args()
    import pg_support

    cluster = pg_support._start_cluster()
    try:
        results: dict[str, list[dict[str, float]]] = {"files": [], "postgres": []}
        for r in range(a.rounds):
            url = cluster.create_database()
            subprocess.run([MCPCTL, "db", "migrate"], env={**os.environ, "MCPCTL_DATABASE_URL": url},
                           check=True, capture_output=True)
            order: list[tuple[str, str | None]] = [("files", None), ("postgres", url)]
            for backend, u in (order if r % 2 == 0 else order[::-1]):
                results[backend].append(one(backend, u, a.servers, a.calls))
            print(f"round {r + 1}: " + "; ".join(f"{b} " + ", ".join(f"{k} {v:.3g}" for k, v in rs[-1].items())
                                                for b, rs in results.items()), flush=True)
        print(f"\nmedians over {a.rounds} rounds (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
        keys = results["files"][0].keys()
        for k in keys:
            f = statistics.median(x[k] for x in results["files"])
            p = statistics.median(x[k] for x in results["postgres"])
            ratio = statistics.median(pp[k] / ff[k] for ff, pp in zip(results["files"], results["postgres"], strict=True))
            print(f"  {k:12} files {f:8.3f}  postgres {p:8.3f}  postgres/files {ratio:.2f}")
    finally:
        cluster.stop()
        import shutil

        shutil.rmtree(cluster.root, ignore_errors=True)


if __name__ == "__main__":
    main()
