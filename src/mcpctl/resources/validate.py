"""Turning a loaded document into a valid, canonical resource — or a precise error.

The canonical form is what gets stored and compared: defaults filled in, then empty
collections and nulls pruned, keys in schema order. Two manifests that mean the same thing
have the same canonical form, which is what makes `apply` report `unchanged`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpctl.errors import InvalidResource, did_you_mean
from mcpctl.resources.kinds import (
    API_VERSION,
    CLIENT_PREFIX,
    CLIENT_TOOL_NAME_LIMIT,
    DEFERRED_FAVOURITES_WARN,
    KINDS,
    METADATA,
    PORTABLE_MAX_LENGTH,
)
from mcpctl.resources.overrides import check_shape
from mcpctl.resources.presents import presents
from mcpctl.resources.schema import FieldError, FieldErrors, dotted, every, normalize
from mcpctl.resources.secrets import looks_like_secret
from mcpctl.resources.settings import DEFAULT_NAME_MAX_LENGTH
from mcpctl.resources.yamlio import Document

TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")


@dataclass
class Validated:
    kind: str
    name: str
    metadata: dict[str, Any]      # user-owned metadata only: name, labels, annotations
    spec: dict[str, Any]          # canonical
    doc: Document
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


def prune(value: Any) -> Any:
    """Drop None values and empty lists/maps, recursively (keeps False and 0)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            pv = prune(v)
            if pv is None or (isinstance(pv, dict | list) and not pv):
                continue
            out[k] = pv
        return out
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def canonical_spec(kind: str, spec: Any) -> dict[str, Any]:
    """Validate and canonicalise a spec (raises FieldError with a path under `spec`)."""
    canonical: dict[str, Any] = prune(normalize(KINDS[kind].spec, spec, ("spec",)))
    return canonical


def _fail(doc: Document, e: FieldError) -> InvalidResource:
    """One wrong field as an error naming its file, document and line; several, each on a line of
    their own, in the order of the file (what `combined` makes of them)."""
    errors = sorted(every(e), key=lambda f: doc.line_of(f.path) or 0)
    return combined([InvalidResource(f"{doc.where(f.path)}: {f.message}", hint=f.hint) for f in errors])


def combined(errors: list[InvalidResource]) -> InvalidResource:
    """Every problem of an input in one error: itself when there is one; else a line per problem
    (its hint in brackets), in the order given (the file's)."""
    if len(errors) == 1:
        return errors[0]
    lines = tuple(p for e in errors for p in (e.problems or (e.message + (f" ({e.hint})" if e.hint else ""),)))
    if len(lines) == 1:
        return errors[0]
    out = InvalidResource(f"{len(lines)} problems, nothing changed:\n" + "\n".join(lines))
    out.problems = lines
    return out


def validate_document(doc: Document) -> Validated:
    data = doc.data
    if not isinstance(data, dict):
        raise InvalidResource(f"{doc.where()}: a resource must be a mapping with apiVersion, kind, metadata "
                              f"and spec, got {type(data).__name__}")
    unknown = [k for k in data if k not in TOP_LEVEL]
    if unknown:
        k = str(unknown[0])
        raise InvalidResource(f"{doc.where((k,))}: unknown field {k!r}",
                              hint=did_you_mean(k, TOP_LEVEL) or f"known fields: {', '.join(TOP_LEVEL)}")
    kind = data.get("kind")
    if kind is None:
        raise InvalidResource(f"{doc.where()}: missing 'kind'", hint=f"add kind: one of {', '.join(KINDS)}")
    if kind not in KINDS:
        hint = did_you_mean(str(kind), list(KINDS)) or f"known kinds: {', '.join(KINDS)}"
        raise InvalidResource(f"{doc.where(('kind',))}: unknown kind {kind!r}", hint=hint)
    api = data.get("apiVersion")
    if api is None:
        raise InvalidResource(f"{doc.where()}: missing 'apiVersion'", hint=f"add apiVersion: {API_VERSION}")
    if api != API_VERSION:
        raise InvalidResource(f"{doc.where(('apiVersion',))}: unknown apiVersion {api!r}",
                              hint=f"use apiVersion: {API_VERSION}")
    if "metadata" not in data:
        raise InvalidResource(f"{doc.where()}: missing 'metadata'", hint="add metadata: {name: ...}")
    errors: list[FieldError] = []
    try:
        meta = normalize(METADATA, data.get("metadata"), ("metadata",))
    except FieldError as e:
        errors += every(e)
    try:
        spec = canonical_spec(kind, data.get("spec") or {})
    except FieldError as e:
        errors += every(e)
    if errors:
        raise _fail(doc, FieldErrors(errors)) from None
    name = meta["name"]
    v = Validated(kind, name, prune({k: meta.get(k) for k in ("name", "labels", "annotations")}), spec, doc)
    if kind == "Server":
        _check_server(v)
    else:
        _check_project(v)
    return v


def _check_names(v: Validated) -> None:
    """`names.maxLength` against the clients' budget: Claude Code and Codex refuse a tool name
    longer than 64 characters once `mcp__<server>__` is prefixed."""
    names = v.spec.get("names") or {}
    style, length = names.get("style", "portable"), names.get("maxLength")
    if not isinstance(length, int) or length <= PORTABLE_MAX_LENGTH:
        return
    where = v.doc.where(("spec", "names", "maxLength"))
    budget = (f"Claude Code names each tool {CLIENT_PREFIX}<name> and refuses more than {CLIENT_TOOL_NAME_LIMIT} "
              f"characters (so does Codex), which leaves {PORTABLE_MAX_LENGTH} for the name")
    if style != "spec":     # portable and bare names are the client-safe ones: they must fit
        raise InvalidResource(
            f"{where}: spec.names.maxLength: {length} is too long for {style} names: {budget}",
            hint=f"set spec.names.maxLength to at most {PORTABLE_MAX_LENGTH} (the default is {DEFAULT_NAME_MAX_LENGTH})")
    v.warnings.append(
        f"{where}: spec.names.maxLength is {length}: presented names longer than {PORTABLE_MAX_LENGTH} "
        f"characters are allowed by the spec style (up to 128, SEP-986), but Claude and Codex reject them "
        f"anyway: {budget}")


def _check_limits(v: Validated) -> None:
    """A budget needs a rate: its own, or its profile's (`resources.call_limits`)."""
    from mcpctl.resources.call_limits import limits_problem

    problem = limits_problem(v.spec.get("profiles") or {})
    if problem is not None:
        path, message, hint = problem
        raise InvalidResource(f"{v.doc.where(path)}: {message}", hint=hint)


def _check_project(v: Validated) -> None:
    """What no single field can say: the presentation settings must agree with each other."""
    _check_names(v)
    _check_overrides(v)
    _check_limits(v)
    s, doc = v.spec, v.doc
    fav = s.get("favouriteIndex") or {}
    presentation, enabled = s.get("presentation"), fav.get("enabled")
    pinned: list[str] = fav.get("tools") or []
    if presentation == "flat" and enabled is True:
        raise InvalidResource(
            f"{doc.where(('spec', 'presentation'))}: spec.presentation is 'flat' but "
            "spec.favouriteIndex.enabled is true",
            hint="remove spec.presentation (favouriteIndex.enabled: true gives the favourite-index "
                 "presentation), or set spec.favouriteIndex.enabled: false")
    if presentation in ("favourite-index", "deferred") and enabled is False:
        raise InvalidResource(
            f"{doc.where(('spec', 'favouriteIndex', 'enabled'))}: spec.favouriteIndex.enabled is false but "
            f"spec.presentation is {presentation!r}, which presents favourites",
            hint="remove spec.favouriteIndex.enabled, or set spec.presentation: flat")
    seen: dict[str, int] = {}
    for i, tool in enumerate(pinned):
        if tool in seen:
            raise InvalidResource(f"{doc.where(('spec', 'favouriteIndex', 'tools', i))}: "
                                  f"spec.favouriteIndex.tools[{i}]: {tool!r} is pinned twice "
                                  f"(first at spec.favouriteIndex.tools[{seen[tool]}])", hint="keep one of them")
        seen[tool] = i
    limit = fav.get("maxFavourites")
    if isinstance(limit, int) and len(pinned) > limit:
        raise InvalidResource(
            f"{doc.where(('spec', 'favouriteIndex', 'tools'))}: spec.favouriteIndex.tools pins {len(pinned)} "
            f"tools, more than spec.favouriteIndex.maxFavourites ({limit})",
            hint=f"unpin {len(pinned) - limit}, or raise spec.favouriteIndex.maxFavourites to {len(pinned)}")
    mode = presents(s).mode
    _check_instruction(v, mode)
    search = s.get("search") or {}
    if mode == "deferred":
        if search.get("enabled") is False:
            raise InvalidResource(
                f"{doc.where(('spec', 'search', 'enabled'))}: spec.search.enabled is false but "
                "spec.presentation is 'deferred', which reaches every tool outside the favourites through "
                "search_tools", hint="set spec.search.enabled: true, or use presentation: favourite-index")
        if len(pinned) > DEFERRED_FAVOURITES_WARN:
            v.warnings.append(
                f"{doc.where(('spec', 'favouriteIndex', 'tools'))}: the deferred presentation lists only the "
                f"favourites and {len(pinned)} are pinned; 3-5 are recommended (above "
                f"{DEFERRED_FAVOURITES_WARN} the list is no longer short)")
        elif not pinned:
            v.warnings.append(f"{doc.where(('spec', 'presentation'))}: the deferred presentation with no "
                              "favourites lists only search_tools and call_tool")
    elif mode == "flat" and pinned:
        v.warnings.append(
            f"{doc.where(('spec', 'favouriteIndex', 'tools'))}: {len(pinned)} favourite(s) pinned but the "
            "favourite index is off (flat presentation), so they are not presented; set "
            "spec.favouriteIndex.enabled: true to present them")
    servers = set(s.get("servers") or [])
    for i, tool in enumerate(pinned):
        server = tool.split("/", 1)[0]
        if server not in servers:
            v.warnings.append(f"{doc.where(('spec', 'favouriteIndex', 'tools', i))}: favourite {tool!r} names "
                              f"server {server!r}, which is not one of the project's servers; it is not presented")


def _check_overrides(v: Validated) -> None:
    """`tools.overrides` on their own (against the tools themselves: `apply.check_overrides`): a
    hidden parameter has a value, two tools of one server are not given one name, and an override
    of a server outside the project is said to have no effect."""
    overrides = (v.spec.get("tools") or {}).get("overrides") or {}
    problems: list[InvalidResource] = []
    named: dict[tuple[str, str], str] = {}
    servers = set(v.spec.get("servers") or [])
    for cid, o in overrides.items():
        base = ("spec", "tools", "overrides", cid)
        for path, message, hint in check_shape(cid, o):
            problems.append(InvalidResource(f"{v.doc.where((*base, *path))}: {dotted((*base, *path))}: {message}",
                                            hint=hint))
        server = cid.split("/", 1)[0]
        name = o.get("name")
        if isinstance(name, str):
            first = named.setdefault((server, name), cid)
            if first != cid:
                problems.append(InvalidResource(f"{v.doc.where((*base, 'name'))}: {cid} and {first} are both "
                                                f"presented as {name!r}", hint="give each its own name"))
        if server not in servers:
            v.warnings.append(f"{v.doc.where(base)}: override of {cid} names server {server!r}, which is not one "
                              "of the project's servers; it has no effect")
    if problems:
        raise combined(problems)


def _check_instruction(v: Validated, mode: str) -> None:
    """`favouriteIndex.instruction` is accepted under any presentation (switching one back and
    forth keeps the setting), but only favourite-index writes the instruction it turns off."""
    fav = v.spec.get("favouriteIndex") or {}
    if fav.get("instruction") is None or mode == "favourite-index":
        return
    v.warnings.append(
        f"{v.doc.where(('spec', 'favouriteIndex', 'instruction'))}: spec.favouriteIndex.instruction is set "
        f"but the presentation is {mode!r}: only favourite-index writes the \"PREFER favourite__<tool>\" "
        "instruction it turns on or off, so it has no effect here; remove it, or set "
        "spec.presentation: favourite-index")


def _check_server(v: Validated) -> None:
    s, doc = v.spec, v.doc
    transport = s.get("transport", "stdio")
    if transport == "stdio":
        if not s.get("command"):
            raise InvalidResource(f"{doc.where(('spec',))}: server {v.name!r} uses transport stdio but has no "
                                  "spec.command", hint="set spec.command (and spec.args), or use transport: http with spec.url")
        for key in ("url", "headers", "auth"):
            if s.get(key):
                raise InvalidResource(f"{doc.where(('spec', key))}: spec.{key} is for transport: http or sse, "
                                      f"but server {v.name!r} uses stdio", hint=f"remove spec.{key} or set transport: http")
    else:
        if not s.get("url"):       # http and sse alike
            raise InvalidResource(f"{doc.where(('spec',))}: server {v.name!r} uses transport {transport} but has "
                                  "no spec.url", hint="set spec.url: http://127.0.0.1:PORT/"
                                  + ("sse" if transport == "sse" else "mcp"))
        for key in ("command", "args", "env", "cwd"):
            if s.get(key):
                raise InvalidResource(f"{doc.where(('spec', key))}: spec.{key} is for transport: stdio, "
                                      f"but server {v.name!r} uses {transport}",
                                      hint=f"remove spec.{key} or set transport: stdio")
    _check_auth(v)
    for section in ("env", "headers"):
        for key, value in (s.get(section) or {}).items():
            if looks_like_secret(key, str(value)):
                v.warnings.append(
                    f"{doc.where(('spec', section, key))}: spec.{section}.{key} looks like a literal secret; "
                    f"it is stored in plain text. Prefer a reference: ${{env:{key if section == 'env' else 'NAME'}}} "
                    "or ${file:~/.secrets/NAME}")


def _check_auth(v: Validated) -> None:
    auth, doc = v.spec.get("auth"), v.doc
    if not auth:
        return
    if auth.get("clientSecret") and not auth.get("clientId"):
        raise InvalidResource(f"{doc.where(('spec', 'auth', 'clientSecret'))}: spec.auth.clientSecret is given "
                              "without spec.auth.clientId", hint="set spec.auth.clientId (the client the secret "
                              "belongs to), or remove clientSecret")
    if auth.get("clientId") and auth.get("clientMetadataUrl"):
        raise InvalidResource(f"{doc.where(('spec', 'auth', 'clientMetadataUrl'))}: spec.auth.clientId and "
                              "spec.auth.clientMetadataUrl are two ways to name the client; give one",
                              hint="keep clientId for a pre-registered client, clientMetadataUrl for a "
                              "client ID metadata document")
    if any(k.lower() == "authorization" for k in (v.spec.get("headers") or {})):
        raise InvalidResource(f"{doc.where(('spec', 'headers'))}: server {v.name!r} signs in with "
                              "spec.auth but also sends a static Authorization header",
                              hint="remove spec.headers.Authorization, or remove spec.auth")


def resource_from(v: Validated, live: dict[str, Any] | None) -> dict[str, Any]:
    """The object to store: user-owned parts from `v`, mcpctl-owned metadata from `live`."""
    import datetime
    import uuid

    meta: dict[str, Any] = dict(v.metadata)
    if live is None:
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["resourceVersion"] = "1"
        meta["generation"] = 1
    else:
        lm = live.get("metadata", {})
        meta["uid"] = lm.get("uid")
        meta["creationTimestamp"] = lm.get("creationTimestamp")
        spec_changed = canonical_or_raw(live) != v.spec
        meta["resourceVersion"] = str(int(lm.get("resourceVersion") or 0) + 1)
        meta["generation"] = int(lm.get("generation") or 0) + (1 if spec_changed else 0)
    return {"apiVersion": API_VERSION, "kind": v.kind, "metadata": meta, "spec": v.spec}


def canonical_or_raw(live: dict[str, Any]) -> dict[str, Any]:
    """The live spec in canonical form (stored specs are canonical; be lenient with hand edits)."""
    try:
        return canonical_spec(live["kind"], live.get("spec") or {})
    except FieldError:
        return live.get("spec") or {}


def user_view(res: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(user-owned metadata, canonical spec) of a stored resource, for comparisons."""
    meta = res.get("metadata", {})
    return prune({k: meta.get(k) for k in ("name", "labels", "annotations")}), canonical_or_raw(res)
