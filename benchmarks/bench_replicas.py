"""The call path's cost of issue 36's forwarding layer: this checkout against a baseline, paired (not a test).

    .venv/bin/python benchmarks/bench_replicas.py --baseline <git ref> [--rounds 5] [--calls 300]

Starts a temporary PostgreSQL (as tests/pg_support.py does) and, in each round, for both builds
(the baseline's `src/` exported with `git archive` into a temporary directory, this checkout's
`src/`; order reversed every other round): one `mcpctl serve --transport http` on the database
(the current build registers as a replica and puts its forwarding layer in front), and an SDK
client of each era making --calls sequential `tools/call`s through it: a handshake-era client
(its requests carry its own session id: the prefix check) and a 2026-07-28 one (no session id:
the body's byte search). Prints calls/s and round-trip p50 per build and era, and the median of
the per-round ratios (current / baseline).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
FAULT = REPO / "tests" / "servers" / "fault_server.py"
ERAS = ("legacy", "2026-07-28")


def export(ref: str) -> Path:
    """`ref`'s src/ in a temporary directory."""
    out = Path(tempfile.mkdtemp(prefix="bench-replicas-base-"))
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    return out / "src"


def mcpctl(src: Path, env: dict[str, str], *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "mcpctl", *args], env={**env, "PYTHONPATH": str(src)},
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"mcpctl {' '.join(args)}: {r.stderr}")
    return r.stdout


@contextlib.contextmanager
def gateway(src: Path, env: dict[str, str], home: Path) -> Iterator[str]:
    err = home / f"gw-{time.monotonic_ns()}.stderr"
    with open(err, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpctl", "serve", "--project", "p", "--transport", "http",
                                 "--port", "0"], env={**env, "PYTHONPATH": str(src)}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while not (m := re.search(r"at (http://[^ ]+/mcp)", err.read_text())):
                assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
                time.sleep(0.05)
            yield m.group(1)
        finally:
            proc.terminate()
            proc.wait(timeout=15)


async def calls(url: str, token: str, n: int, era: str) -> tuple[float, float]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as h, \
            Client(streamable_http_client(url, http_client=h), mode=era) as c:
        for _ in range(100):                     # until the upstream is up
            if any(t.name == "alpha__echo" for t in (await c.session.list_tools()).tools):
                break
            await anyio.sleep(0.1)
        for i in range(20):
            await c.session.call_tool("alpha__echo", {"text": str(i)})
        times = []
        t0 = time.perf_counter()
        for i in range(n):
            s = time.perf_counter()
            await c.session.call_tool("alpha__echo", {"text": str(i)})
            times.append(time.perf_counter() - s)
        return n / (time.perf_counter() - t0), statistics.median(times) * 1000


def one(src: Path, url: str, n: int) -> dict[str, float]:
    import anyio

    home = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    env = {**os.environ, "MCPCTL_HOME": str(home), "MCPCTL_DATABASE_URL": url}
    token = mcpctl(src, env, "create", "token", f"b{time.monotonic_ns()}", "--project", "p").strip()
    out: dict[str, float] = {}
    with gateway(src, env, home) as gw_url:
        for era in ERAS:
            out[f"{era} calls/s"], out[f"{era} p50 ms"] = anyio.run(calls, gw_url, token, n, era)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git ref of the build to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args()
    import pg_support

    base = export(a.baseline)
    builds = {"baseline": base, "current": REPO / "src"}
    cluster = pg_support._start_cluster()
    try:
        url = cluster.create_database()
        env = {**os.environ, "MCPCTL_DATABASE_URL": url}
        mcpctl(REPO / "src", env, "db", "migrate")
        mcpctl(REPO / "src", env, "apply", "-f", str(write_manifest()))
        results: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
        for r in range(a.rounds):
            order = list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]
            for name, src in order:
                results[name].append(one(src, url, a.calls))
            print(f"round {r + 1}: " + "; ".join(f"{b} " + ", ".join(f"{k} {v:.3g}" for k, v in rs[-1].items())
                                                for b, rs in results.items()), flush=True)
        print(f"\nmedians over {a.rounds} rounds (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
        for k in results["current"][0]:
            b = statistics.median(x[k] for x in results["baseline"])
            c = statistics.median(x[k] for x in results["current"])
            ratio = statistics.median(cc[k] / bb[k] for bb, cc in zip(results["baseline"], results["current"],
                                                                      strict=True))
            print(f"  {k:22} baseline {b:8.3f}  current {c:8.3f}  current/baseline {ratio:.3f}")
    finally:
        cluster.stop()
        import shutil

        shutil.rmtree(cluster.root, ignore_errors=True)
        shutil.rmtree(base.parent, ignore_errors=True)


def write_manifest() -> Path:
    path = Path(tempfile.mkdtemp(prefix="bench-replicas-m-")) / "p.yaml"
    path.write_text(f"apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: alpha}}\n"
                    f"spec: {{command: {sys.executable}, args: [{FAULT}, --name, alpha]}}\n---\n"
                    "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec: {servers: [alpha]}\n")
    return path


if __name__ == "__main__":
    main()
