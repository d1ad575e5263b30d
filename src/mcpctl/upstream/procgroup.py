"""Process groups of stdio upstreams: ending what a server leaves behind, even if the gateway dies.

Each stdio upstream runs in its own session, so its own process group, whose id is the server's
pid. What this module guarantees:

- `end_group(pgid)`: once the server has exited, whatever is left of its group (background
  children) gets SIGTERM and SIGCONT (a stopped member handles SIGTERM only once continued), then
  SIGKILL if a member still lives `GROUP_GRACE` seconds later. It returns within about
  `GROUP_GRACE` and a little (it does not wait for the SIGKILL to land).
- A group is signalled only while it has a live member (zombies, dead but not reaped, do not
  count: read from /proc). Its id cannot name another group while a member lives, so a reused id
  can be hit only in a microsecond race.
- `GUARD`, one watchdog per gateway process (`/bin/sh`, in its own session, started with the
  first registration): the gateway registers each upstream's group when it starts it and
  unregisters it once the group is gone. However the gateway dies (kill -9 included), the guard
  sees EOF on its stdin and ends every group still registered the same way: SIGTERM and SIGCONT,
  SIGKILL 2 s later; nothing registered, it exits at once. A guard that died is started again,
  with every group still registered, the next time the gateway registers or unregisters one.

Limits: a process that leaves its group (`setsid`, double-forking daemons) is not followed; a
guard killed together with the gateway, or a kill between spawn and registration, leaves the
group running; without `/bin/sh` (logged once) only the gateway's own clean stops end groups.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from typing import Final

import anyio

log = logging.getLogger("mcpctl.gateway")

GROUP_GRACE: Final = 2.0        # seconds between SIGTERM and SIGKILL of what is left of a group


async def end_group(pgid: int, grace: float = GROUP_GRACE) -> None:
    """End what is left of process group `pgid`: SIGTERM, then SIGKILL after `grace` seconds.

    The id cannot name another group while a member of this one lives; once it is empty (which
    `group_alive` checks first) nothing is sent.
    """
    if not group_alive(pgid):
        return
    signal_group(pgid, signal.SIGTERM)
    signal_group(pgid, signal.SIGCONT)     # a stopped member handles SIGTERM only once continued
    deadline = time.monotonic() + grace
    pause = 0.005
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            log.info("process group %d did not end within %.1fs of SIGTERM: SIGKILL", pgid, grace)
            signal_group(pgid, signal.SIGKILL)
            return
        await anyio.sleep(pause)
        pause = min(pause * 2, 0.1)


def group_alive(pgid: int) -> bool:
    """Whether process group `pgid` has a live member (zombies, dead but not reaped, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # only members we may not signal: nothing we can do about them
        return False
    return _live_member(pgid)


def _live_member(pgid: int) -> bool:
    # kill(-pgid, 0) also succeeds for zombies (an init that does not reap keeps them): ask /proc.
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    want = str(pgid).encode()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()   # state ppid pgrp ...
        if len(fields) > 2 and fields[2] == want and fields[0] != b"Z":
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    """`os.killpg`, ignoring a group that is gone or whose members we may not signal."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# The watchdog: reads "+ PGID" / "- PGID" lines from the gateway; when the gateway is gone (EOF on
# its stdin) it ends every group still registered: SIGTERM (and SIGCONT, for stopped members),
# then SIGKILL after 2 s. Nothing registered: it exits at once.
_GUARD_SCRIPT: Final = """
g=" "
while read -r op pg; do
  case "$op" in
    +) g="$g$pg " ;;
    -) n=" "; for p in $g; do [ "$p" = "$pg" ] || n="$n$p "; done; g="$n" ;;
  esac
done
[ "$g" = " " ] && exit 0
for p in $g; do kill -TERM -"$p" 2>/dev/null; kill -CONT -"$p" 2>/dev/null; done
i=0
while [ "$i" -lt 20 ]; do
  sleep 0.1
  live=
  for p in $g; do kill -0 -"$p" 2>/dev/null && live=1; done
  [ -z "$live" ] && exit 0
  i=$((i + 1))
done
for p in $g; do kill -KILL -"$p" 2>/dev/null; done
"""


class _Guard:
    """Ends the upstreams' process groups if this process dies without ending them itself.

    One `/bin/sh` per gateway process, in its own session (a terminal's ^C or a signal to the
    gateway's group does not reach it), started with the first upstream. The gateway registers
    each upstream's group when it starts it and unregisters it once the group is gone; the guard
    holds the only read end of that pipe, so the gateway's death, however it dies, is an EOF.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()
        self._lock = threading.Lock()
        self._failed = False

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+ {pgid}\n")

    def remove(self, pgid: int) -> None:
        with self._lock:
            if pgid in self._groups:
                self._groups.discard(pgid)
                self._send(f"- {pgid}\n")

    def _send(self, line: str) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            if not self._start():
                return
            proc = self._proc
            line = "".join(f"+ {g}\n" for g in sorted(self._groups))
        assert proc is not None and proc.stdin is not None
        try:
            os.write(proc.stdin.fileno(), line.encode())
        except OSError as e:     # it died (restarted at the next registration) or is stuck
            log.warning("upstream guard: %s", e)
            self._drop()

    def _start(self) -> bool:
        self._drop()
        if self._failed:
            return False
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", _GUARD_SCRIPT, "mcpctl-upstream-guard"],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    cwd="/", start_new_session=True)
        except OSError as e:
            self._failed = True
            log.warning("cannot start the upstream guard (%s): if the gateway is killed, its upstreams' "
                        "background processes are left running", e)
            return False
        assert proc.stdin is not None
        os.set_blocking(proc.stdin.fileno(), False)
        self._proc = proc
        return True

    def _drop(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()
            self._proc = None


GUARD: Final = _Guard()
