"""`mcpctl serve` refuses a port it cannot use with one clear line, not a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

from ci_support import SLACK


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpctl", "serve", "--project", "p", "--transport", "http", *args],
                          capture_output=True, text=True, timeout=60 * SLACK, stdin=subprocess.DEVNULL)


def test_port_out_of_range() -> None:
    """A bad option value is a usage error: exit 2, as the README's table says (issue 32: it was 1)."""
    r = _serve("--port", "99999")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --port 99999: must be between 1 and 65535 (or 0: any free port, "
                                "printed when listening)")


def test_every_bad_option_value_exits_2() -> None:
    for args in (["--header-timeout", "0"], ["--max-sessions", "-1"], ["--allow-host", "a:80"], ["--port=-1"]):
        r = _serve(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith(f"error: {args[0].split('=')[0]}"), r.stderr


def test_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = _serve("--port", str(port))
    assert r.returncode == 1                # not the option: the machine (another process has the port)
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in r.stderr
    assert "Traceback" not in r.stderr
