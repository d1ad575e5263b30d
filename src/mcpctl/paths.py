"""Where mcpctl keeps things: the only place paths are computed.

`MCPCTL_HOME` overrides every path (tests use it); otherwise platformdirs decides.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import PlatformDirs

ENV_HOME = "MCPCTL_HOME"


def home_override() -> Path | None:
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser() if value else None


def _dirs() -> PlatformDirs:
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


def resources_dir() -> Path:
    return config_dir() / "resources"


def status_dir() -> Path:
    return state_dir() / "status"


def catalogue_cache_dir() -> Path:
    return state_dir() / "catalogue"


def invocation_log_path() -> Path:
    return data_dir() / "invocations.db"


def lock_path() -> Path:
    return config_dir() / ".lock"
