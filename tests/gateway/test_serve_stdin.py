"""`mcpctl serve` started without a usable client: stdin at EOF, /dev/null, or closed fds.

A backgrounded or nohup start must end as on EOF: exit 0, no traceback, no process left behind.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from gwkit import MCPCTL, REPO, SLACK, Kit


@pytest.mark.parametrize("redirect", ["< /dev/null", "<&-", ">&-", "< README.md"])
def test_serve_without_a_client_exits_cleanly(kit: Kit, redirect: str) -> None:
    kit.server("alpha", "--start-delay", "1")
    kit.project("p", ["alpha"], favouriteIndex={"enabled": True, "tools": ["alpha/echo"]})
    env = {**os.environ, "MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark}
    done = subprocess.run(["sh", "-c", f"exec {MCPCTL} serve --project p {redirect}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=20 * SLACK)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert kit.leftovers() == []
