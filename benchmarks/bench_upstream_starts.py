"""How a gateway on a project of many upstreams starts them, and stops (not a test).

    .venv/bin/python benchmarks/bench_upstream_starts.py [--servers 600] [--baseline MCPCTL_EXE]

Each upstream is `sh -c 'touch started-$$; exec sleep 600'` (a process that never answers, so
every start lasts until its `timeouts.connect`, 5 s). `mcpctl serve --project big` over stdio is
sent SIGTERM once 50 upstreams have started; reported: the most upstream processes alive at once
before it (sampled from /proc every 20 ms), how many had started at SIGTERM, how many more started
after it, the gateway's time to exit, and the upstream processes left 5 s after its exit. Each
executable runs in a store of its own, one after the other.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

MCPCTL = str(Path(sys.executable).parent / "mcpctl")


def _marked(mark: str) -> int:
    needle, n = f"BENCH_MARK={mark}".encode(), 0
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and needle in (d / "environ").read_bytes() and \
                    (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                n += 1
        except OSError:
            continue
    return n


def run(exe: str, servers: int, root: Path) -> dict[str, Any]:
    home, markers, mark = root / "home", root / "markers", uuid.uuid4().hex
    markers.mkdir(parents=True)
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    docs = [f"apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: s{i}}}\nspec:\n  command: /bin/sh\n"
            f"  args: ['-c', 'touch {markers}/started-$$; exec sleep 600']\n  env: {{BENCH_MARK: {mark}}}\n"
            f"  timeouts: {{connect: 5}}\n" for i in range(servers)]
    docs.append("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: big}\nspec:\n  servers: ["
                + ", ".join(f"s{i}" for i in range(servers)) + "]\n")
    (root / "big.yaml").write_text("---\n".join(docs))
    subprocess.run([exe, "apply", "-f", str(root / "big.yaml")], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)      # (a warning per server: BENCH_MARK looks like a secret)
    proc = subprocess.Popen([exe, "serve", "--project", "big"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, most = time.monotonic(), 0
    while len(list(markers.iterdir())) < 50 and time.monotonic() - t0 < 120:
        most = max(most, _marked(mark))
        time.sleep(0.02)
    at_term = len(list(markers.iterdir()))
    term = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    exited = time.monotonic() - term
    time.sleep(5)
    return {"most alive at once": most, "started at SIGTERM": at_term,
            "started after SIGTERM": len(list(markers.iterdir())) - at_term,
            "exit after SIGTERM s": round(exited, 2), "left 5 s after exit": _marked(mark),
            "SIGTERM after s": round(term - t0, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=600)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE")
    a = ap.parse_args()
    for name, exe in [("current", MCPCTL)] + ([("baseline", a.baseline)] if a.baseline else []):
        with tempfile.TemporaryDirectory() as tmp:
            print(name, run(exe, a.servers, Path(tmp)), flush=True)
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")


if __name__ == "__main__":
    main()
