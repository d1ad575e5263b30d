"""What a request asks for, and how search weighs it against what each tool does (no I/O, no model).

`understand(query)` reads two things off a request's words, in English:

- **Its action**, in the effect classes of `effect.py` (reads, records, changes, deletes, runs): the
  verb a clause starts with once politeness is set aside ("please", "can you", "I want to"): "show
  me", "peek inside", "look up" read; "remember", "jot down", "keep in mind" record; "update",
  "rename" change; "erase", "get rid of", "forget" delete; "run", "kick off" run. A question ("what's
  in …", "when was … created", "did I tell you …") reads; adding two numbers computes (reads). A
  clause that is a statement ("Nina switched jobs, record that") is skipped for the next one. A
  request with no such verb has no action, and search ranks it as it always did.
- **The values it carries**: a file path or name with a known extension, a URL or domain, an email
  address, a clock time. Each is replaced in the text that is ranked by words of its kind ("peek
  inside docker-compose.yml" is ranked as "peek inside file"; an image's name as "image file"): a
  user's own file names say nothing about which tool fits, and their words mislead ("notes.txt" is
  not about notes). Tools that take a parameter of that kind (`path`, `url`, `time`, `email`, by
  name or JSON Schema `format`) get a small boost.

`IntentStage` holds, for one catalogue, each tool's effect and parameter kinds, and turns an intent
into one factor per tool that multiplies its score: ACTION_WEIGHTS[action][effect] (1 where the
request names no action or the tool's effect is unknown) times 1 + VALUE_BOOST where a value fits
(times OTHER_FORM_FACTOR for a tool made for several files or for media, asked about one text file).
On top of the factors, a read-phrased request never ranks a tool that changes or deletes above the
best *matching* tool that reads (one whose score before the stage is at least MATCHING_SHARE of the
best): such tools are moved just below it, in their order. The word lists and weights were built
from the dev portions of the evaluation sets and requests written for them (docs/ranking.md); the
words people use for what tools call otherwise are in `synonyms.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from mcpctl.catalogue.action import ONE_REQUEST_WORDS, Action, main_clause, request_action
from mcpctl.catalogue.effect import CHANGES, DELETES, EFFECTS, READS, RECORDS, RUNS
from mcpctl.catalogue.synonyms import PART_OF_FILE_WORDS, PARTS_WORDS, SYNONYMS

__all__ = ["ACTION_WEIGHTS", "CAP_TRUST", "MATCHING_SHARE", "OTHER_FORM_FACTOR", "VALUE_BOOST", "Action", "Intent", "IntentStage",
           "param_kinds", "request_action", "understand"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- the values a request carries -------------------------------------------------------------------

PATH, URL, TIME, EMAIL = "path", "url", "time", "email"
VALUE_KINDS: Final = (PATH, URL, TIME, EMAIL)
# What a request's object is: a particular thing (a value, a quoted text, a name, "about ...") or
# everything ("the whole graph", "all my notes"); and tools that take no parameter at all (they can
# only give everything, or one fixed thing).
SPECIFIC, EVERYTHING, NO_PARAMETERS = "specific", "everything", "no-parameters"
# One file that is not an image, a sound or a video ("what does config/app.ini say"); and tools made
# for another form of it: several at once (`read_multiple_files`) or media (`read_media_file`).
ONE_TEXT_FILE, OTHER_FORM = "one-text-file", "other-form"
_OTHER_FORM_RE: Final = re.compile(r"multiple|batch|bulk|media|image|audio|video|photo|picture", re.I)
MEDIA: Final = {
    **dict.fromkeys(_words("png jpg jpeg gif webp bmp svg tif tiff ico heic"), "image"),
    **dict.fromkeys(_words("mp3 wav ogg flac m4a aac opus"), "audio"),
    **dict.fromkeys(_words("mp4 mov mkv webm avi"), "video"),
}
EXTENSIONS: Final = frozenset(MEDIA) | _words("""
txt md markdown rst py pyi ipynb js mjs cjs ts tsx jsx json jsonl yml yaml toml ini cfg conf csv tsv log xml
html htm css scss pdf doc docx odt rtf xls xlsx ods ppt pptx zip gz tgz tar bz2 xz 7z rar sh bash zsh bat ps1
env lock sql db sqlite sqlite3 rs go java kt kts c h cc cpp hpp cs rb php swift scala lua pl dart vue svelte
tf hcl gradle properties plist bak tmp out dat bin exe dll so dylib wasm epub ics vcf eml pem crt pub graphql gql
proto prisma iso img dmg apk jar deb rpm msi
""")
# Files known without an extension at the end of a path (`/etc/hosts`); any other such path is a folder
# (`~/Downloads`, `/etc/nginx`).
_PLAIN_FILES: Final = _words("hosts passwd shadow group fstab crontab resolv sudoers known_hosts authorized_keys config "
                             "id_rsa id_ed25519 id_ecdsa environment profile motd issue")
_TLD: Final = ("com|org|net|io|dev|ai|app|co|edu|gov|info|me|uk|de|fr|nl|eu|us|ca|au|jp|cn|in|ru|br|ch|se|no|"
               "tv|xyz|site|tech|cloud")
_EMAIL_RE: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# (a domain is not followed by a file's extension: "settings.dev.json" is a file)
_URL_RE: Final = re.compile(rf"\bhttps?://\S+|\bwww\.\S+|\b[a-z0-9][\w-]*(?:\.[\w-]+)*\.(?:{_TLD})\b(?!\.\w)(?:/\S*)?", re.I)
# A path (/etc/hosts, ~/x, ./a/b) or a name with an extension (docker-compose.yml, a.py).
_PATH_RE: Final = re.compile(r"(?<![\w@:])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]*)*"
                             r"|(?<![\w@/.])(?:[\w\-.]+/)*[\w\-]+(?:\.[\w\-]+)*\.([A-Za-z][A-Za-z0-9]{0,9})\b(?![\w.]*\w)")
# Files known by a name without an extension, and dotfiles (.env, .gitignore, .env.example).
_NAMED_FILE_RE: Final = re.compile(
    r"(?<![\w/.])(?:Dockerfile|Makefile|Jenkinsfile|Procfile|Gemfile|Vagrantfile|Rakefile|Brewfile|"
    r"LICEN[CS]E|README|CHANGELOG|CONTRIBUTING|AUTHORS|NOTICE|COPYING)(?![\w.])"
    r"|(?<![\w/.])\.(?:env|git\w*|docker\w*|npm\w*|editorconfig|prettier\w*|eslint\w*|bash\w*|zsh\w*|"
    r"profile|vimrc|tool-versions|python-version|nvmrc)(?:\.[\w\-]+)*(?![\w.])"
    # (the ninth pass) system files known by a name of their own, bare ("the crontab in /etc", "id_rsa")
    r"|(?<![\w/.])(?:crontab|id_rsa|id_ed25519|id_ecdsa|known_hosts|authorized_keys|sudoers|fstab)(?![\w.])")
_BARE_EXTENSION_RE: Final = re.compile(r"(?<![\w./~])\.(" + "|".join(sorted(EXTENSIONS)) + r")\b(?![\w.])", re.I)
_INITIALS_RE: Final = re.compile(r"(?:[A-Z]\.)+[A-Z]\.?")        # "D.C", "U.S.A"
_FOLDER_RE: Final = re.compile(r"(?<![\w/.~])([A-Za-z][\w\-]*)/(?=[\s,;!?]|$)")     # "in logs/"
_MEDIA_WORD_RE: Final = re.compile(r"\b(" + "|".join(MEDIA) + r")\b", re.I)
_CLOCK_RE: Final = re.compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d\s*(?:am|pm)?\b|\b(?:1[0-2]|0?[1-9])\s*(?:am|pm)\b"
                              r"|\b(?:noon|midnight)\b", re.I)
# Parameters that take a value of each kind, by name (JSON Schema `format` counts too).
_PARAM_RE: Final = {
    PATH: re.compile(r"path|file|dir|folder"),
    URL: re.compile(r"url|uri|link|href|website|webpage"),
    TIME: re.compile(r"^(?:time|datetime|timestamp)$|_time$|^time_|[a-z]Time$"),
    EMAIL: re.compile(r"email|mail|recipient"),
}
_FORMATS: Final = {"uri": URL, "url": URL, "iri": URL, "uri-reference": URL, "date-time": TIME, "time": TIME,
                   "email": EMAIL, "idn-email": EMAIL}


# The folders at the root that a path of one part names (`/tmp`; not a route or a command: `/login`, `/start`).
_ROOT_FOLDERS: Final = _words("tmp srv var etc home opt usr mnt media root bin lib data")


def _a_folder(path: str) -> bool:
    """A path without an extension, not a file known by its name, of two parts or more or under
    `~`, or a root folder: a folder."""
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    last = parts[-1] if parts else ""
    return "." not in last and last not in _PLAIN_FILES and (
        len(parts) > 1 or path.startswith(("~", ".")) or last in _ROOT_FOLDERS)


def _inner_extension(name: str) -> str | None:
    """A known extension before the last one of a name of three parts or more ("config.yaml.old"), or None."""
    parts = name.rsplit("/", 1)[-1].split(".")
    return next((p.lower() for p in reversed(parts[1:-1]) if p.lower() in EXTENSIONS), None) if len(parts) > 2 else None


def _folders(path: str) -> str:
    """The folder names of a path (`/root/excel/sales.xlsx` -> `root excel`), without its last part."""
    return " ".join(p.lstrip(".") for p in path.split("/")[:-1] if p not in ("", ".", "..", "~"))


def _values(query: str) -> tuple[str, frozenset[str]]:
    """The query with each value said as words of its kind: a file by its folders and format (a
    file's own name says nothing of which tool fits, and misleads: "notes.txt" is not about notes),
    a URL whole and as a web page; and the kinds found."""
    kinds: set[str] = set()
    found: list[str] = []            # the kind of each value replaced
    short = len(query.split()) <= ONE_REQUEST_WORDS      # a path without an extension read as a folder only here

    def replace(kind: str, words: str) -> Any:
        def sub(m: re.Match[str]) -> str:
            ext = m.group(1).lower() if kind == PATH and m.lastindex and m.group(1) else None
            if ext is not None and ext not in EXTENSIONS:     # (the eleventh pass) "app.config.js.old": a js file
                ext = _inner_extension(m.group(0)) or ext
            if (ext is not None and ext not in EXTENSIONS) or _INITIALS_RE.fullmatch(m.group(0)):
                return m.group(0)          # "e.g.", "v1.2.3", "Dr. Smith", "D.C": not a file
            if kind == PATH and ext is None:                 # /root/excel/sales.xlsx
                last = m.group(0).rsplit("/", 1)[-1].rsplit(".", 1)
                ext = last[1].lower() if len(last) == 2 and last[1].lower() in EXTENSIONS else None
            kinds.add(kind)
            found.append(kind)
            if kind == URL:              # every word of it: the host and the path say which service
                return f" {re.sub(r'[/:?#=&]+', ' ', m.group(0))} {words} "
            if kind != PATH:
                return f" {words} "
            where = _folders(m.group(0))     # the folders say what is there; the file's own name does not
            if ext is not None:
                return f" {where} {MEDIA[ext]} file {ext} " if ext in MEDIA else f" {where} {words} {ext} "
            if m.group(0).endswith("/") or (short and _a_folder(m.group(0))):
                found[-1] = "folder"                 # not one of the files named
                return f" {where} directory "        # logs/, /var/www, ~/Downloads: a folder
            return f" {where} {words} "
        return sub

    text = _EMAIL_RE.sub(replace(EMAIL, "email address"), query)
    text = _URL_RE.sub(replace(URL, "web page url"), text)
    text = _PATH_RE.sub(replace(PATH, "file"), text)
    names = {m.group(0).rsplit("/", 1)[-1] for m in _PATH_RE.finditer(query)}
    text, named = _NAMED_FILE_RE.subn(" file ", text)
    named -= len({m.group(0) for m in _NAMED_FILE_RE.finditer(query)} & names)     # "the crontab file at /etc/crontab": one
    text, bare = _BARE_EXTENSION_RE.subn(lambda m: f" files {m.group(1).lower()} ", text)     # "any .xlsx"
    if found.count(PATH) + named > 1:     # "main.py, utils.py and tests.py": several files at once
        text += " multiple files"
    elif found.count(PATH) + named == 1 and " file" in text and not _MEDIA_WORD_RE.search(text):
        kinds.add(ONE_TEXT_FILE)
    text, folders = _FOLDER_RE.subn(lambda m: f" {m.group(1)} directory ", text)
    if named + folders + bare:
        kinds.add(PATH)
    if _CLOCK_RE.search(text):
        kinds.add(TIME)
    kinds.add(_scope(query, bool(kinds)))
    if PATH not in kinds and _MEDIA_WORD_RE.search(text):      # "this screenshot png": a file of that kind
        kinds.add(PATH)
        text = _MEDIA_WORD_RE.sub(lambda m: f"{m.group(0)} {MEDIA[m.group(0).lower()]} file", text)
    return re.sub(r"\s+", " ", text).strip(), frozenset(kinds) - {""}


_EVERYTHING_RE: Final = re.compile(r"\b(?:everything|all|whole|entire|full|every)\b", re.I)
_QUOTED_RE: Final = re.compile(r"'[^']{2,}'|\"[^\"]{2,}\"|\u2018[^\u2019]{2,}\u2019|\u201c[^\u201d]{2,}\u201d")
_NAME_RE: Final = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+")        # a capitalised word after a lowercase one
# (about everybody, anything: no particular thing)
_NOT_ONE: Final = r"(?!it\b|this\b|that\b|them\b|every(?:body|one|thing)\b|any(?:body|one|thing)\b|all\b)"
_ABOUT_RE: Final = re.compile(rf"\babout\s+{_NOT_ONE}\w", re.I)
_EVERYTHING_ABOUT_RE: Final = re.compile(rf"\b(?:everything|all)(?: \w+){{0,3}} about\s+{_NOT_ONE}\w", re.I)


# ONE_REQUEST_WORDS (`action`): names and quotes count as SPECIFIC only up to this many words.


def _scope(query: str, has_value: bool) -> str:
    """EVERYTHING for "the whole graph", "all my notes" (not "everything about Mia"); SPECIFIC for a request naming a particular
    thing (a value; in a request of one step, a quoted text, a name, "about my dog"); "" otherwise."""
    if _EVERYTHING_RE.search(query) and not has_value and not _EVERYTHING_ABOUT_RE.search(query):
        return EVERYTHING
    names = _QUOTED_RE.search(query) or _NAME_RE.search(query) or _ABOUT_RE.search(query)
    if has_value or (names and len(query.split()) <= ONE_REQUEST_WORDS):
        return SPECIFIC
    return ""


def param_kinds(input_schema: Mapping[str, Any], name: str = "") -> frozenset[str]:
    """The value kinds a tool's top-level parameters take (by name or `format`); NO_PARAMETERS
    for a tool that takes none; OTHER_FORM for a tool whose name says it takes several things at
    once or media."""
    props = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
    if not isinstance(props, Mapping) or not props:
        return frozenset({NO_PARAMETERS})
    kinds: set[str] = {OTHER_FORM} if _OTHER_FORM_RE.search(name) else set()
    for name, spec in props.items():
        kinds.update(k for k, rx in _PARAM_RE.items() if rx.search(str(name)) or rx.search(str(name).lower()))
        fmt = spec.get("format") if isinstance(spec, Mapping) else None
        if isinstance(fmt, str) and fmt in _FORMATS:
            kinds.add(_FORMATS[fmt])
    return frozenset(kinds)


# -- an intent, and how it weighs tools --------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    """What search reads off a request: its action (or None), the kinds of value it carries, and
    the text that is ranked (the request with its values replaced by words of their kind)."""

    query: str
    text: str
    action: Action | None
    values: frozenset[str]


# Reading one text file named by its extension or its well-known name ("check what's in
# docker-compose.yml", "pull up notes.md"), with no word of its metadata, of a search, a listing, its
# lines or the web: its contents. Only in a short request (a longer one, on LiveMCPBench, is a task
# of several steps where the file is one of them: "read the customers in x.csv and tell me ...").
CONTENTS_WORDS: Final = 10
_TEXT_FILE_RE: Final = re.compile(r"\bfile (?:" + "|".join(sorted(EXTENSIONS - set(MEDIA))) + r")\b")
_NOT_CONTENTS: Final = re.compile(r"\b(?:metadata|search|listing|tree|sizes|lines|url|web|online|internet)\b")
# verbs that read, but for a search or a computation: not the file's contents ("sum the column in x.xlsx")
_NOT_CONTENTS_VERBS: Final = frozenset({"find", "search", "locate", "hunt", "look for", "look through"}) | _words(
    "count compare convert calculate compute sum total average measure hash diff match translate multiply "
    "divide subtract test verify echo repeat")


def _expanded(text: str, action: Action | None, query: str = "", values: frozenset[str] = frozenset()) -> str:
    extra = [words for rx, words in SYNONYMS if rx.search(text)]
    if action is not None and action.effect != READS and (
            PART_OF_FILE_WORDS.search(text) or (action.effect == CHANGES and ONE_TEXT_FILE in values
                                                and PARTS_WORDS.search(text) and "overwrite" not in text)):
        extra.append("edit lines")       # (the ninth pass) "the README says 'instal', correct that typo"
    elif (action is not None and action.words.endswith("… part of") and action.words.split()[0] in _ADDING_LINES
          and ONE_TEXT_FILE in values):
        extra.append("edit lines")
    if (file_words := _one_file_words(action, text, query, values, extra)) is not None:
        extra.append(file_words)
    return f"{text} {' '.join(extra)}" if extra else text


# (the eleventh pass) a dotfile at the end of a path ("show me ~/.gitconfig")
_DOTFILE_PATH_RE: Final = re.compile(r"(?<![\w.])(?:~|\.{1,2})?/(?:[\w.\-]+/)*\.[A-Za-z][\w\-]*(?![\w./])")
_NOT_WRITTEN: Final = re.compile(r"\b(?:move|directory)\b")
_SENTENCE_RE: Final = re.compile(r"[;:!?\n]+|\.+(?=\s|$)")     # (not commas: the steps of a task)


def _file_clause_words(query: str) -> int:
    """The words of a request's main clause, or fewer: those of the sentence (between colons,
    question marks, ...) that names the file ("can I see the Makefile? I want to know what the test
    target does": 5), of two words or more unless it leads ("config.yaml: is there a timeout in it?")."""
    whole = len(main_clause(query).split())
    if whole > ONE_REQUEST_WORDS:        # a task of several steps (LiveMCPBench: -1/2 R@5 with BM25F without)
        return whole
    parts = [len(p.split()) for i, p in enumerate(_SENTENCE_RE.split(query))
             if (i == 0 or len(p.split()) > 1) and (_PATH_RE.search(p) or _NAMED_FILE_RE.search(p))]
    return min([whole, *parts])       # "put report.pdf into the archive folder"


def _one_file_words(action: Action | None, text: str, query: str, values: frozenset[str], extra: list[str]) -> str | None:
    """One text file named in a short request: read, its contents; made ("create poem.md with a
    haiku"), a file written, not a note; None otherwise."""
    if action is None or ONE_TEXT_FILE not in values or _file_clause_words(query) > CONTENTS_WORDS:
        return None
    said, named = f"{text} {' '.join(extra)}", _TEXT_FILE_RE.search(text)
    if (action.effect == READS and URL not in values and action.words not in _NOT_CONTENTS_VERBS
            and not _NOT_CONTENTS.search(said) and (named or _NAMED_FILE_RE.search(query) or _DOTFILE_PATH_RE.search(query))):
        return "contents read"
    # (the eleventh pass: what follows a colon is the text to write, "save this as notes/meeting.txt: move the launch")
    if action.effect == RECORDS and named and not _NOT_WRITTEN.search(f"{text.split(' : ')[0]} {' '.join(extra)}"):
        return "file write"
    return None


# "delete line 12 of app.py", "insert an import at the top of utils.py": what is deleted or added
# is part of a file, so the file changes.
_PART_OF_FILE_RE: Final = re.compile(r"\b(?:of|from|in|into|to)\s+(?:the\s+)?file\b")
# "add 'buy batteries' to the body of note 12": what is added or taken is part of something kept.
_PART_OF_RE: Final = re.compile(r"\b(?:at|near|towards?) the (?:very )?(?:end|top|bottom|start|beginning) of (?:my |the |this )?(?:file|note|list|document)\b"
                                r"|\b(?:of|from|in|into|to)\s+(?:the\s+|its\s+)?(?:body|title|text|end|top|bottom|"
                                r"start|beginning|middle|contents?|description|tags?)\s+of\b", re.I)


# "add 'bring passport' to my packing note": added to one that is kept, which changes.
_ADDED_TO_KEPT_RE: Final = re.compile(r"\b(?:to|onto|into|on) (?:(?:my|the|this|that|our) (?:\w+ ){0,2}"
                                      r"(?:note|list|document|doc)\b|(?:note|list|entry|item) #?\d+\b)", re.I)
# (the eleventh pass) "slip `127.0.0.1 dev.local` into /etc/hosts": into a file under folders
_ADDED_INTO_FILE_RE: Final = re.compile(r"\b(?:to|into|onto)\s+(?:the\s+|my\s+)?(?!(?:a\s+)?new\b)(?:\w+\s+){0,2}file\b")
_ADDING: Final = frozenset({"add", "append", "put", "insert", "include", "stick", "slip"})
# (the eleventh pass) a text added into a file ("append `export EDITOR=nvim` to ~/.bashrc"): an edit of its lines
# (not "put" or "save": "save this poem into x.txt" writes one)
_ADDING_LINES: Final = frozenset({"add", "append", "insert", "stick", "slip"})


# "Priya no longer has a cat, update your memory": a fact that stopped being true is taken out.
_NO_LONGER_RE: Final = re.compile(r"\b(?:no longer|(?:n't|not)\b.{0,60}\b(?:anymore|any more))\b.{0,60}"
                                  r"\b(?:memory|what you know|you remember)\b", re.I)


def _on_a_part(action: Action | None, text: str, values: frozenset[str]) -> Action | None:
    if action is not None and action.effect == CHANGES and _NO_LONGER_RE.search(text):
        return Action(DELETES, f"{action.words} … no longer")
    if action is not None and action.effect in (DELETES, RECORDS) and (
            (PATH in values and _PART_OF_FILE_RE.search(text)) or _PART_OF_RE.search(text)
            or (action.words in _ADDING and (_ADDED_TO_KEPT_RE.search(text)
                                             or (action.words in _ADDING_LINES and PATH in values
                                                 and _ADDED_INTO_FILE_RE.search(text))))):
        return Action(CHANGES, f"{action.words} … part of")
    return action


# "is ~/secrets within the paths you can reach?": the place named is not what the tool takes (it lists
# every allowed one), so the request names no particular thing for it.
_ASKS_ACCESS_RE: Final = re.compile(r"\ballowed access\b")


@lru_cache(maxsize=4096)
def understand(query: str) -> Intent:
    """The intent of a request (see the module's text)."""
    text, values = _values(query)
    action = _on_a_part(request_action(query), text, values)
    expanded = _expanded(text or query, action, query, values)
    if _ASKS_ACCESS_RE.search(expanded):        # (the eleventh pass) whether a place is within reach: the list
        values -= {SPECIFIC}
    return Intent(query, expanded, action, values)


# Rows: the request's action; columns: the tool's effect (reads, records, changes, deletes, runs).
# Chosen on the dev portions (docs/ranking.md); 1 on the diagonal.
ACTION_WEIGHTS: Final[Mapping[str, Mapping[str, float]]] = {
    READS: dict(zip(EFFECTS, (1.0, 0.5, 0.35, 0.25, 0.8), strict=True)),
    RECORDS: dict(zip(EFFECTS, (0.5, 1.0, 0.8, 0.3, 0.6), strict=True)),
    CHANGES: dict(zip(EFFECTS, (0.5, 0.8, 1.0, 0.5, 0.6), strict=True)),
    DELETES: dict(zip(EFFECTS, (0.4, 0.3, 0.7, 1.0, 0.4), strict=True)),
    RUNS: dict(zip(EFFECTS, (0.9, 0.6, 0.8, 0.3, 1.0), strict=True)),
}
VALUE_BOOST: Final = 0.2
NO_PARAMETERS_SPECIFIC: Final = 0.7
OTHER_FORM_FACTOR: Final = 0.8
# A read-phrased request: tools that change or delete stay below the best reading tool whose score
# before the stage is at least this share of the best score.
MATCHING_SHARE: Final = 0.5
_DEMOTED_BY_READS: Final = frozenset({CHANGES, DELETES})
# The read rule holds for effects read off annotations or a name's verb, not off a description's
# first word (trust below this).
CAP_TRUST: Final = 0.75


def _object_factor(kinds: frozenset[str], values: frozenset[str]) -> float:
    """A tool's factor for what the request's object is: VALUE_BOOST where it takes a value the
    request carries or, asked for everything, where it takes no parameter; NO_PARAMETERS_SPECIFIC
    where it takes none but the request names a particular thing."""
    if NO_PARAMETERS in kinds:
        return NO_PARAMETERS_SPECIFIC if SPECIFIC in values else 1.0 + VALUE_BOOST if EVERYTHING in values else 1.0
    form = OTHER_FORM_FACTOR if OTHER_FORM in kinds and ONE_TEXT_FILE in values else 1.0
    return form * (1.0 + VALUE_BOOST if kinds & values else 1.0)


class IntentStage:
    """Each tool's effect, parameter kinds and base factor (the learned prior: 1 without), for one
    catalogue; turns an intent into one factor per tool."""

    def __init__(self, effects: Sequence[str | None], kinds: Sequence[frozenset[str]],
                 base: Sequence[float] | None = None, trust: Sequence[float] | None = None) -> None:
        self.effects = list(effects)
        self.kinds = list(kinds)
        # how far each tool's factor leans on its effect (1: fully; effects read off words less)
        self.trust = list(trust) if trust is not None else [1.0] * len(self.effects)
        self.base = list(base) if base is not None and any(b != 1.0 for b in base) else None
        self._known = (frozenset().union(*self.kinds) if self.kinds else frozenset()) | {SPECIFIC, EVERYTHING,
                                                                                         ONE_TEXT_FILE}
        self._factors: dict[tuple[str | None, frozenset[str]], list[float] | None] = {}
        self._array: Any = None
        self._arrays: dict[int, tuple[list[float], Any]] = {}     # the factors as numpy arrays

    def factors(self, intent: Intent) -> list[float] | None:
        """One factor per tool, or None when the intent changes nothing."""
        key = (intent.action.effect if intent.action else None, intent.values & self._known)
        if key not in self._factors:
            self._factors[key] = self._compute(*key)
        return self._factors[key]

    def _compute(self, action: str | None, values: frozenset[str]) -> list[float] | None:
        row = ACTION_WEIGHTS[action] if action else {}
        out = [(1.0 - (1.0 - row.get(e, 1.0)) * t if e else 1.0) * _object_factor(k, values)
               for e, k, t in zip(self.effects, self.kinds, self.trust, strict=True)]
        if all(f == 1.0 for f in out):
            return self.base
        return [f * b for f, b in zip(out, self.base, strict=True)] if self.base else out

    def demoted(self, intent: Intent) -> bool:
        """Whether the read rule applies (a read-phrased request)."""
        return intent.action is not None and intent.action.effect == READS

    def apply(self, scores: dict[int, float], intent: Intent) -> dict[int, float]:
        """Scores (by tool index) weighed by the intent, the read rule applied."""
        factors = self.factors(intent)
        if factors is None:
            return scores
        out = {i: s * factors[i] for i, s in scores.items()}
        if self.demoted(intent) and scores:
            floor = MATCHING_SHARE * max(scores.values())
            reading = [out[i] for i, s in scores.items() if s >= floor and self.effects[i] == READS
                       and self.trust[i] >= CAP_TRUST]
            if reading:
                self._below(out, max(reading))
        return out

    def apply_array(self, scores: Any, intent: Intent) -> Any:
        """`apply` for a numpy array of every tool's score (the hybrid ranker's)."""
        import numpy as np  # only the hybrid ranker calls this, where numpy is installed

        factors = self.factors(intent)
        if factors is None:
            return scores
        key = id(factors)
        weights = self._arrays.get(key)
        if weights is None or weights[0] is not factors:
            weights = self._arrays[key] = (factors, np.asarray(factors, dtype=np.float32))
        if self._array is None or len(self._array) != len(self.effects):
            # effects trusted enough for the read rule; -1 for the others
            self._array = np.array([EFFECTS.index(e) if e and t >= CAP_TRUST else -1
                                    for e, t in zip(self.effects, self.trust, strict=True)], dtype=np.int64)
        out = scores * weights[1]
        if self.demoted(intent) and len(scores):
            effect = self._array
            reading = (effect == 0) & (scores >= MATCHING_SHARE * scores.max())
            if reading.any():
                best = float(out[reading].max())
                over = ((effect == EFFECTS.index(CHANGES)) | (effect == EFFECTS.index(DELETES))) & (out >= best)
                if over.any():
                    top = float(out[over].max())
                    out[over] = np.nextafter(np.float32(best), np.float32(-np.inf)) * out[over] / top if top > 0 else 0
        return out

    def _below(self, out: dict[int, float], best: float) -> None:
        over = [i for i, s in out.items() if s >= best and self.effects[i] in _DEMOTED_BY_READS
                and self.trust[i] >= CAP_TRUST]
        if not over:
            return
        top = max(out[i] for i in over)
        for i in over:   # just below the best reading tool, in their order
            out[i] = math.nextafter(best, -math.inf) * out[i] / top if top > 0 else 0.0
