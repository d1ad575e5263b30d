"""The relay of `mcpctl serve --project P --shared`: the client's stdio, handed to (or spliced to)
the project's shared gateway (`share.daemon`) over a unix socket.

`mcpctl.cli.main` calls `route()` for every `serve` command line before anything else is loaded,
so a relay imports the standard library and `mcpctl.paths` and nothing more: no typer, no SDK, no
pydantic, not even platformdirs, hashlib (OpenSSL) or dataclasses until it must start a daemon (a
few MB of memory, where a gateway is tens). The socket's name is a hash of what decides what a
gateway serves (`key`): the installation, the store's location (MCPCTL_HOME, the XDG directories,
the database URL), the project, the profile, the page size and the working directory. A relay
connects to it; when nothing listens (no socket, or a stale one a killed daemon left: connection
refused) it takes an flock beside the socket, checks again, and starts the daemon detached (a new
session; stdin and stdout /dev/null, stderr appended to a log), waiting for the one byte the daemon
writes to a pipe once it listens (EOF instead: it failed; its log's last lines are shown).

Then, when stdin and stdout are pipes or sockets (how clients start a server), the relay sends
them to the daemon (SCM_RIGHTS), which serves them as a gateway serves its own stdio: no byte of
the protocol passes through the relay, which waits for the daemon's `0` (the client closed stdin:
exit 0). Otherwise (a terminal, a file) it splices bytes stdin -> socket and socket -> stdout,
stdin's end passed on as a half-close (exit 0 once the daemon has closed the session). A daemon
that goes away first (stopped, killed) makes the relay exit 1 with one line on stderr.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from mcpctl import __version__, paths

FLAG: Final = "--shared"
DAEMON_FLAG: Final = "--shared-daemon"      # hidden: `serve ... --shared-daemon SOCKET` is the daemon
ENV_SHARED: Final = "MCPCTL_SHARED"          # "1": every stdio `serve` is a relay, as with --shared
ENV_READY: Final = "MCPCTL_SHARED_READY_FD"  # the daemon's end of the relay's readiness pipe
START_TIMEOUT: Final = 180.0                 # seconds a starting daemon may take to listen
_MAX_SOCKET_PATH: Final = 104                # sun_path holds 108 bytes with its NUL
_CHUNK: Final = 65536

_daemon_socket: str | None = None


def daemon_socket() -> str | None:
    """The socket this process serves as a shared daemon (`--shared-daemon`), else None."""
    return _daemon_socket


def route(argv: list[str], parse: Callable[[list[str]], dict[str, Any] | None], url: str | None) -> list[str]:
    """`argv` (a `serve` command line, after the program's name and `--database-url`) without the
    shared flags; a relay's command line is relayed here and the process exits. `parse`: the plain
    command line's options (`cli.serve.parse_lean`), None for what typer should handle."""
    global _daemon_socket
    args = argv[1:]
    if DAEMON_FLAG in args[:-1]:
        i = args.index(DAEMON_FLAG)
        _daemon_socket, args = args[i + 1], args[:i] + args[i + 2:]
    flag = FLAG in args
    args = [a for a in args if a != FLAG]
    sys.argv[1:] = rest = ["serve", *args]
    if _daemon_socket is not None or os.environ.get("_MCPCTL_COMPLETE"):
        return rest
    if not flag and os.environ.get(ENV_SHARED) != "1":
        return rest
    values = parse(args)
    if values is None:          # --help, a bad value: typer says what is wrong
        return rest
    if values["transport"] != "stdio":
        if flag:
            print("error: --shared serves stdio clients only (an HTTP gateway already serves many sessions); "
                  "drop --shared or --transport http", file=sys.stderr)
            sys.exit(2)
        return rest             # MCPCTL_SHARED=1 is for stdio gateways
    sys.exit(Relay(values, args, url).run())


def _sha256(data: bytes) -> str:
    """hashlib's sha256 without hashlib, which loads OpenSSL (1.5 MB of a relay's memory)."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]    # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:           # pragma: no cover - a build without them
            from hashlib import sha256
    return str(sha256(data).hexdigest())


# The environment that decides where the store is (`paths`: MCPCTL_HOME, else platformdirs from these).
_STORE_ENV: Final = ("MCPCTL_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "HOME",
                     "MCPCTL_DATABASE_URL")


def key(values: dict[str, Any], url: str | None) -> str:
    """What the socket is named after: everything that changes what a gateway serves (the store's
    location as the environment gives it, read without loading platformdirs)."""
    parts = (__version__, sys.executable, os.getcwd(), *(os.environ.get(k, "") for k in _STORE_ENV), url or "",
             values["project"], values["profile"] or "", str(values["page_size"]))
    return _sha256("\0".join(parts).encode("utf-8", "surrogateescape"))[:16]


def _private(d: Path) -> Path | None:
    """`d`, made 0700 and checked to be the user's own, or None if it cannot be."""
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.stat(d)
        if st.st_uid != os.getuid():
            return None
        if st.st_mode & 0o077:
            os.chmod(d, 0o700)
    except OSError:
        return None
    return d


def socket_path(name: str) -> Path:
    """Where the daemon named `name` listens: the runtime directory (`paths.runtime_dir`), or a
    private directory in the temporary one when that cannot be made or its path is too long."""
    for d in (paths.runtime_dir(), Path("/tmp") / f"mcpctl-{os.getuid()}"):
        p = d / f"{name}.sock"
        if len(os.fsencode(p)) <= _MAX_SOCKET_PATH and _private(d) is not None:
            return p
    raise SystemExit(f"mcpctl: no private directory for the shared gateway's socket ({paths.runtime_dir()})")


def _connect(path: Path) -> socket.socket | None:
    """A connection to the daemon at `path`; None when none listens there (missing or stale)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.fspath(path))
    except OSError as e:
        s.close()
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise
    return s


def _passable() -> bool:
    """Whether stdin and stdout are pipes or sockets, which the daemon can serve itself (handed
    over with SCM_RIGHTS: no byte then passes through the relay); else the relay splices."""
    try:
        return all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


class Relay:
    """One relayed stdio session."""

    def __init__(self, values: dict[str, Any], args: list[str], url: str | None) -> None:
        self.project: str = values["project"]
        self.args = args
        self.url = url
        name = key(values, url)
        self.name = name
        self.path = socket_path(name)
        self.stdin_done = False

    @property
    def log(self) -> Path:
        """The daemon's stderr (platformdirs is loaded for it only when a relay starts a daemon or fails)."""
        return paths.log_dir() / f"shared-{self.name}.log"

    def run(self) -> int:
        try:
            sock = self.connect()
        except OSError as e:
            print(f"mcpctl: cannot reach the shared gateway at {self.path}: {e}", file=sys.stderr)
            return 1
        if sock is None:
            return 1
        if _passable():
            try:
                socket.send_fds(sock, [b"P"], [0, 1])
            except OSError as e:
                print(f"mcpctl: cannot hand stdio to the shared gateway: {e}", file=sys.stderr)
                return 1
            return self.wait(sock)
        sock.sendall(b"S")
        return self.splice(sock)

    def wait(self, sock: socket.socket) -> int:
        """The daemon serves the client's own pipes: wait for its `0` (the client closed stdin)."""
        got = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(16):
                got += chunk
        if got.startswith(b"0"):
            return 0
        self.gone()
        return 1

    def gone(self) -> None:
        print(f"mcpctl: the shared gateway of project {self.project!r} closed the connection "
              f"(stopped or killed); its log: {self.log}", file=sys.stderr)

    def connect(self) -> socket.socket | None:
        sock = _connect(self.path)
        if sock is not None:
            return sock
        lock = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            sock = _connect(self.path)        # another relay may have started it meanwhile
            if sock is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)      # a killed daemon's socket
                if not self.start():
                    return None
                sock = _connect(self.path)
                if sock is None:
                    print(f"mcpctl: the shared gateway started but {self.path} refuses connections; "
                          f"its log: {self.log}", file=sys.stderr)
            return sock
        finally:
            os.close(lock)

    def start(self) -> bool:
        """Start the daemon and wait until it listens (or fails)."""
        import subprocess

        r, w = os.pipe()
        env = {k: v for k, v in os.environ.items() if k != ENV_SHARED}
        env[ENV_READY] = str(w)
        if self.url:
            env["MCPCTL_DATABASE_URL"] = self.url     # the flag's database, not on a command line
        paths.private_dir(self.log.parent)
        try:
            with open(self.log, "ab", opener=paths.open_private) as log:
                subprocess.Popen([sys.executable, "-m", "mcpctl", "serve", *self.args, DAEMON_FLAG, str(self.path)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
                                 pass_fds=(w,), start_new_session=True)
        finally:
            os.close(w)
        try:
            ready = select.select([r], [], [], START_TIMEOUT)[0] and os.read(r, 1) == b"1"
        finally:
            os.close(r)
        if not ready:
            print(f"mcpctl: the shared gateway of project {self.project!r} did not start; its log: {self.log}",
                  file=sys.stderr)
            with contextlib.suppress(OSError):
                sys.stderr.write("".join(self.log.read_text(errors="replace").splitlines(True)[-10:]))
        return bool(ready)

    def _up(self, sock: socket.socket) -> None:
        """stdin -> socket; stdin's end (EOF, a terminal hung up) is the socket's half-close."""
        while True:
            try:
                data = os.read(0, _CHUNK)
            except OSError:
                data = b""
            if not data:
                self.stdin_done = True
                break
            try:
                sock.sendall(data)
            except OSError:         # the daemon went away: the main thread says so
                break
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    def splice(self, sock: socket.socket) -> int:
        import threading  # (a relay that hands its pipes over needs none)

        threading.Thread(target=self._up, args=(sock,), name="stdin", daemon=True).start()
        try:
            while data := sock.recv(_CHUNK):
                view = memoryview(data)
                while view:
                    view = view[os.write(1, view):]
        except BrokenPipeError:      # the client went away: nothing to report to it
            return 0
        except OSError:
            pass
        if self.stdin_done:
            return 0
        self.gone()
        return 1
