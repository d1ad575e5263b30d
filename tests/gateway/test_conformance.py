"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode) run
against its reference server directly and through `mcpctl serve --transport http` with bare names
(`../shared/conformance`): a scenario that passes directly must pass through the gateway too, and
at least 30 scenarios pass through it (30 of 30 with suite 0.1.16, as directly).

`.ci/run` installs Node 22 and the suite into `.conformance-cache/` in the checkout, where
`run.sh` finds them (`CACHE`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gwkit import REPO, Kit, free_port, wait_listening
from test_serve_http import http_gateway_process

from ci_support import SLACK, skip_unless_ci

CONFORMANCE = Path(os.environ.get("MCPCTL_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))
CACHE = Path(os.environ.get("MCPCTL_CONFORMANCE_CACHE", REPO / ".conformance-cache"))
SCENARIO = re.compile(r"^([✓✗]) ([\w-]+):", re.M)


def _installed() -> bool:
    suite = CACHE / "suite" / "node_modules" / ".bin" / "conformance"
    return (CONFORMANCE / "run.sh").exists() and suite.exists()


def _run(url: str, out: Path, token_file: Path | None = None) -> dict[str, bool]:
    argv = [str(CONFORMANCE / "run.sh"), url, str(out)] + ([str(token_file)] if token_file else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=420 * SLACK, env={**os.environ, "CACHE": str(CACHE)})
    results = {name: mark == "✓" for mark, name in SCENARIO.findall(r.stdout)}
    assert results, f"the suite reported no scenario:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return results


@pytest.mark.npm
def test_every_scenario_that_passes_directly_passes_through_the_gateway(kit: Kit, tmp_path: Path) -> None:
    if not _installed():
        skip_unless_ci(f"the MCP conformance suite is not installed in {CACHE} (.ci/run installs it), or "
                       f"{CONFORMANCE} is missing")
    port = free_port()
    server = subprocess.Popen([sys.executable, str(CONFORMANCE / "everything_server.py"), "--port", str(port),
                               "--log-level", "WARNING"], stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / "everything.log", "w"),  # noqa: SIM115
                              env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    try:
        wait_listening(port, server, "the reference server", timeout=30)
        url = f"http://127.0.0.1:{port}/mcp"
        direct = _run(url, tmp_path / "direct")
        kit.http_server("ev", url)
        project = kit.project("conf", ["ev"], names={"style": "bare"})
        with http_gateway_process(kit, project) as gw:
            token_file = tmp_path / "token"
            token_file.write_text(gw.token + "\n")
            token_file.chmod(0o600)
            through = _run(gw.url, tmp_path / "gateway", token_file)
    finally:
        server.terminate()
        server.wait(timeout=10 * SLACK)
    passing = sorted(name for name, ok in direct.items() if ok)
    lost = [name for name in passing if not through.get(name)]
    assert lost == [], f"pass directly but not through the gateway: {lost}"
    assert len(passing) >= 30, f"the reference server itself passed only {len(passing)}: {direct}"
    through_passing = sum(through.values())
    assert through_passing >= 30, f"only {through_passing} of {len(through)} scenarios pass through the gateway"
