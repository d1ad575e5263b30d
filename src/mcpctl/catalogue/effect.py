"""What a tool does and what a request asks for: one effect class each (no I/O, no model).

A tool's **effect** is one of reads, records, changes, deletes, runs (runs or sends):
- from its MCP annotations where the server gives them: `readOnlyHint: true` reads; otherwise the
  verb its name leads with says which kind of write (`delete_entities` deletes, `toggle_x` changes,
  `send_mail` runs), and with no such verb `destructiveHint: false` records (additive) and a
  destructive tool changes;
- otherwise from its words: the verb its name leads with (its second word after an adverb, or after
  `and`/`or`, the strongest), else its title's, else the first words of its description; a tool whose
  words name no known verb has no effect class (search leaves it alone).

`judge.reach` (what `surface` reports a tool can do beyond reading) is read off the same verbs.

A request's action, in the same classes, is `intent.py`'s; search weighs one against the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from mcpctl.catalogue.analyze import analyze

READS, RECORDS, CHANGES, DELETES, RUNS = "reads", "records", "changes", "deletes", "runs"
EFFECTS: Final = (READS, RECORDS, CHANGES, DELETES, RUNS)
# Verb groups, finer than effects: `runs` holds both running something and sending outward, which
# `judge.reach` tells apart (send is reach of its own).
READ, RECORD, CHANGE, DELETE, RUN, SEND = "read", "record", "change", "delete", "run", "send"
EFFECT_OF_VERB: Final = {READ: READS, RECORD: RECORDS, CHANGE: CHANGES, DELETE: DELETES, RUN: RUNS, SEND: RUNS}
ANNOTATIONS, NAME, TITLE, DESCRIPTION = "annotations", "name", "title", "description"
# How far search leans on an effect by where it was read (IntentStage softens its factors by it);
# chosen on the dev portions (docs/ranking.md).
TRUST: Final = {ANNOTATIONS: 1.0, NAME: 0.75, TITLE: 0.75, DESCRIPTION: 0.5}

# -- tools ---------------------------------------------------------------------------------------------

# Verbs as tool names and descriptions use them; stemmed like the catalogue's analyzer.
_TOOL_VERBS: Final = {
    DELETE: "delete remove drop destroy purge erase truncate kill terminate revoke unlink rm del wipe clear "
            "reset uninstall discard prune evict forget",
    SEND: "send post publish email mail notify message tweet reply comment share upload push broadcast invite "
          "sms forward submit dm",
    RECORD: "create add save write insert append record store register new make put upsert import "
            "remember memorize capture attach mkdir fork copy download",
    CHANGE: "update edit set modify patch change rename move replace overwrite toggle enable disable merge commit close "
            "assign apply approve archive lock unlock grant configure mark star follow subscribe unsubscribe "
            "sync detach customize customise correct fix adjust reopen restore",
    RUN: "run exec execute start stop restart deploy install launch trigger schedule book order pay transfer "
         "init initialize interact invoke call simulate spawn",
    READ: "get list read search find fetch query describe show view lookup look count check validate calculate "
          "compute convert analyze analyse summarize summarise explain parse render preview inspect browse "
          "retrieve scan stat status info explore resolve compare diff translate estimate detect extract "
          "identify recommend suggest generate echo ping test evaluate measure hash encode decode open "
          "print display return returns see watch tail head grep match sum multiply average slugify gzip "
          "compress",
}
# Which group wins when a name holds several verbs (`search_and_replace` changes).
_STRENGTH: Final = (DELETE, SEND, CHANGE, RECORD, RUN, READ)
_FILLER: Final = frozenset({"tool", "function", "api", "mcp", "server"})
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_RE: Final = re.compile(r"[a-z]+")


def _stemmed(words: str) -> frozenset[str]:
    return frozenset(t for w in words.split() for t in analyze(w, stop=False))


_TOOL_LEXICON: Final = {kind: _stemmed(words) for kind, words in _TOOL_VERBS.items()}


@lru_cache(maxsize=4096)
def stem_of(word: str) -> str:
    """One word's stem, as the catalogue's analyzer makes it ("" for a function word)."""
    stems = analyze(word, stop=False)
    return stems[0] if stems else ""


def verb_kind(word: str) -> str | None:
    """The verb group of one word as tools use it (`delete` -> delete), or None."""
    stem = stem_of(word)
    for kind in _STRENGTH:
        if stem in _TOOL_LEXICON[kind]:
            return kind
    return None


def _first_verb(words: Iterable[str]) -> tuple[str, str] | None:
    """(group, word) of the first word that is a known verb."""
    for word in words:
        kind = verb_kind(word)
        if kind is not None:
            return kind, word
    return None


def name_verb(name: str) -> tuple[str, str] | None:
    """The verb a tool name leads with: its first word, else its second (`force_terminate`); a
    verb after `and`/`or` counts too, and the strongest wins (`search_and_replace` changes)."""
    words = _WORD_RE.findall(_CAMEL_RE.sub(" ", name).lower())
    lead = _first_verb(words[:1]) or _first_verb(words[1:2])
    found = [lead] if lead else []
    found += [v for i, w in enumerate(words[:-1]) if w in ("and", "or") and (v := _first_verb(words[i + 1:i + 2]))]
    return min(found, key=lambda f: _STRENGTH.index(f[0])) if found else None


# Words a description starts with that say what it makes possible, not what it does ("Enables quick
# search of laws", "Interact with any PDF"): no effect is read off them.
_CAPABILITY: Final = frozenset({"enabl", "allow", "let", "help", "interact", "unlock", "access", "provid", "offer",
                                "support", "connect", "power", "empow", "add-on", "addon"})


def description_verb(description: str) -> tuple[str, str] | None:
    """The verb a description starts with ("Deletes ...", or after an adverb: "Permanently
    delete ..."); none for a description that starts with what it makes possible."""
    first = description.split(". ", 1)[0].split("\n", 1)[0]
    if first[:7].lower() in ("add-on ", "add-on:"):
        return None
    words = [w for w in analyze(first, stem=False) if w not in _FILLER][:2]
    lead = words if words[:1] and words[0].endswith("ly") else words[:1]
    if any(stem_of(w) in _CAPABILITY for w in lead):
        return None
    return _first_verb(lead)


@dataclass(frozen=True)
class ToolEffect:
    """What a tool does: `effect` (one of EFFECTS, or None when nothing says), where that came
    from (`source`: annotations, name, title, description; "" when unknown) and the evidence."""

    effect: str | None
    source: str
    evidence: str
    verb: str | None = None        # the verb group read off the words, when one was

    @property
    def trust(self) -> float:
        """How far search leans on this effect: fully on the server's annotations, less on a name's
        verb, least on a description's first word (a plugin's "Create music playlists, search for
        music, ..." also searches)."""
        return TRUST.get(self.source, 0.0)

    def label(self) -> str:
        """`reads (annotations)`, `deletes (name: delete)`, `-` when unknown."""
        return f"{self.effect} ({self.source})" if self.effect else "-"


def _words_verb(name: str, title: str, description: str) -> tuple[str, tuple[str, str]] | None:
    for source, found in ((NAME, name_verb(name)), (TITLE, name_verb(title) if title else None),
                          (DESCRIPTION, description_verb(description))):
        if found is not None:
            return source, found
    return None


def _hints(annotations: Any) -> tuple[bool | None, bool | None, bool | None]:
    ann = annotations if isinstance(annotations, Mapping) else {}
    ro, de, ow = ann.get("readOnlyHint"), ann.get("destructiveHint"), ann.get("openWorldHint")
    return (ro if isinstance(ro, bool) else None, de if isinstance(de, bool) else None,
            ow if isinstance(ow, bool) else None)


def tool_effect(name: str, description: str = "", annotations: Any = None, title: str = "") -> ToolEffect:
    """The effect class of a tool from its annotations, else its words (see the module's text)."""
    ro, de, ow = _hints(annotations)
    words = _words_verb(name, title, description)
    verb = words[1][0] if words else None
    if ro is not None or de is not None:
        given = ", ".join(f"{k}={str(v).lower()}" for k, v in (("readOnlyHint", ro), ("destructiveHint", de),
                                                                ("openWorldHint", ow)) if v is not None)
        if ro is True and de is not True:
            return ToolEffect(READS, ANNOTATIONS, given, verb)
        if verb is not None and verb != READ and words is not None:
            return ToolEffect(EFFECT_OF_VERB[verb], ANNOTATIONS, f"{given}; {words[0]}: {verb} verb {words[1][1]!r}",
                              verb)
        if ow is True:
            return ToolEffect(RUNS, ANNOTATIONS, given, verb)
        return ToolEffect(RECORDS if de is False else CHANGES, ANNOTATIONS, given, verb)
    if words is None:
        return ToolEffect(None, "", "no verb in the name, title or description")
    source, (kind, word) = words
    return ToolEffect(EFFECT_OF_VERB[kind], source, f"{source}: {kind} verb {word!r}", kind)


def wire_effect(tool: Mapping[str, Any]) -> ToolEffect:
    """`tool_effect` of a wire-format (camelCase) tool dict."""
    ann = tool.get("annotations")
    title = tool.get("title") or (ann.get("title") if isinstance(ann, Mapping) else None) or ""
    return tool_effect(str(tool.get("name", "")), str(tool.get("description") or ""), ann, str(title))
