"""Secret references: `${env:NAME}` and `${file:PATH}`, resolved only when a server starts.

Resolved values are never stored or printed; `looks_like_secret` powers the warning for
literal tokens written into `env` or `headers`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from mcpctl.errors import SecretError
from mcpctl.resources.kinds import SECRET_REF_RE

_SECRET_KEY_RE = re.compile(r"(token|secret|password|passwd|api[_-]?key|apikey|auth|credential|private)", re.I)
_SECRET_VALUE_RE = re.compile(
    r"^(?:bearer\s+)?(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|sk-[A-Za-z0-9_-]{16,}|xox[abpr]-[\w-]{10,}"
    r"|AKIA[0-9A-Z]{16}|glpat-[\w-]{16,}|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]+|[A-Za-z0-9+/_=-]{32,})$",
    re.I,
)


def has_reference(value: str) -> bool:
    return bool(SECRET_REF_RE.search(value))


def looks_like_secret(key: str, value: str) -> bool:
    """A literal (non-reference) value that is probably a credential."""
    if not isinstance(value, str) or not value or has_reference(value):
        return False
    if _SECRET_VALUE_RE.match(value.strip()):
        return True
    return bool(_SECRET_KEY_RE.search(key)) and len(value) >= 8


def resolve(value: str, *, where: str, env: Mapping[str, str] | None = None) -> str:
    """Replace every reference in `value`. `where` names the field for error messages."""
    environ = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        source, ref = m.group(1), m.group(2).strip()
        if source == "env":
            if ref not in environ:
                raise SecretError(f"{where}: environment variable {ref!r} is not set",
                                  hint=f"export {ref}=… in the environment that starts mcpctl, "
                                  "or change the reference")
            return environ[ref]
        path = Path(ref).expanduser()
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise SecretError(f"{where}: cannot read secret file {str(path)!r}: {e.strerror or e}",
                              hint="create the file or change the ${file:…} reference") from None

    return SECRET_REF_RE.sub(sub, value)


def resolve_map(values: Mapping[str, str], *, where: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    return {k: resolve(str(v), where=f"{where}.{k}", env=env) for k, v in values.items()}
