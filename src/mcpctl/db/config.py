"""Which database, if any: the `--database-url` flag, `MCPCTL_DATABASE_URL`, then the
`database.url` setting (`config_dir()/settings.yaml`), the first one set wins. Imports nothing heavy.

The flag is taken out of argv by `mcpctl.cli.main` before any verb runs (`mcpctl --database-url URL
get projects`) and given to the `mcpctl.storage.Storage` the CLI's root opens; it changes no
environment variable.
`database_url()` is called only where a Storage is opened.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from mcpctl import paths
from mcpctl.errors import MCPCtlError

ENV_URL: Final = "MCPCTL_DATABASE_URL"
FLAG: Final = "--database-url"


def settings_path() -> Path:
    return paths.config_dir() / "settings.yaml"


def check_flag(url: str) -> str:
    """The `--database-url` flag's value, checked: it overrides the environment and the setting."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise MCPCtlError(f"{FLAG} {url!r}: expected a postgresql:// URL",
                          hint="for example: postgresql://mcpctl@db.example:5432/mcpctl")
    return url


def settings() -> dict[str, Any]:
    """`settings.yaml` as a mapping (empty when the file is absent)."""
    p = settings_path()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise MCPCtlError(f"cannot read {p}: {e}") from None
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data: Any = YAML(typ="safe").load(text)
    except YAMLError as e:
        raise MCPCtlError(f"{p}: not valid YAML: {e}") from None
    return data if isinstance(data, dict) else {}


def _setting() -> str | None:
    p = settings_path()
    db = settings().get("database")
    url = db.get("url") if isinstance(db, dict) else None
    if url is None:
        return None
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        raise MCPCtlError(f"{p}: database.url must be a postgresql:// URL", hint="fix or remove it")
    return url


def database_url() -> str | None:
    """The database URL in effect (flag, environment, setting), or None: files and SQLite."""
    url = os.environ.get(ENV_URL)
    if url:
        return url
    return _setting()


def take_flag(argv: list[str]) -> tuple[list[str], str | None]:
    """`argv` without a leading `--database-url URL` / `--database-url=URL` (the global option,
    before the verb), and the flag's URL (None: not given); a flag after the verb is left for
    typer to reject."""
    out: list[str] = []
    url: str | None = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            out.extend(argv[i:])
            break
        if a == FLAG:
            if i + 1 >= len(argv):
                raise MCPCtlError(f"{FLAG} needs a value", hint=f"{FLAG} postgresql://user@host/db")
            url = check_flag(argv[i + 1])
            i += 2
            continue
        if a.startswith(FLAG + "="):
            url = check_flag(a.split("=", 1)[1])
        else:
            out.append(a)
        i += 1
    return out, url


def redacted(url: str) -> str:
    """The URL with its password hidden, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = parts.username or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, f"{user}:***@{host}{port}", parts.path, parts.query, parts.fragment))
