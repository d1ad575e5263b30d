"""The apply engine: validate every document, then create or update under one lock.

All documents are validated — each on its own, then together (duplicates, projects naming
servers) — before anything is written, so one bad document changes nothing. Prints nothing:
callers render the returned `Change`s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpctl.errors import AlreadyExists, Conflict, InvalidResource, NotFound
from mcpctl.resources.kinds import KIND_ORDER
from mcpctl.resources.overrides import Problem, check_against
from mcpctl.resources.schema import dotted
from mcpctl.resources.store import ResourceStore
from mcpctl.resources.validate import Validated, combined, resource_from, user_view, validate_document
from mcpctl.resources.yamlio import Document


@dataclass
class Change:
    kind: str
    name: str
    action: str                       # created | configured | unchanged
    resource: dict[str, Any]          # what is (or would be) stored
    live: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


# A server's tools as last listed (wire dicts), or None when never listed: what `tools.overrides`
# are checked against (the CLI passes the catalogue cache's `read_server_tools`).
KnownTools = Callable[[str], "list[dict[str, Any]] | None"]


def validate_all(docs: Sequence[Document], store: ResourceStore, *, allow_missing: bool = False,
                 new_tokens: bool = False, known_tools: KnownTools | None = None
                 ) -> tuple[list[Validated], list[str]]:
    """Validate each document and the set as a whole. Returns (objects, warnings). With
    `known_tools`, every new or changed `tools.overrides` entry is checked against its tool."""
    objs, failed = [], []
    for d in docs:               # every document's problems, not only the first document's
        try:
            objs.append(validate_document(d))
        except InvalidResource as e:
            failed.append(e)
    if failed:
        raise combined(failed) from None
    warnings = [w for o in objs for w in o.warnings]
    seen: dict[tuple[str, str], Validated] = {}
    for o in objs:
        prev = seen.get((o.kind, o.name))
        if prev is not None:
            raise InvalidResource(f"{o.doc.where()}: {o.ref} is declared twice (first at {prev.doc.where()})",
                                  hint="keep one of the two documents")
        seen[(o.kind, o.name)] = o
    declared = {o.name for o in objs if o.kind == "Server"}
    registered = set(store.names("Server"))
    for o in objs:
        if o.kind != "Project":
            continue
        live = store.find("Project", o.name)
        already = set(((live or {}).get("spec") or {}).get("servers") or [])
        for i, s in enumerate(o.spec.get("servers", [])):
            if s in declared or s in registered:
                continue
            if s in already:       # e.g. after `delete server --force`: what is stored round-trips
                warnings.append(f"{o.doc.where(('spec', 'servers', i))}: project {o.name!r} names server {s!r}, "
                                "which is not registered (it is down until registered)")
                continue
            msg = f"{o.doc.where(('spec', 'servers', i))}: project {o.name!r} names server {s!r}, which is not registered"
            if allow_missing:
                warnings.append(msg + " (kept because of --allow-missing; it will be down until registered)")
            else:
                from mcpctl.errors import did_you_mean

                close = did_you_mean(s, declared | registered)
                raise InvalidResource(msg, hint=(close + " " if close else "") +
                                      "register it first (mcpctl create server …), or pass --allow-missing")
    _check_tokens(objs, store, new_tokens)
    if known_tools is not None:
        for o in objs:
            if o.kind == "Project":
                warnings += check_overrides(o, store.find("Project", o.name), known_tools)
    return objs, warnings


def check_overrides(o: Validated, live: dict[str, Any] | None, known_tools: KnownTools) -> list[str]:
    """A project's `tools.overrides` against the tools as their servers last listed them (a server
    never listed is not checked). A new or changed override that does not fit its tool is an
    error; one stored before and unchanged is a warning, so what is stored still round-trips after
    its server changed a tool. Returns the warnings."""
    overrides: dict[str, Any] = (o.spec.get("tools") or {}).get("overrides") or {}
    if not overrides:
        return []
    stored = ((user_view(live)[1].get("tools") or {}).get("overrides") or {}) if live is not None else {}
    listings: dict[str, list[dict[str, Any]] | None] = {}
    errors: list[InvalidResource] = []
    warnings: list[str] = []
    for cid, override in overrides.items():
        server = cid.partition("/")[0]
        if server not in listings:
            listings[server] = known_tools(server)
        listed = listings[server]
        if listed is None:
            continue
        base = ("spec", "tools", "overrides", cid)
        for path, message, hint in _problems(o.name, cid, override, listed, overrides):
            where = f"{o.doc.where((*base, *path))}: {dotted((*base, *path))}"
            if stored.get(cid) == override:
                warnings.append(f"{where}: {message} (stored before; this override no longer fits the tool)")
            else:
                errors.append(InvalidResource(f"{where}: {message}", hint=hint))
    if errors:
        raise combined(errors)
    return warnings


def _problems(project: str, cid: str, override: dict[str, Any], listed: list[dict[str, Any]],
              overrides: dict[str, Any]) -> list[Problem]:
    server, _, name = cid.partition("/")
    wire = next((w for w in listed if w.get("name") == name), None)
    if wire is None:
        from mcpctl.errors import did_you_mean

        names = [str(w.get("name")) for w in listed]
        return [((), f"server {server!r} lists no tool {name!r}",
                 did_you_mean(name, names) or f"its tools: mcpctl tools list --project {project}")]
    siblings: dict[str, str] = {}
    for w in listed:
        other = f"{server}/{w.get('name')}"
        if other == cid:
            continue
        label = (overrides.get(other) or {}).get("name") or w.get("name")
        siblings.setdefault(str(label), other)
    return check_against(cid, override, wire, siblings)


def _check_tokens(objs: Sequence[Validated], store: ResourceStore, new_tokens: bool) -> None:
    """A token names a project and a profile of it, and only `create token` makes one (its secret
    is generated then and shown once)."""
    from mcpctl.resources.kinds import ProjectSpec

    projects = {o.name: o for o in objs if o.kind == "Project"}
    for o in objs:
        if o.kind != "Token":
            continue
        if not new_tokens and store.find("Token", o.name) is None:
            raise InvalidResource(f"{o.doc.where()}: token/{o.name} does not exist, and apply cannot create a token",
                                  hint=f"mcpctl create token {o.name} --project {o.spec.get('project', 'P')} "
                                       "(the secret is generated and shown once)")
        project_name = o.spec["project"]
        declared = projects.get(project_name)
        res = {"metadata": {"name": project_name}, "spec": declared.spec} if declared is not None else \
            store.find("Project", project_name)
        if res is None:
            raise InvalidResource(f"{o.doc.where(('spec', 'project'))}: token/{o.name} names project "
                                  f"{project_name!r}, which does not exist", hint="mcpctl get projects")
        profile = o.spec.get("profile")
        spec = ProjectSpec.from_resource(res)
        if profile is not None and spec.profile(profile) is None:
            raise InvalidResource(f"{o.doc.where(('spec', 'profile'))}: project {project_name!r} has no profile "
                                  f"{profile!r}", hint=f"profiles: {', '.join(spec.profile_names())}")


def check_version(o: Validated, live: dict[str, Any] | None) -> None:
    """kubectl's rule: a manifest carrying `metadata.resourceVersion` is applied only onto that
    version; if the stored object changed (or went) since it was read, nothing is written."""
    meta = o.doc.data.get("metadata") if isinstance(o.doc.data, dict) else None
    want = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if want is None:
        return
    have = (live or {}).get("metadata", {}).get("resourceVersion") if live is not None else None
    if have is not None and str(have) == str(want):
        return
    now = "it has been deleted" if live is None else f"it is now at resourceVersion {have}"
    raise Conflict(f"{o.doc.where()}: {o.ref} was changed by someone else since it was read (resourceVersion "
                   f"{want}; {now}); nothing was written",
                   hint=f"read it again (mcpctl get {o.kind.lower()} {o.name} -o yaml), redo your change and apply "
                        "it, or drop metadata.resourceVersion to overwrite")


def plan(objs: Sequence[Validated], store: ResourceStore) -> list[Change]:
    changes: list[Change] = []
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    for o in sorted(objs, key=lambda o: order[o.kind]):
        live = store.find(o.kind, o.name)
        check_version(o, live)
        if live is None:
            action = "created"
        elif user_view(live) == (o.metadata, o.spec):
            action = "unchanged"
        else:
            action = "configured"
        res = live if action == "unchanged" and live is not None else resource_from(o, live)
        changes.append(Change(o.kind, o.name, action, res, live, o.warnings))
    return changes


def apply_documents(docs: Sequence[Document], store: ResourceStore, *, dry_run: bool = False,
                    allow_missing: bool = False, known_tools: KnownTools | None = None
                    ) -> tuple[list[Change], list[str]]:
    """Create or update every object; all or nothing at validation. Returns (changes, warnings)."""
    with store.locked():
        objs, warnings = validate_all(docs, store, allow_missing=allow_missing, known_tools=known_tools)
        changes = plan(objs, store)
        if not dry_run:
            for c in changes:
                if c.action != "unchanged":
                    store.put(c.resource)
    return changes, warnings


def create_object(doc: Document, store: ResourceStore, *, force: bool = False, allow_missing: bool = False,
                  known_tools: KnownTools | None = None) -> tuple[Change, list[str]]:
    """`mcpctl create`: like apply, but an existing object is an error unless `force` replaces it."""
    with store.locked():
        objs, warnings = validate_all([doc], store, allow_missing=allow_missing, new_tokens=True,
                                      known_tools=known_tools)
        (o,) = objs
        live = store.find(o.kind, o.name)
        if live is not None and not force:
            raise AlreadyExists(f"{o.ref} already exists",
                                hint="use --force to replace it, or change it with mcpctl apply / mcpctl edit")
        (change,) = plan(objs, store)
        if change.action == "unchanged":
            return change, warnings
        store.put(change.resource)
        if live is not None:
            change.action = "replaced"
    return change, warnings


def create_token(store: ResourceStore, name: str, project: str, *, profile: str | None = None,
                 expires: str | None = None, description: str | None = None, force: bool = False
                 ) -> tuple[Change, str]:
    """`mcpctl create token`: a Token for `project`'s HTTP gateway (selecting `profile`, until
    `expires`: 30d, 12h, a date) and its fresh secret, of which only the hash is stored; the object
    and its hash go together or not at all. Returns the change and the secret (shown once). Errors
    name the flags (--profile, --project), not the spec's fields."""
    from mcpctl.errors import MCPCtlError
    from mcpctl.resources import tokens
    from mcpctl.resources.kinds import API_VERSION

    spec: dict[str, Any] = {"project": project}
    if profile is not None:
        spec["profile"] = profile
    if expires is not None:
        spec["expires"] = tokens.parse_expires(expires)
    if description:
        spec["description"] = description
    doc = Document("mcpctl create token", 1, {"apiVersion": API_VERSION, "kind": "Token",
                                             "metadata": {"name": name}, "spec": spec})
    secret = tokens.new_secret()
    with store.locked():
        try:
            change, _ = create_object(doc, store, force=force)
        except InvalidResource as e:
            raise InvalidResource(e.message.replace("mcpctl create token, document 1: ", "")
                                  .replace("spec.profile", "--profile").replace("spec.project", "--project"),
                                  hint=e.hint) from None
        try:
            tokens.write_hash(name, secret, store)
        except OSError as e:
            store.delete("Token", name)
            raise MCPCtlError(f"cannot store the token's hash: {e}") from None
    return change, secret


def projects_using(store: ResourceStore, server: str) -> list[str]:
    return [p["metadata"]["name"] for p in store.list("Project") if server in (p.get("spec") or {}).get("servers", [])]


def delete_object(store: ResourceStore, kind: str, name: str, *, force: bool = False) -> list[str]:
    """Delete one object. Returns warnings. A server still used by a project needs `force`."""
    warnings: list[str] = []
    with store.locked():
        if store.find(kind, name) is None:
            store.get(kind, name)   # raises NotFound with a did-you-mean hint
            raise NotFound(f"{kind.lower()} {name!r} not found")
        if kind == "Server":
            users = projects_using(store, name)
            if users and not force:
                from mcpctl.errors import Conflict

                raise Conflict(f"server {name!r} is used by project(s): {', '.join(users)}",
                               hint="remove it from those projects first, or pass --force (they will show it as missing)")
            if users:
                warnings.append(f"projects {', '.join(users)} still name server {name!r}; it will be down until re-registered")
        store.delete(kind, name)
    return warnings


def delete_objects(store: ResourceStore, targets: Sequence[tuple[str, str]], *, force: bool = False,
                   ignore_not_found: bool = False) -> tuple[list[tuple[str, str]], list[str]]:
    """`mcpctl delete`: delete each (kind, name) in one transaction (nothing is reported before it
    commits); all or nothing on missing names unless `ignore_not_found`, and on servers still used
    by projects not deleted with them unless `force`. A token's secret hash goes with it (a running
    gateway refuses it at the next request). Returns what was deleted and the warnings."""
    deleted: list[tuple[str, str]] = []
    warnings: list[str] = []
    with store.locked():
        if not ignore_not_found:
            for k_name, n in targets:
                store.get(k_name, n)
        if not force:
            going = {n for k_name, n in targets if k_name == "Project"}
            for k_name, n in targets:
                users = [p for p in projects_using(store, n) if p not in going] if k_name == "Server" else []
                if users:
                    raise Conflict(f"server {n!r} is used by project(s): {', '.join(users)}",
                                   hint="remove it from those projects first, or pass --force")
        for k_name, n in targets:
            if store.find(k_name, n) is None:
                continue
            warnings += delete_object(store, k_name, n, force=force)
            if k_name == "Token":
                from mcpctl.resources import tokens

                tokens.delete_hash(n, store)
            deleted.append((k_name, n))
    return deleted, warnings
