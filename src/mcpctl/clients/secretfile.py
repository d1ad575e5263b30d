"""Literal secrets found in a client's entries move to files mcpctl references as `${file:…}`.

A client file such as `claude_desktop_config.json` often carries tokens in clear; the store must
not (DESIGN §3). `secretshapes` finds where the secrets sit (a whole value, or a part of one: a
URL's password, a webhook's path); each goes to `<state dir>/secrets/<server>/<field>[.<part>]`
(directory 0700, file 0600) and the spec keeps `${file:/that/path}` in its place, which the
gateway resolves only when it starts the server (`postgresql://u:${file:…}@db/app` becomes the
original URL again). The path depends only on the server and the field, and an unchanged value
is not rewritten, so importing twice changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpctl import paths
from mcpctl.clients import secretshapes as shapes
from mcpctl.resources.kinds import SECRET_REF_RE
from mcpctl.resources.store import atomic_write


def secrets_dir() -> Path:
    return paths.state_dir() / "secrets"


@dataclass(frozen=True)
class SecretNote:
    """What happened to one secret-looking or referenced value."""

    field: str                 # env.GITHUB_TOKEN, headers.Authorization, args.3, args.2.password, url.api_key
    kind: str                  # moved | env
    reference: str             # the ${file:…} or ${env:…} the spec now holds
    path: Path | None = None   # moved: the 0600 file
    changed: bool = False      # moved: the file was (or would be) written


def literal_secret(key: str, value: str) -> bool:
    """Whether an env or header value under `key` holds a literal secret (`secretshapes`)."""
    return bool(shapes.value_spans(key, value))


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

    def _replace(self, field: str, value: str, spans: list[shapes.Span]) -> str:
        """`value` with each span moved to its own file (named `field` or `field.part`)."""
        out, pos, seen = [], 0, set()
        for span in sorted(spans, key=lambda s: s.start):
            name = f"{field}.{span.part}" if span.part else field
            while name in seen:
                name += "_"
            seen.add(name)
            out += [value[pos:span.start], self._move(name, value[span.start:span.end])]
            pos = span.end
        return "".join(out) + value[pos:]

    def _env_refs(self, field: str, value: str) -> bool:
        refs = [m.group(0) for m in SECRET_REF_RE.finditer(value) if m.group(1) == "env"]
        if refs:
            self.notes.append(SecretNote(field, "env", " ".join(refs)))
        return bool(refs)

    def _value(self, field: str, key: str, value: str) -> str:
        if self._env_refs(field, value):
            return value
        return self._replace(field, value, shapes.value_spans(key, value))

    def spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """`spec` with every literal secret replaced by a `${file:…}` reference (nothing written)."""
        out = dict(spec)
        if spec.get("env"):
            out["env"] = {k: self._value(f"env.{k}", k, str(v)) for k, v in spec["env"].items()}
        if spec.get("headers"):
            out["headers"] = {k: self._value(f"headers.{k}", k, str(v)) for k, v in spec["headers"].items()}
        if spec.get("args"):
            args = [str(a) for a in spec["args"]]
            found = shapes.arg_spans(args)
            out["args"] = [arg if self._env_refs(f"args.{i}", arg) else self._replace(f"args.{i}", arg, found[i])
                           for i, arg in enumerate(args)]
        if spec.get("url"):
            url = str(spec["url"])
            out["url"] = url if self._env_refs("url", url) else self._replace("url", url, shapes.url_spans(url))
        return out

    def write(self) -> None:
        for path, value in self.writes.items():
            atomic_write(path, value + "\n", mode=0o600)
