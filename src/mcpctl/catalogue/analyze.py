"""Text analysis shared by tool documents and queries: split identifiers, drop function words, stem.

The same analyzer runs on both sides, so a tool named `listDirectory` and a query saying
"list the directory" meet on the terms `list` and `directori`. Choices here were measured on
the dev portions of the evaluation sets (docs/ranking.md): identifier splitting, a list of
English function words (never content verbs such as get/list/find) and Porter2 stemming.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

# Ideographs and kana carry meaning one character at a time (Chinese and Japanese are not
# written with spaces), so each one is a term of its own.
_CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A chunk is a run of word characters plus the joiners identifiers use (_ - . /).
_CHUNK_RE: Final = re.compile(rf"[{_CJK}]|(?:[^\W{_CJK}]|[\-./])+")
# camelCase and acronym boundaries: "getHTTPResponse" -> get HTTP Response.
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# After lowercasing: runs of letters, and runs of digits (so "base64" -> base 64).
_PART_RE: Final = re.compile(r"[^\W\d_]+|\d+")
_CJK_RE: Final = re.compile(rf"[{_CJK}]")

# English function words: articles, pronouns, auxiliaries, prepositions, conjunctions and
# politeness filler. Content verbs (get, list, find, create, ...) are deliberately absent: they
# are what tool names are made of.
_STOP_TEXT: Final = """
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each either else
etc ever every few for from further had has have having he her here hers herself him himself
his how however i if in into is it its itself just let me might mine more most much must my
myself neither no nor not now of off on once only or other ought our ours ourselves out over
own per please same shall she should so some such than that the their theirs them themselves
then there these they this those though through thus to too under until up upon us very via
was we were what whatever when whenever where wherever whether which while who whom whose
why will with within without would yet you your yours yourself yourselves
youre s t d ll m re ve
"""
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())


_SNOWBALL_ALIAS: Final = "_mcpctl_snowball"


def english_stemmer() -> Any:
    """snowballstemmer's English (Porter2) stemmer, without the 38 other languages its package's
    `__init__` imports: 2.9 MB of every ranking process's memory and some 40 modules' import. The
    package's directory is registered under a private name, not executed, and only its English
    module (with the two it imports) is loaded from it; the stemmer is the same class the package
    hands out. Another layout of the package, or PyStemmer installed (which the package prefers):
    the package's own `stemmer("english")`."""
    spec = importlib.util.find_spec("snowballstemmer")
    if spec is not None and spec.origin and spec.submodule_search_locations is not None:
        try:
            pkg = sys.modules.get(_SNOWBALL_ALIAS)
            if pkg is None:
                alias = importlib.util.spec_from_file_location(
                    _SNOWBALL_ALIAS, spec.origin, submodule_search_locations=list(spec.submodule_search_locations))
                if alias is not None and importlib.util.find_spec("Stemmer") is None:
                    sys.modules[_SNOWBALL_ALIAS] = importlib.util.module_from_spec(alias)
            if _SNOWBALL_ALIAS in sys.modules:
                return importlib.import_module(f"{_SNOWBALL_ALIAS}.english_stemmer").EnglishStemmer()
        except (ImportError, AttributeError):
            sys.modules.pop(_SNOWBALL_ALIAS, None)
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def _make_stem() -> Callable[[str], str]:
    stemmer = english_stemmer()

    @lru_cache(maxsize=200_000)
    def stem(word: str) -> str:
        stemmed: str = stemmer.stemWord(word)
        return stemmed

    return stem


_stem: Final = _make_stem()


@lru_cache(maxsize=100_000)
def _analyze_chunk(chunk: str, stem: bool, stop: bool) -> tuple[str, ...]:
    if _CJK_RE.fullmatch(chunk):
        return (chunk,)
    parts = _PART_RE.findall(_CAMEL_RE.sub(" ", chunk).lower())
    terms: list[str] = []
    for part in parts:
        if stop and part in STOP_WORDS:
            continue
        terms.append(_stem(part) if stem and not part.isdigit() else part)
    if len(parts) > 1:
        # The joined form lets "listdirectory" or "list_directory" in a query match exactly.
        terms.append("".join(parts))
    return tuple(terms)


def analyze(text: str, *, stem: bool = True, stop: bool = True) -> list[str]:
    """Turn text (prose or an identifier) into index terms, in order, repeats kept."""
    terms: list[str] = []
    for chunk in _CHUNK_RE.findall(text):
        terms.extend(_analyze_chunk(chunk, stem, stop))
    return terms
