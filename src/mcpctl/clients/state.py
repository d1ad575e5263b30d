"""What mcpctl remembers about clients, under `<state dir>/clients/` (all files 0600).

- `imports.json`: for each imported entry (`client:file#pointer`), the server it became, so a
  second import updates the same server and `connect --replace-imported` knows which entries
  the store now holds.
- `connections.json`: for each gateway entry written by `connect` (`client|file|name`), how to
  undo it: the backup of the file as it was, the hash of the file as `connect` left it, and the
  entries it removed.
- `backups/`: a copy of each client file taken before `connect` changes it.

The client files themselves are read and replaced by `fileio`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mcpctl import paths
from mcpctl.resources.store import atomic_write

FORMAT_VERSION = 1


def clients_dir() -> Path:
    return paths.state_dir() / "clients"


def imports_path() -> Path:
    return clients_dir() / "imports.json"


def connections_path() -> Path:
    return clients_dir() / "connections.json"


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}


def save(path: Path, entries: dict[str, Any]) -> None:
    text = json.dumps({"version": FORMAT_VERSION, "entries": entries}, indent=2, sort_keys=True,
                      ensure_ascii=False)
    atomic_write(path, text + "\n", mode=0o600)


def source_key(client: str, file: Path, pointer: str) -> str:
    return f"{client}:{file}#{pointer}"


def connection_key(client: str, file: Path, name: str) -> str:
    return f"{client}|{file}|{name}"


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def backup(client: str, file: Path, data: bytes) -> Path:
    """Keep `data` (the file before mcpctl touched it) as a 0600 copy; returns its path. Not
    fsync'd: whoever restores it checks it against the hash in the record first."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    folder = paths.private_dir(clients_dir() / "backups")      # backups hold the client's secrets: 0700
    for n in range(1, 100):
        target = folder / f"{client}-{stamp}{'' if n == 1 else f'-{n}'}-{file.name}"
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return target
    raise FileExistsError(f"{folder}: no free backup name for {file.name} at {stamp}")


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
