"""Per-project curation: which upstream tools are enabled.

A tool `server/tool` is disabled when it matches a `tools.disabled` pattern and no
`tools.enabled` pattern (fnmatch globs, case-sensitive). `enabled` is the exception list, so
`disabled: ["*"]` plus `enabled: [...]` is an allow-list. The edit helpers implement
`mcpctl tools enable|disable` on a project's spec dict, without I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from fnmatch import fnmatchcase
from typing import Any, Protocol


class _Curated(Protocol):
    @property
    def disabled(self) -> tuple[str, ...]: ...

    @property
    def enabled(self) -> tuple[str, ...]: ...


def matches_any(canonical_id: str, patterns: Iterable[str]) -> bool:
    return any(p == canonical_id or fnmatchcase(canonical_id, p) for p in patterns)


def is_enabled(canonical_id: str, project_spec: _Curated) -> bool:
    """True unless `canonical_id` matches a disabled pattern and no enabled pattern."""
    if not matches_any(canonical_id, project_spec.disabled):
        return True
    return matches_any(canonical_id, project_spec.enabled)


def _tools_section(spec: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    tools = spec.get("tools")
    if not isinstance(tools, MutableMapping):
        tools = {}
        spec["tools"] = tools
    return tools


def _edit(spec: MutableMapping[str, Any], ids: Iterable[str], *, enable: bool) -> bool:
    tools = _tools_section(spec)
    remove_from, add_to = ("disabled", "enabled") if enable else ("enabled", "disabled")
    changed = False
    for ident in ids:
        src = list(tools.get(remove_from) or [])
        if ident in src:
            src.remove(ident)
            tools[remove_from] = src
            changed = True
            continue
        dst = list(tools.get(add_to) or [])
        if ident not in dst:
            dst.append(ident)
            tools[add_to] = dst
            changed = True
    for key in ("enabled", "disabled"):
        if key in tools and not tools[key]:
            del tools[key]
    if not tools:
        spec.pop("tools", None)
    return changed


def enable(spec: MutableMapping[str, Any], ids: Iterable[str]) -> bool:
    """Enable ids or globs in a project spec dict: drop an exact `disabled` entry, else add
    to `enabled`. Returns True if the spec changed."""
    return _edit(spec, ids, enable=True)


def disable(spec: MutableMapping[str, Any], ids: Iterable[str]) -> bool:
    """Disable ids or globs: drop an exact `enabled` entry, else add to `disabled`."""
    return _edit(spec, ids, enable=False)
