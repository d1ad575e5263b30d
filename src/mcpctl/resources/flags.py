"""Resources from command-line flags, and back: what `mcpctl create server|project` builds.

`server_document` and `project_document` turn the flags of `create server` and `create project`
into the manifest `resources.apply.create_object` takes; `flag_message` says validation's
manifest paths as the flags the user typed; `project_command` is the inverse of
`project_document`: the `mcpctl create project` line that recreates a stored project (with other
favourites, for `favourites suggest`). tests/gateway/test_favourites_cli.py keeps the two in step.
Nothing here prints or reads the store.
"""

from __future__ import annotations

from typing import Any

from mcpctl.errors import InvalidResource
from mcpctl.resources.kinds import API_VERSION


def pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    """KEY=VALUE flags (`--env`, `--label`, ...) as a mapping."""
    out: dict[str, str] = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise InvalidResource(f"{flag} {v!r}: expected KEY=VALUE", hint=f"for example {flag} API_KEY=${{env:API_KEY}}")
        out[key] = val
    return out


def _headers(values: list[str] | None) -> dict[str, str]:
    """--header NAME=VALUE or 'NAME: VALUE' flags as a mapping."""
    out: dict[str, str] = {}
    for v in values or []:
        if "=" in v:
            key, _, val = v.partition("=")
        elif ":" in v:
            key, _, val = v.partition(":")
        else:
            raise InvalidResource(f"--header {v!r}: expected NAME=VALUE or 'NAME: VALUE'",
                                  hint="for example --header 'Authorization=Bearer ${env:TOKEN}'")
        out[key.strip()] = val.strip()
    return out


# Validation speaks in manifest paths; on the command line the user typed flags.
_FLAGS = (
    ("spec.favouriteIndex.maxFavourites", "--max-favourites"),
    ("spec.favouriteIndex.tools", "--favourite"),
    ("spec.tools.disabled", "--disable"),
    ("spec.tools.enabled", "--enable"),
    ("spec.presentation", "--presentation"),
    ("spec.favouriteIndex.enabled", "--favourite-index"),
    ("spec.gate.instructions", "--gate-instructions"),
    ("spec.gate.enabled", "--gate"),
    ("spec.names.maxLength", "--max-name-length"),
    ("spec.names.style", "--names"),
    ("spec.search.enabled", "--search"),
    ("spec.search.ranker", "--ranker"),
    ("spec.search.topK", "--top-k"),
    ("spec.search.recordQueries", "--record-queries"),
    ("spec.results.maxTokens", "--max-result-tokens"),
    ("spec.ask.enabled", "--ask"),
    ("spec.ask.topK", "--ask-top-k"),
    ("metadata.annotations", "--annotation"),
    ("spec.servers", "--server"),
    ("spec.timeouts.connect", "--connect-timeout"),
    ("spec.timeouts.call", "--call-timeout"),
    ("spec.url", "--url"),
    ("spec.env", "--env"),
    ("spec.headers", "--header"),
    ("spec.command", "the command"),
    ("metadata.labels", "--label"),
    ("metadata.name", "NAME"),
)


def flag_message(text: str, src: str) -> str:
    """`text` (a validation message about the document `src`) in terms of the flags that made it."""
    text = text.replace(f"{src}, document 1, ", "").replace(f"{src}, document 1: ", "")
    for path, flag in _FLAGS:
        for sep in ("[", ".", ":", " "):
            text = text.replace(f"{path}{sep}", f"{flag}{' ' if sep == '.' else sep}")
    return text


def server_document(name: str, *, command: list[str] | None, url: str | None, transport: str | None,
                    header: list[str] | None, env: list[str] | None, cwd: str | None, description: str | None,
                    connect_timeout: float | None, call_timeout: float | None,
                    label: list[str] | None) -> dict[str, Any]:
    """The Server manifest of `create server NAME -- CMD ARGS...` or `create server NAME --url URL`
    (a --url server's transport is "http" unless --transport gives it; the caller may ask the
    server); InvalidResource for flags that do not go together."""
    if url and command:
        raise InvalidResource("give either a command (after --) or --url, not both")
    if not url and not command:
        raise InvalidResource(f"server {name!r} needs a command or a URL",
                              hint=f"mcpctl create server {name} -- npx -y @modelcontextprotocol/server-memory, "
                              f"or mcpctl create server {name} --url http://127.0.0.1:8080/mcp")
    spec: dict[str, Any] = {}
    if transport is not None or url:
        spec.update(_remote_spec(url, transport, header, stdio_only=bool(env or cwd)))
    else:
        assert command
        spec.update(transport="stdio", command=command[0], args=command[1:], env=pairs(env, "--env"))
        if cwd:
            spec["cwd"] = cwd
        if header:
            raise InvalidResource("--header is for HTTP servers (--url), not a stdio command")
    timeouts = {k: v for k, v in (("connect", connect_timeout), ("call", call_timeout)) if v is not None}
    if timeouts:
        spec["timeouts"] = timeouts
    if description:
        spec["description"] = description
    meta: dict[str, Any] = {"name": name}
    if label:
        meta["labels"] = pairs(label, "--label")
    return {"apiVersion": API_VERSION, "kind": "Server", "metadata": meta, "spec": spec}


def _remote_spec(url: str | None, transport: str | None, header: list[str] | None, *,
                 stdio_only: bool) -> dict[str, Any]:
    """The spec of a --url server (its transport decided later unless --transport gives it)."""
    if transport is not None and (not url or transport not in ("http", "sse")):
        raise InvalidResource(f"--transport {transport!r}: give --transport http or --transport sse, with --url",
                              hint="a stdio server is a command after --")
    if stdio_only:
        raise InvalidResource("--env and --cwd are for stdio servers (a command after --), not --url")
    return {"transport": transport or "http", "url": url, "headers": _headers(header)}


def project_document(name: str, *, servers: list[str] | None = None, favourites: list[str] | None = None,
                     favourite_index: bool | None = None, max_favourites: int | None = None,
                     disable: list[str] | None = None, enable: list[str] | None = None,
                     presentation: str | None = None, settings: dict[str, dict[str, Any]] | None = None,
                     description: str | None = None, label: list[str] | None = None,
                     annotation: list[str] | None = None) -> dict[str, Any]:
    """The Project manifest of `create project NAME` and its flags. `settings`: the flags of each
    spec section (`gate`, `names`, `search`, `results`, `ask`) by their spec key, None where not
    given. Favourites turn the index on unless --presentation decides what is presented."""
    spec: dict[str, Any] = {"servers": list(servers or [])}
    tools = {k: v for k, v in (("disabled", disable), ("enabled", enable)) if v}
    if tools:
        spec["tools"] = tools
    fav: dict[str, Any] = {}
    if favourites:
        fav["tools"] = favourites
        if presentation is None:          # else --presentation decides what is presented
            fav["enabled"] = True
    if favourite_index is not None:
        fav["enabled"] = favourite_index
    if max_favourites is not None:
        fav["maxFavourites"] = max_favourites
    if fav:
        spec["favouriteIndex"] = fav
    if presentation:
        spec["presentation"] = presentation
    for key, values in (settings or {}).items():
        given = {k: v for k, v in values.items() if v is not None}
        if given:
            spec[key] = given
    if description:
        spec["description"] = description
    meta: dict[str, Any] = {"name": name}
    if label:
        meta["labels"] = pairs(label, "--label")
    if annotation:
        meta["annotations"] = pairs(annotation, "--annotation")
    return {"apiVersion": API_VERSION, "kind": "Project", "metadata": meta, "spec": spec}


def project_command(resource: dict[str, Any], *, favourites: list[str] | None = None,
                    max_favourites: int | None = None, force: bool = True) -> list[str]:
    """The `mcpctl create project` command line that recreates `resource` (a stored project),
    optionally with other favourites: running it changes nothing else. The inverse of
    `project_document`'s flags; a test keeps the two in step. (One spec has no flags: favourites
    pinned while the index is neither on nor off and no presentation is set; the line turns the
    index on.)"""
    meta, spec = resource.get("metadata") or {}, resource.get("spec") or {}
    argv = ["mcpctl", "create", "project", str(meta["name"])] + (["--force"] if force else [])
    for s in spec.get("servers") or []:
        argv += ["--server", s]
    tools = spec.get("tools") or {}
    for key, flag in (("disabled", "--disable"), ("enabled", "--enable")):
        for pattern in tools.get(key) or []:
            argv += [flag, pattern]
    argv += _favourite_flags(spec, favourites, max_favourites)
    argv += _setting_flags(spec)
    for key, flag in (("labels", "--label"), ("annotations", "--annotation")):
        for k, v in (meta.get(key) or {}).items():
            argv += [flag, f"{k}={v}"]
    return argv


def _favourite_flags(spec: dict[str, Any], favourites: list[str] | None, max_favourites: int | None) -> list[str]:
    """--favourite-index, --favourite, --max-favourites and --presentation: the spec's, or with
    `favourites` pinned instead (the index on; an explicit flat presentation dropped)."""
    from mcpctl.resources.kinds import DEFAULT_MAX_FAVOURITES

    fav = spec.get("favouriteIndex") or {}
    presentation = spec.get("presentation")
    if favourites is not None:
        enabled: bool | None = True
        pins, limit = favourites, max_favourites or fav.get("maxFavourites") or DEFAULT_MAX_FAVOURITES
        if presentation == "flat":
            presentation = None
    else:
        enabled, pins, limit = fav.get("enabled"), list(fav.get("tools") or []), fav.get("maxFavourites")
    argv: list[str] = []
    if enabled is not None:
        argv.append("--favourite-index" if enabled else "--no-favourite-index")
    for tool in pins:
        argv += ["--favourite", tool]
    if limit is not None and (limit != DEFAULT_MAX_FAVOURITES or favourites is not None):
        argv += ["--max-favourites", str(limit)]
    if presentation:
        argv += ["--presentation", presentation]
    return argv


def _setting_flags(spec: dict[str, Any]) -> list[str]:
    """The gate, names and search flags, and --description: each only where the spec differs from
    the schema's default."""
    from mcpctl.resources.kinds import PROJECT_SPEC
    from mcpctl.resources.schema import default_at

    def default(*path: str) -> Any:
        return default_at(PROJECT_SPEC, *path)

    gate, names, search = spec.get("gate") or {}, spec.get("names") or {}, spec.get("search") or {}
    argv: list[str] = []
    if gate.get("enabled"):
        argv.append("--gate")
    if gate.get("instructions"):
        argv += ["--gate-instructions", gate["instructions"]]
    if names.get("style", default("names", "style")) != default("names", "style"):
        argv += ["--names", names["style"]]
    if names.get("maxLength", default("names", "maxLength")) != default("names", "maxLength"):
        argv += ["--max-name-length", str(names["maxLength"])]
    if search.get("enabled") is False:
        argv.append("--no-search")
    if search.get("ranker", default("search", "ranker")) != default("search", "ranker"):
        argv += ["--ranker", search["ranker"]]
    if search.get("topK", default("search", "topK")) != default("search", "topK"):
        argv += ["--top-k", str(search["topK"])]
    if search.get("recordQueries"):
        argv.append("--record-queries")
    if spec.get("description"):
        argv += ["--description", spec["description"]]
    return argv
