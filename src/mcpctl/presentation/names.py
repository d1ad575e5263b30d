"""The names stage: what each presented tool (and prompt) is called, and nothing else (no `mcp`).

Two styles (`names.style`):

- `portable` (default): `__` separates the parts and only `[A-Za-z0-9_-]` is used, because
  Claude Desktop, Claude Code and Codex reject any other tool name (and one bad name breaks the
  whole session). Names are budgeted to `names.maxLength` so the client's own `mcp__<name>__`
  prefix still fits in 64.
- `spec`: the literal SEP-986 forms, `/` as the separator (`favourite/<tool>`,
  `all/<server>/<tool>`, `<server>/<tool>`), other characters outside `[A-Za-z0-9_.-/]` mapped.
- `bare`: the upstream's own names; only a name several servers share gets `<server>__`
  (client-safe characters, as portable). Favourites keep `favourite__<tool>`. A name shaped like
  another presented form (`all`, `favourite`, a built-in's name, `all__…`, `favourite__…`,
  `<server>__…`) is never bare: it gets its prefixed form, so that no upstream can name a tool
  after another tool's `all__vault__read_doc` and take its calls.

A name that needs no mapping and fits is used as is. Otherwise it is mapped, truncated and
suffixed with a hash of its key (the slot and canonical id), so the same inputs always give the
same name: stable across restarts. `assign` makes names unique *by construction*, whatever the
input and its order: every member of a clash (and any name equal to a reserved one) is re-hashed
with a salt for the round, until no two keys share a name. Decisions depend only on the set of
(key, raw) pairs, never on list order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from mcpctl.resources.settings import DEFAULT_NAME_MAX_LENGTH

STYLES: Final = ("portable", "spec", "bare")
SEP: Final = {"portable": "__", "spec": "/", "bare": "__"}
_PORTABLE_BAD: Final = re.compile(r"[^A-Za-z0-9_-]")
_BAD: Final = {"portable": _PORTABLE_BAD, "spec": re.compile(r"[^A-Za-z0-9_./-]"), "bare": _PORTABLE_BAD}
HASH_LEN: Final = 8
MAX_ROUNDS: Final = 16

FAVOURITE: Final = "favourite"
ALL: Final = "all"


def short_hash(text: str, n: int = HASH_LEN) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def fit(raw: str, key: str, max_length: int, style: str = "portable", salt: int = 0) -> str:
    """`raw` as a valid name of `style` within `max_length`; hashed by `key` (and `salt`) when
    it had to be mapped or cut, or when `salt` > 0 (a clash being resolved)."""
    bad = _BAD[style]
    if salt == 0 and raw and len(raw) <= max_length and not bad.search(raw):
        return raw
    mapped = bad.sub("_", raw) or "x"
    suffix = "_" + short_hash(key if salt == 0 else f"{key}#{salt}")
    return mapped[: max(1, max_length - len(suffix))] + suffix


def portable_name(raw: str, key: str, max_length: int) -> str:
    """`raw` mapped into `^[A-Za-z0-9_-]{1,max_length}$` (see `fit`)."""
    return fit(raw, key, max_length, "portable")


def assign(requests: Mapping[str, str], max_length: int, style: str = "portable",
           reserved: Iterable[str] = ()) -> dict[str, str]:
    """Unique names for `requests` (key -> raw name), none equal to a `reserved` one.

    Round 0 fits each raw name. Each later round re-hashes, with that round's salt, every key
    whose name is shared or reserved; a salted hash of a unique key cannot match another
    key's except by a hash collision, which the next round resolves the same way.
    """
    taken = frozenset(reserved)
    names = {key: fit(raw, key, max_length, style) for key, raw in requests.items()}
    for salt in range(1, MAX_ROUNDS + 1):
        owners: dict[str, list[str]] = {}
        for key, name in names.items():
            owners.setdefault(name, []).append(key)
        clashing = [key for name, keys in owners.items() if len(keys) > 1 or name in taken for key in keys]
        if not clashing:
            return names
        for key in clashing:
            names[key] = fit(requests[key], key, max_length, style, salt)
    raise RuntimeError("presented names did not converge")   # pragma: no cover - needs 16 hash collisions


@dataclass(frozen=True)
class Namer:
    """Raw names for each slot in one style (before `assign` makes them unique).

    `bare` keeps an upstream's own name and prefixes `<server>__` only to the names in `shared`
    (those several servers of the project list), so a one-server project or a client that
    expects a server's own names sees them unchanged; characters stay client-safe."""

    style: str = "portable"
    max_length: int = DEFAULT_NAME_MAX_LENGTH
    shared: frozenset[str] = frozenset()
    reserved: frozenset[str] = frozenset()     # never bare: mcpctl's built-ins
    servers: frozenset[str] = frozenset()      # never bare: `<server>__…`, another tool's prefixed form

    @property
    def sep(self) -> str:
        return SEP[self.style]

    def is_bare(self, name: str) -> bool:
        """Whether `name` is presented as is in bare style: no other server lists it and it does
        not have the shape of another presented form (see the module's docstring)."""
        if name in self.shared or name in self.reserved or name in (ALL, FAVOURITE):
            return False
        head, sep, _ = name.partition(SEP["bare"])
        return not sep or (head not in (ALL, FAVOURITE) and head not in self.servers)

    def flat(self, server: str, tool: str) -> str:
        if self.style == "bare" and self.is_bare(tool):
            return tool
        return f"{server}{self.sep}{tool}"

    def all(self, server: str, tool: str) -> str:
        if self.style == "bare":
            return self.flat(server, tool)
        return f"{ALL}{self.sep}{server}{self.sep}{tool}"

    def favourite(self, server: str, tool: str, *, qualified: bool = False) -> str:
        """`favourite/<tool>`; `favourite/<server>/<tool>` when pinned tools share a name."""
        return f"{FAVOURITE}{self.sep}{server}{self.sep}{tool}" if qualified else f"{FAVOURITE}{self.sep}{tool}"

    def prompt(self, server: str, prompt: str) -> str:
        return self.flat(server, prompt)

    # the patterns shown to the model in the instructions
    def pattern(self, slot: str) -> str:
        if self.style == "bare" and slot != FAVOURITE:
            return "<tool> (<server>__<tool> where servers share a name)"
        return {FAVOURITE: self.favourite("<server>", "<tool>").replace(f"<server>{self.sep}", ""),
                ALL: self.all("<server>", "<tool>")}.get(slot, self.flat("<server>", "<tool>"))


def shared_names(pairs: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The names (tools or prompts) that more than one server lists, from (server, name) pairs."""
    servers: dict[str, set[str]] = {}
    for server, name in pairs:
        servers.setdefault(name, set()).add(server)
    return frozenset(n for n, s in servers.items() if len(s) > 1)


# Keys: what a name is hashed by. The flat key is the bare canonical id, so flat names stay the
# ones earlier versions presented.
def flat_key(canonical_id: str) -> str:
    return canonical_id


def all_key(canonical_id: str) -> str:
    return f"{ALL}:{canonical_id}"


def favourite_key(canonical_id: str) -> str:
    return f"{FAVOURITE}:{canonical_id}"


def prompt_key(server: str, prompt: str) -> str:
    return f"prompt:{server}/{prompt}"
