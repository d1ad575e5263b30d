"""Literal secrets found in a client's entries move to files mcpctl references as `${file:…}`.

A client file such as `claude_desktop_config.json` often carries tokens in clear; the store must
not (DESIGN §3). Each secret goes to `<state dir>/secrets/<server>/<field>` (directory 0700, file
0600) and the spec keeps `${file:/that/path}`, which the gateway resolves only when it starts the
server. The path depends only on the server and the field, and an unchanged value is not
rewritten, so importing twice changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mcpctl import paths
from mcpctl.resources.kinds import SECRET_REF_RE
from mcpctl.resources.secrets import looks_like_secret
from mcpctl.resources.store import atomic_write

_SCHEME = re.compile(r"^(Bearer|Basic|Token|Bot)(\s+)(\S+)$", re.I)
_FLAG = re.compile(r"^(--?[A-Za-z0-9][\w.-]*=)(.+)$")


def secrets_dir() -> Path:
    return paths.state_dir() / "secrets"


@dataclass(frozen=True)
class SecretNote:
    """What happened to one secret-looking or referenced value."""

    field: str                 # env.GITHUB_TOKEN, headers.Authorization, args[3], url
    kind: str                  # moved | env
    reference: str             # the ${file:…} or ${env:…} the spec now holds
    path: Path | None = None   # moved: the 0600 file
    changed: bool = False      # moved: the file was (or would be) written


def literal_secret(key: str, value: str) -> bool:
    """`looks_like_secret`, except for paths and URLs (a long directory name is no token)."""
    v = value.strip()
    if v.startswith(("/", "~", "./", "../")) or "://" in v or SECRET_REF_RE.search(v):
        return False
    return looks_like_secret(key, v)


def _safe(field: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", field)


class SecretMover:
    """Plans (and then writes) the secret files of one server."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.notes: list[SecretNote] = []
        self.writes: dict[Path, str] = {}

    def _move(self, field: str, value: str) -> str:
        path = secrets_dir() / self.server / _safe(field)
        try:
            current: str | None = path.read_text(encoding="utf-8").strip()
        except OSError:
            current = None
        changed = current != value.strip()
        if changed:
            self.writes[path] = value.strip()
        ref = "${file:" + str(path) + "}"
        self.notes.append(SecretNote(field, "moved", ref, path, changed))
        return ref

    def _value(self, field: str, key: str, value: str) -> str:
        refs = [m.group(0) for m in SECRET_REF_RE.finditer(value) if m.group(1) == "env"]
        if refs:
            self.notes.append(SecretNote(field, "env", " ".join(refs)))
            return value
        if not literal_secret(key, value):
            return value
        m = _SCHEME.match(value.strip())
        if m:
            return m.group(1) + m.group(2) + self._move(field, m.group(3))
        return self._move(field, value)

    def spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """`spec` with every literal secret replaced by a `${file:…}` reference (nothing written)."""
        out = dict(spec)
        if spec.get("env"):
            out["env"] = {k: self._value(f"env.{k}", k, str(v)) for k, v in spec["env"].items()}
        if spec.get("headers"):
            out["headers"] = {k: self._value(f"headers.{k}", k, str(v)) for k, v in spec["headers"].items()}
        if spec.get("args"):
            args = []
            for i, arg in enumerate(spec["args"]):
                m = _FLAG.match(arg)
                if m and literal_secret(m.group(1).strip("-="), m.group(2)):
                    args.append(m.group(1) + self._move(f"args.{i}", m.group(2)))
                elif literal_secret("", arg):
                    args.append(self._move(f"args.{i}", arg))
                else:
                    args.append(arg)
            out["args"] = args
        if spec.get("url"):
            out["url"] = self._url(spec["url"])
        return out

    def _url(self, url: str) -> str:
        query = urlsplit(url).query
        for key, value in parse_qsl(query, keep_blank_values=False):
            if literal_secret(key, value) and f"{key}={value}" in url:
                url = url.replace(f"{key}={value}", f"{key}={self._move(f'url.{_safe(key)}', value)}", 1)
        return url

    def write(self) -> None:
        for path, value in self.writes.items():
            atomic_write(path, value + "\n", mode=0o600)
