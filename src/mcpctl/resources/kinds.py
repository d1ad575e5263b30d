"""The resource kinds (Server, Project): their schemas, defaults and typed views.

On disk and on the wire a resource is a plain dict; `ServerSpec` and `ProjectSpec` are the
typed, read-only views the gateway and the catalogue work with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from mcpctl.resources.call_limits import LIMITS, ProfileLimits
from mcpctl.resources.idp import IDP_SPEC
from mcpctl.resources.overrides import ToolOverride, overrides_from, overrides_node
from mcpctl.resources.presents import Presents, presents
from mcpctl.resources.schema import PROFILE_NAME_RE as PROFILE_NAME_RE  # (read from here too)
from mcpctl.resources.schema import SECRET_REF_RE as SECRET_REF_RE
from mcpctl.resources.schema import (
    ListOf,
    MapOf,
    Obj,
    Scalar,
    check_min,
    check_name,
    check_positive,
    check_profile_name,
    check_range,
    check_reference,
    check_tool_id,
)
from mcpctl.resources.settings import (
    DEFAULT_ASK_MAX_BYTES,
    DEFAULT_ASK_REFRESH_SECONDS,
    DEFAULT_ASK_TOP_K,
    DEFAULT_KEEP_MEGABYTES,
    DEFAULT_KEEP_MINUTES,
    DEFAULT_LEARN_MIN_SESSIONS,
    DEFAULT_LEARN_WINDOW_DAYS,
    DEFAULT_MAX_RESULT_TOKENS,
    DEFAULT_NAME_MAX_LENGTH,
    DEFAULT_RANKER,
    DEFAULT_RECORD_QUERIES,
    DEFAULT_SEARCH_ENABLED,
    DEFAULT_SEARCH_TOP_K,
    RANKER_WHEN_UNSET,
    RANKERS,
    AskSettings,
    GateSettings,
    LearnSettings,
    NameSettings,
    ResultSettings,
    SearchSettings,
)

API_VERSION: Final = "mcpctl/v1"
PRESENTATIONS: Final = ("flat", "favourite-index", "deferred")
PINNING_MODES: Final = ("off", "warn", "hold")
DEFAULT_PINNING: Final = "warn"       # report a changed definition, keep serving it (docs/internals.md)
NAME_STYLES: Final = ("portable", "spec", "bare")
DEFAULT_MAX_FAVOURITES: Final = 15
DEFERRED_FAVOURITES_WARN: Final = 10       # deferred lists only favourites: 3-5 recommended
# Presented names: Claude Code calls a tool `mcp__<server>__<name>` and refuses more than 64
# characters (Codex has the same 64-character limit). With the gateway registered as `mcpctl`,
# a portable name may use what is left: 64 - len("mcp__mcpctl__") = 51. The spec style may go up
# to SEP-986's 128, for clients without that limit (validate warns above the budget).
CLIENT_TOOL_NAME_LIMIT: Final = 64
CLIENT_PREFIX: Final = "mcp__mcpctl__"
PORTABLE_MAX_LENGTH: Final = CLIENT_TOOL_NAME_LIMIT - len(CLIENT_PREFIX)
SPEC_MAX_LENGTH: Final = 128

_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_env_key(key: str) -> str | None:
    return None if _ENV_KEY_RE.match(key) else f"{key!r} is not a valid environment variable name"


def _check_url(value: str) -> str | None:
    if value.startswith(("http://", "https://")) or SECRET_REF_RE.search(value):
        return None
    return f"{value!r} is not an http:// or https:// URL"


def check_favourite_id(value: str) -> str | None:
    """A favourite is one tool: a canonical id `server/tool`, no globs."""
    problem = check_tool_id(value)
    if problem:
        return problem
    if any(c in value for c in "*?["):
        return f"{value!r} is a glob; a favourite names one tool (server/tool)"
    return None


def check_override_id(value: str) -> str | None:
    """An override is of one tool: a canonical id `server/tool`, no globs."""
    problem = check_tool_id(value)
    if problem:
        return problem
    if any(c in value for c in "*?["):
        return f"{value!r} is a glob; an override is of one tool (server/tool)"
    return None


READ_ONLY_PROFILE: Final = "read-only"      # every project has it; a project may redefine it


def check_timestamp(value: str) -> str | None:
    import datetime

    try:
        datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return f"{value!r} is not a UTC timestamp like 2026-12-31T00:00:00Z"
    return None


def _check_https_url(value: str) -> str | None:
    from urllib.parse import urlparse

    u = urlparse(value)
    if u.scheme != "https" or not u.netloc or u.path in ("", "/"):
        return f"{value!r} is not an https:// URL with a path (a client ID metadata document)"
    return None


def _check_endpoint(value: str) -> str | None:
    """A model endpoint: an http:// or https:// base URL with a host (it usually ends in /v1)."""
    from urllib.parse import urlparse

    u = urlparse(value.strip())
    if u.scheme not in ("http", "https") or not u.hostname:
        return (f"{value!r} is not an http:// or https:// URL: give the base URL of an OpenAI-compatible "
                "endpoint, ending in /v1 (e.g. http://127.0.0.1:11434/v1)")
    return None


AUTH_TYPES: Final = ("oauth",)


def _check_nonempty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


_STR = Scalar(str)

SERVER_SPEC: Final = Obj({
    "transport": Scalar(str, default="stdio", enum=("stdio", "http", "sse")),
    "command": Scalar(str, nullable=True, check=_check_nonempty),
    "args": ListOf(_STR),
    "env": MapOf(Scalar((str, int, float, bool), type_name="string"), key_check=_check_env_key),
    "cwd": Scalar(str, nullable=True),
    "url": Scalar(str, nullable=True, check=_check_url),
    "headers": MapOf(_STR),
    "timeouts": Obj({
        "connect": Scalar(float, default=30.0, check=check_positive),
        "call": Scalar(float, default=120.0, check=check_positive),
    }),
    "description": Scalar(str, nullable=True),
    # The most calls (and other requests for clients) in flight at this server at once; more wait
    # for one to finish, each for at most timeouts.call (upstream.ceiling). Unset: no ceiling.
    "maxConcurrency": Scalar(int, nullable=True, check=check_range(1, 100_000)),
    # Remote sign-in (http and sse only): `mcpctl login` runs OAuth 2.1 + PKCE; tokens live in a
    # 0600 file under the state directory (mcpctl.auth.storage), never here.
    "auth": Obj({
        "type": Scalar(str, required=True, enum=AUTH_TYPES),
        "scopes": ListOf(Scalar(str, check=_check_nonempty), default_empty=False),
        "clientId": Scalar(str, nullable=True, check=_check_nonempty),
        "clientSecret": Scalar(str, nullable=True, check=check_reference),
        "clientMetadataUrl": Scalar(str, nullable=True, check=_check_https_url),
    }, omit_if_default=True),
})

PROJECT_SPEC: Final = Obj({
    "description": Scalar(str, nullable=True),
    "servers": ListOf(Scalar(str, check=check_name)),
    "tools": Obj({
        "disabled": ListOf(Scalar(str, check=check_tool_id)),
        "enabled": ListOf(Scalar(str, check=check_tool_id)),
        # a tool's own wording in this project: name, title, description, annotations, parameters
        # (`resources.overrides`; applied by the pipeline's overrides stage)
        "overrides": overrides_node(check_override_id),
    }),
    # `enabled` and `presentation` are left unset unless given: favouriteIndex.enabled: true alone
    # means the favourite-index presentation; `presentation` chooses favourite-index or deferred
    # (see `presents.presents`; contradictions are refused by `validate`).
    "favouriteIndex": Obj({
        "enabled": Scalar(bool, nullable=True),
        "tools": ListOf(Scalar(str, check=check_favourite_id)),
        "maxFavourites": Scalar(int, default=DEFAULT_MAX_FAVOURITES, check=check_range(1, 200)),
        # false: favourite-index without its load-bearing "PREFER favourite ..." instruction (the
        # same listing; measured by `mcpctl bakeoff`'s favourite-index-without-instruction)
        "instruction": Scalar(bool, nullable=True),           # unset: true
    }),
    "presentation": Scalar(str, nullable=True, enum=PRESENTATIONS),
    "pinning": Scalar(str, default=DEFAULT_PINNING, enum=PINNING_MODES),
    "gate": Obj({
        "enabled": Scalar(bool, default=False),
        "instructions": Scalar(str, nullable=True),
    }),
    "names": Obj({
        "style": Scalar(str, default="portable", enum=NAME_STYLES),
        # the style-dependent cap (PORTABLE_MAX_LENGTH for portable names) is checked by validate
        "maxLength": Scalar(int, default=DEFAULT_NAME_MAX_LENGTH, check=check_range(16, SPEC_MAX_LENGTH)),
    }),
    # Named views of the project for credentials (tokens) and `serve --profile`: allow/deny are
    # canonical ids or globs; readOnly keeps only tools annotated read-only and not destructive,
    # plus those allowed explicitly. `read-only` ({readOnly: true}) exists unless redefined.
    "profiles": MapOf(Obj({
        "description": Scalar(str, nullable=True),
        "readOnly": Scalar(bool, default=False),
        "allow": ListOf(Scalar(str, check=check_tool_id)),
        "deny": ListOf(Scalar(str, check=check_tool_id)),
        # calls per minute per identity, with a burst (resources.call_limits; presentation.budgets)
        "limits": LIMITS,
    }), key_check=check_profile_name),
    "search": Obj({
        "enabled": Scalar(bool, default=DEFAULT_SEARCH_ENABLED),
        "ranker": Scalar(str, default=DEFAULT_RANKER, enum=RANKERS),
        "topK": Scalar(int, default=DEFAULT_SEARCH_TOP_K, check=check_range(1, 20)),
        "recordQueries": Scalar(bool, default=DEFAULT_RECORD_QUERIES),
        # Learning from the project's own use (catalogue.learn): each recorded query followed by a
        # call that answered becomes evidence for that tool. enabled unset: on where queries are
        # recorded, off otherwise.
        "learn": Obj({
            "enabled": Scalar(bool, nullable=True),
            "windowDays": Scalar(int, default=DEFAULT_LEARN_WINDOW_DAYS, check=check_range(1, 3650)),
            "minSessions": Scalar(int, default=DEFAULT_LEARN_MIN_SESSIONS, check=check_range(1, 1000)),
        }),
    }),
    # Results in sections (presentation.sections): a result's text over maxTokens reaches the client
    # cut, the rest kept in memory (keepMegabytes in all, keepMinutes each) for read_result.
    # 0 turns cutting off. The default stays under Claude Code's 10,000-token warning.
    "results": Obj({
        "maxTokens": Scalar(int, default=DEFAULT_MAX_RESULT_TOKENS, check=check_range(0, 1_000_000)),
        "keepMegabytes": Scalar(int, default=DEFAULT_KEEP_MEGABYTES, check=check_range(1, 4096)),
        "keepMinutes": Scalar(int, default=DEFAULT_KEEP_MINUTES, check=check_range(1, 7 * 24 * 60)),
    }),
    # ask (mcpctl.ask): the `ask` built-in answers questions from the upstreams' text resources,
    # cut into passages (at most maxBytes of text indexed), re-read when a server says they
    # changed and otherwise every refreshSeconds. model: the project's own OpenAI-compatible
    # endpoint, which answers instead of the client's sampling (absent unless given).
    "ask": Obj({
        "enabled": Scalar(bool, default=False),
        "topK": Scalar(int, default=DEFAULT_ASK_TOP_K, check=check_range(1, 20)),
        "maxBytes": Scalar(int, default=DEFAULT_ASK_MAX_BYTES, check=check_range(4096, 2**30)),
        "refreshSeconds": Scalar(int, default=DEFAULT_ASK_REFRESH_SECONDS, check=check_range(10, 7 * 24 * 3600)),
        "model": Obj({
            "endpoint": Scalar(str, required=True, check=_check_endpoint),
            "model": Scalar(str, required=True, check=_check_nonempty),
            "apiKey": Scalar(str, nullable=True, check=check_reference),
        }, omit_if_default=True),
    }),
})

# A bearer credential for a project's HTTP gateway. The secret is shown once by `create token`
# and never stored: only its hash, apart from the resource (`resources.tokens`).
TOKEN_SPEC: Final = Obj({
    "project": Scalar(str, required=True, check=check_name),
    "profile": Scalar(str, nullable=True, check=check_profile_name),    # none: the full view
    "expires": Scalar(str, nullable=True, check=check_timestamp),
    "description": Scalar(str, nullable=True),
})

METADATA: Final = Obj({
    "name": Scalar(str, required=True, check=check_name),
    "labels": MapOf(Scalar((str, int, float, bool), type_name="string")),
    "annotations": MapOf(Scalar((str, int, float, bool), type_name="string")),
    # Owned by mcpctl: accepted on input (so `get -o yaml | apply` works) and ignored.
    "uid": Scalar(str, nullable=True),
    "creationTimestamp": Scalar(str, nullable=True),
    "resourceVersion": Scalar((str, int), nullable=True, type_name="string"),
    "generation": Scalar(int, nullable=True, check=check_min(0)),
})


@dataclass(frozen=True)
class Kind:
    name: str                       # "Server"
    plural: str                     # "servers"
    aliases: tuple[str, ...]        # every accepted CLI spelling
    spec: Obj


KINDS: Final = {
    "Server": Kind("Server", "servers", ("server", "servers", "srv"), SERVER_SPEC),
    "Project": Kind("Project", "projects", ("project", "projects", "proj"), PROJECT_SPEC),
    "Token": Kind("Token", "tokens", ("token", "tokens", "tok"), TOKEN_SPEC),
    "IdentityProvider": Kind("IdentityProvider", "identityproviders",
                             ("identityprovider", "identityproviders", "idp", "idps"), IDP_SPEC),
}

KIND_ORDER: Final = ("Server", "Project", "Token", "IdentityProvider")   # what a later kind names is applied first


def kind_for_alias(word: str) -> Kind | None:
    w = word.lower()
    for kind in KINDS.values():
        if w == kind.name.lower() or w in kind.aliases:
            return kind
    return None


def all_aliases() -> list[str]:
    return [a for k in KINDS.values() for a in k.aliases]


# -- typed views --------------------------------------------------------------------------


@dataclass(frozen=True)
class Timeouts:
    connect: float = 30.0
    call: float = 120.0


@dataclass(frozen=True)
class AuthSpec:
    """A server's sign-in: `type: oauth`, everything else discovered unless given."""

    type: str = "oauth"
    scopes: tuple[str, ...] = ()
    client_id: str | None = None
    client_secret: str | None = None         # a ${env:}/${file:} reference, resolved at use
    client_metadata_url: str | None = None

    @classmethod
    def from_spec(cls, a: dict[str, Any] | None) -> AuthSpec | None:
        if not a:
            return None
        return cls(str(a.get("type", "oauth")), tuple(a.get("scopes") or ()), a.get("clientId"),
                   a.get("clientSecret"), a.get("clientMetadataUrl"))


@dataclass(frozen=True)
class ServerSpec:
    """A registered upstream MCP server, as the gateway uses it (secrets still unresolved)."""

    name: str
    transport: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeouts: Timeouts = Timeouts()
    description: str | None = None
    auth: AuthSpec | None = None
    max_concurrency: int | None = None           # calls in flight at once (None: no ceiling)

    @classmethod
    def from_resource(cls, res: dict[str, Any]) -> ServerSpec:
        s = res.get("spec") or {}
        t = s.get("timeouts") or {}
        return cls(
            name=res["metadata"]["name"],
            transport=s.get("transport", "stdio"),
            command=s.get("command"),
            args=tuple(s.get("args") or ()),
            env={k: str(v) for k, v in (s.get("env") or {}).items()},
            cwd=s.get("cwd"),
            url=s.get("url"),
            headers=dict(s.get("headers") or {}),
            timeouts=Timeouts(float(t.get("connect", 30.0)), float(t.get("call", 120.0))),
            description=s.get("description"),
            auth=AuthSpec.from_spec(s.get("auth")),
            max_concurrency=s.get("maxConcurrency"),
        )


@dataclass(frozen=True)
class FavouriteIndex:
    enabled: bool = False                 # effective: the presentation shows favourites
    tools: tuple[str, ...] = ()
    max_favourites: int = DEFAULT_MAX_FAVOURITES
    instruction: bool = True              # False: no "PREFER favourite ..." text (modes.without_instruction)


@dataclass(frozen=True)
class Profile:
    """A named view of a project for one kind of credential."""

    name: str
    read_only: bool = False
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    limits: ProfileLimits | None = None      # calls per minute per identity (None: none)

    @classmethod
    def from_spec(cls, name: str, s: dict[str, Any]) -> Profile:
        return cls(name, bool(s.get("readOnly", False)), tuple(s.get("allow") or ()), tuple(s.get("deny") or ()),
                   ProfileLimits.from_spec(s.get("limits")))


BUILTIN_PROFILES: Final = {READ_ONLY_PROFILE: Profile(READ_ONLY_PROFILE, read_only=True)}


@dataclass(frozen=True)
class TokenSpec:
    name: str
    project: str
    profile: str | None = None
    expires: str | None = None

    @classmethod
    def from_resource(cls, res: dict[str, Any]) -> TokenSpec:
        s = res.get("spec") or {}
        return cls(res["metadata"]["name"], str(s.get("project", "")), s.get("profile"), s.get("expires"))


@dataclass(frozen=True)
class ProjectSpec:
    name: str
    servers: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    enabled: tuple[str, ...] = ()
    favourite_index: FavouriteIndex = FavouriteIndex()
    presentation: str = "flat"
    names: NameSettings = field(default_factory=NameSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    description: str | None = None
    gate: GateSettings = field(default_factory=GateSettings)
    profiles: tuple[Profile, ...] = ()          # declared ones; see `profile()` for the built-ins
    results: ResultSettings = field(default_factory=ResultSettings)
    pinning: str = DEFAULT_PINNING               # off | warn | hold: a definition changed since pinned
    ask: AskSettings = field(default_factory=AskSettings)
    overrides: tuple[ToolOverride, ...] = ()     # tools.overrides, in the file's order

    @property
    def presents(self) -> Presents:
        """What this project presents, as `presents(spec)` said when the view was made."""
        return Presents(self.presentation, self.favourite_index.enabled,
                        self.presentation == "favourite-index" and self.favourite_index.instruction)

    def profile(self, name: str) -> Profile | None:
        """A profile by name: declared in the project, else a built-in one."""
        for p in self.profiles:
            if p.name == name:
                return p
        return BUILTIN_PROFILES.get(name)

    def profile_names(self) -> list[str]:
        return sorted({p.name for p in self.profiles} | set(BUILTIN_PROFILES))

    @classmethod
    def from_resource(cls, res: dict[str, Any]) -> ProjectSpec:
        s = res.get("spec") or {}
        tools = s.get("tools") or {}
        fav = s.get("favouriteIndex") or {}
        names = s.get("names") or {}
        search = s.get("search") or {}
        gate = s.get("gate") or {}
        results = s.get("results") or {}
        shown = presents(s)
        return cls(
            name=res["metadata"]["name"],
            servers=tuple(s.get("servers") or ()),
            disabled=tuple(tools.get("disabled") or ()),
            enabled=tuple(tools.get("enabled") or ()),
            favourite_index=FavouriteIndex(
                enabled=shown.favourites,
                tools=tuple(fav.get("tools") or ()),
                max_favourites=int(fav.get("maxFavourites", DEFAULT_MAX_FAVOURITES)),
                instruction=fav.get("instruction") is not False,
            ),
            presentation=shown.mode,
            names=NameSettings(names.get("style", "portable"), int(names.get("maxLength", DEFAULT_NAME_MAX_LENGTH))),
            search=SearchSettings(
                enabled=bool(search.get("enabled", DEFAULT_SEARCH_ENABLED)),
                ranker=search.get("ranker", RANKER_WHEN_UNSET),
                top_k=int(search.get("topK", DEFAULT_SEARCH_TOP_K)),
                record_queries=bool(search.get("recordQueries", DEFAULT_RECORD_QUERIES)),
                learn=LearnSettings.from_spec(search.get("learn") or {}),
            ),
            description=s.get("description"),
            gate=GateSettings(bool(gate.get("enabled", False)), gate.get("instructions")),
            profiles=tuple(Profile.from_spec(n, v or {}) for n, v in (s.get("profiles") or {}).items()),
            results=ResultSettings(int(results.get("maxTokens", DEFAULT_MAX_RESULT_TOKENS)),
                                   int(results.get("keepMegabytes", DEFAULT_KEEP_MEGABYTES)),
                                   int(results.get("keepMinutes", DEFAULT_KEEP_MINUTES))),
            pinning=s.get("pinning") or DEFAULT_PINNING,
            ask=AskSettings.from_spec(s.get("ask") or {}),
            overrides=overrides_from(tools.get("overrides")),
        )
