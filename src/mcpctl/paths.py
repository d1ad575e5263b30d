"""Where mcpctl keeps things: the only place paths are computed.

`MCPCTL_HOME` overrides every path (tests use it); otherwise platformdirs decides.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from platformdirs import PlatformDirs

ENV_HOME = "MCPCTL_HOME"


def home_override() -> Path | None:
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser() if value else None


def _dirs() -> PlatformDirs:
    from platformdirs import PlatformDirs  # when first needed: `serve --shared`'s relay needs none

    return PlatformDirs("mcpctl", appauthor=False)


def config_dir() -> Path:
    """Resources (one YAML file each) live here."""
    home = home_override()
    return home / "config" if home else _dirs().user_config_path


def data_dir() -> Path:
    """The invocation log (SQLite) lives here."""
    home = home_override()
    return home / "data" if home else _dirs().user_data_path


def state_dir() -> Path:
    """Catalogue cache, observed status, gateway tokens."""
    home = home_override()
    return home / "state" if home else _dirs().user_state_path


def log_dir() -> Path:
    """Gateway and upstream stderr logs."""
    home = home_override()
    return home / "log" if home else _dirs().user_log_path


def runtime_dir() -> Path:
    """Sockets of the shared gateways (`serve --shared`, `mcpctl.share`): $XDG_RUNTIME_DIR/mcpctl
    (platformdirs' runtime directory, without loading it), else one of the user's in the temporary
    directory."""
    home = home_override()
    if home:
        return home / "run"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "mcpctl" if xdg else Path(os.environ.get("TMPDIR") or "/tmp") / f"mcpctl-{os.getuid()}"


def resources_dir() -> Path:
    return config_dir() / "resources"


def status_dir() -> Path:
    return state_dir() / "status"


def catalogue_cache_dir() -> Path:
    return state_dir() / "catalogue"


def invocation_log_path() -> Path:
    return data_dir() / "invocations.db"


# -- private files ----------------------------------------------------------------------------
# Everything mcpctl keeps is the user's alone: the invocation log says what they did, an upstream's
# stderr log can hold a resolved secret, tokens and backups are credentials. Directories are 0700
# and files 0600 under mcpctl's roots, whatever the umask, and whatever an older mcpctl left open
# is tightened when it is next written or opened. No process-wide umask: the gateway's upstreams,
# `tools search --install`'s pip and the user's editor inherit it, and their files are not ours.

PRIVATE_DIR: Final = 0o700
PRIVATE_FILE: Final = 0o600


def roots() -> tuple[Path, ...]:
    """The directories mcpctl owns (each private, with everything below it)."""
    return config_dir(), data_dir(), state_dir(), log_dir()


def _root_of(path: Path) -> Path | None:
    path = Path(os.path.abspath(path))
    for root in roots():
        root = Path(os.path.abspath(root))
        if path == root or root in path.parents:
            return root
    return None


def tighten(path: str | os.PathLike[str], fd: int | None = None) -> None:
    """Take group and other bits off `path` (or its open `fd`) if it is ours and has any;
    a missing path is left alone."""
    try:
        st = os.fstat(fd) if fd is not None else os.stat(path)
    except FileNotFoundError:
        return
    if not st.st_mode & 0o077 or st.st_uid != os.getuid():
        return
    mode = stat.S_IMODE(st.st_mode) & ~0o077
    if fd is not None:
        os.fchmod(fd, mode)
    else:
        os.chmod(path, mode)


def private_dir(path: Path) -> Path:
    """Make sure directory `path` exists. Under mcpctl's roots, the root and each directory
    down to `path` are 0700 (an `MCPCTL_HOME` mcpctl creates too); elsewhere (a client's own
    config directory) it is made as `mkdir -p` would."""
    root = _root_of(path)
    if root is None:
        path.mkdir(parents=True, exist_ok=True)
        return path
    home = home_override()
    if home is not None and Path(os.path.abspath(home)) == root.parent:
        home.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    else:
        root.parent.mkdir(parents=True, exist_ok=True)
    d = root
    for part in ("", *Path(os.path.abspath(path)).relative_to(root).parts):
        d = d / part
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=PRIVATE_DIR)
        tighten(d)
    return path


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """`os.open` creating a 0600 file, and tightening one an older mcpctl created open; it is
    also an `opener` for `open()` (logging handlers, numpy)."""
    fd = os.open(path, flags | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        tighten(path, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path) -> Path:
    """Make sure file `path` exists (empty if new) and is 0600, in a private directory. SQLite
    gives a database's -wal and -shm files the database's own mode, so creating the database
    this way keeps them private too."""
    private_dir(path.parent)
    os.close(open_private(path, os.O_WRONLY | os.O_CREAT))
    return path


def loose() -> list[Path]:
    """What under mcpctl's roots group or others may use (left so by an older mcpctl, a copy or
    a hand edit): `mcpctl doctor` reports it."""
    found: list[Path] = []
    for root in roots():
        for dirpath, _, filenames in os.walk(root):
            for p in (dirpath, *(os.path.join(dirpath, n) for n in filenames)):
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if st.st_mode & 0o077 and not stat.S_ISLNK(st.st_mode):
                    found.append(Path(p))
    return found
