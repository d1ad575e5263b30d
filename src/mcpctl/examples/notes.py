"""An example MCP server: a small notes store kept in one JSON file.

    python -m mcpctl.examples.notes [--dir DIR]

Notes live in `DIR/notes.json` (default: `$NOTES_DIR`, else mcpctl's state dir). Writes take a
file lock and replace the file atomically, so several server processes can share one store.
Tools create, list, read, search, update and delete notes; every note is also a resource
`notes://<id>`, and the `summarize_notes` prompt asks the model for a summary.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import mcp.types as t
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from pydantic import Field

from mcpctl import paths
from mcpctl.examples._base import Args, ToolBox, ToolFailure, arg_parser, make_server, parse_args, serve_stdio

URI_PREFIX = "notes://"
MAX_TITLE = 200
MAX_BODY = 100_000

Tag = Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[\w.-]+$")]
NoteId = Annotated[str, Field(min_length=1, max_length=20, description="The note's id, as returned by create_note or list_notes.")]


def default_dir() -> Path:
    env = os.environ.get("NOTES_DIR")
    if env:
        return Path(env).expanduser()
    return paths.state_dir() / "examples" / "notes"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class NoteStore:
    """Notes in `<dir>/notes.json`: {"nextId": int, "notes": {id: note}}."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.file = directory / "notes.json"
        self.lock_file = directory / ".notes.lock"

    def _load(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"nextId": 1, "notes": {}}
        except json.JSONDecodeError as e:
            raise ToolFailure(f"the notes file {self.file} is corrupt: {e}") from None
        return data

    def _save(self, data: dict[str, Any]) -> None:
        tmp = self.file.with_name(f".{self.file.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8", opener=paths.open_private) as fh:   # notes are private
            fh.write(json.dumps(data, indent=2, ensure_ascii=False))
        os.replace(tmp, self.file)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write under an exclusive lock; the data is saved when the block succeeds."""
        paths.private_dir(self.dir)
        with open(self.lock_file, "a+", opener=paths.open_private) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._load()
            yield data
            self._save(data)

    def all(self) -> list[dict[str, Any]]:
        notes = list(self._load()["notes"].values())
        return sorted(notes, key=lambda n: int(n["id"]))

    def get(self, note_id: str) -> dict[str, Any]:
        note: dict[str, Any] | None = self._load()["notes"].get(note_id)
        if note is None:
            raise ToolFailure(f"no note with id {note_id!r} (list_notes shows the ids)")
        return note

    def create(self, title: str, body: str, tags: Sequence[str]) -> dict[str, Any]:
        with self._locked() as data:
            note_id = str(data["nextId"])
            data["nextId"] += 1
            now = _now()
            note = {"id": note_id, "title": title, "body": body, "tags": sorted(set(tags)),
                    "created": now, "updated": now}
            data["notes"][note_id] = note
        return note

    def update(self, note_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        with self._locked() as data:
            note: dict[str, Any] | None = data["notes"].get(note_id)
            if note is None:
                raise ToolFailure(f"no note with id {note_id!r} (list_notes shows the ids)")
            note.update(changes)
            note["updated"] = _now()
        return note

    def delete(self, note_id: str) -> dict[str, Any]:
        with self._locked() as data:
            note: dict[str, Any] | None = data["notes"].pop(note_id, None)
            if note is None:
                raise ToolFailure(f"no note with id {note_id!r} (list_notes shows the ids)")
        return note


def _summary(note: dict[str, Any]) -> dict[str, Any]:
    return {"id": note["id"], "title": note["title"], "tags": note["tags"], "updated": note["updated"]}


def _markdown(note: dict[str, Any]) -> str:
    tags = " ".join(f"#{tag}" for tag in note["tags"])
    return f"# {note['title']}\n\n{note['body']}\n" + (f"\n{tags}\n" if tags else "")


_WORD_RE = re.compile(r"\w+")


def _score(note: dict[str, Any], terms: list[str]) -> int:
    title = note["title"].lower()
    body = note["body"].lower()
    tags = [tag.lower() for tag in note["tags"]]
    score = 0
    for term in terms:
        score += 3 * title.count(term) + body.count(term) + 2 * sum(term in tag for tag in tags)
    # every term must appear somewhere
    if any(term not in title and term not in body and not any(term in tag for tag in tags) for term in terms):
        return 0
    return score


async def _resources_changed(ctx: ServerRequestContext[Any]) -> None:
    """Every note is a resource: tell the client that the list changed (best effort)."""
    with contextlib.suppress(Exception):
        await ctx.session.send_resource_list_changed()


# -- tools ------------------------------------------------------------------------------------------


class CreateArgs(Args):
    title: str = Field(min_length=1, max_length=MAX_TITLE, description="A short title for the note.")
    body: str = Field(default="", max_length=MAX_BODY, description="The note's text (Markdown is fine).")
    tags: list[Tag] = Field(default_factory=list, max_length=20,
                            description="Optional tags (letters, digits, '-', '_', '.') to group notes.")


class ListArgs(Args):
    tag: Tag | None = Field(default=None, description="Only notes carrying this tag.")
    limit: int = Field(default=50, ge=1, le=500, description="At most this many notes, newest first.")


class ReadArgs(Args):
    id: NoteId


class SearchArgs(Args):
    query: str = Field(min_length=1, max_length=500,
                       description="Words to look for in titles, bodies and tags (all must match, case-insensitive).")
    limit: int = Field(default=10, ge=1, le=100, description="At most this many results, best match first.")


class UpdateArgs(Args):
    id: NoteId
    title: str | None = Field(default=None, min_length=1, max_length=MAX_TITLE, description="A new title.")
    body: str | None = Field(default=None, max_length=MAX_BODY, description="New text, replacing the old body.")
    tags: list[Tag] | None = Field(default=None, max_length=20, description="New tags, replacing the old ones.")


class DeleteArgs(Args):
    id: NoteId


def _tools(store: NoteStore) -> ToolBox:
    """The six note tools, over `store`."""
    box = ToolBox()

    @box.tool("create_note", title="Create note", args=CreateArgs, read_only=False, destructive=False,
              description="Take a note: create a new note with a title, a body and optional tags, and return it "
              "with its id. Use it to write down, save or remember information for later.")
    async def create_note(ctx: ServerRequestContext[Any], a: CreateArgs) -> dict[str, Any]:
        note = store.create(a.title, a.body, a.tags)
        await _resources_changed(ctx)
        return note

    @box.tool("list_notes", title="List notes", args=ListArgs, read_only=True,
              description="List saved notes (id, title, tags, last update), most recently updated first, "
              "optionally only those with a given tag.")
    async def list_notes(ctx: ServerRequestContext[Any], a: ListArgs) -> list[dict[str, Any]]:
        notes = [n for n in store.all() if a.tag is None or a.tag in n["tags"]]
        notes.sort(key=lambda n: (n["updated"], int(n["id"])), reverse=True)
        return [_summary(n) for n in notes[: a.limit]]

    @box.tool("read_note", title="Read note", args=ReadArgs, read_only=True,
              description="Read one note in full (title, body, tags, timestamps) by its id.")
    async def read_note(ctx: ServerRequestContext[Any], a: ReadArgs) -> dict[str, Any]:
        return store.get(a.id)

    @box.tool("search_notes", title="Search notes", args=SearchArgs, read_only=True,
              description="Full-text search over the notes' titles, bodies and tags; returns the matching notes "
              "with a short excerpt, best match first.")
    async def search_notes(ctx: ServerRequestContext[Any], a: SearchArgs) -> list[dict[str, Any]]:
        words = [w.lower() for w in _WORD_RE.findall(a.query)]
        # one-letter words ("a", "I") match nearly everything; ignore them unless nothing else is left
        terms = [w for w in words if len(w) > 1] or words
        if not terms:
            raise ToolFailure("the query has no words to search for")
        hits = [(s, n) for n in store.all() if (s := _score(n, terms)) > 0]
        hits.sort(key=lambda h: (-h[0], int(h[1]["id"])))
        return [{**_summary(n), "score": s, "excerpt": n["body"][:160]} for s, n in hits[: a.limit]]

    @box.tool("update_note", title="Update note", args=UpdateArgs, read_only=False,
              destructive=True, idempotent=True,  # replaces the old title/body/tags
              description="Change a note's title, body or tags; fields you leave out stay as they are. "
              "The new body replaces the old one.")
    async def update_note(ctx: ServerRequestContext[Any], a: UpdateArgs) -> dict[str, Any]:
        changes = a.model_dump(exclude={"id"}, exclude_none=True)
        if not changes:
            raise ToolFailure("nothing to change: give a title, a body or tags")
        if "tags" in changes:
            changes["tags"] = sorted(set(changes["tags"]))
        note = store.update(a.id, changes)
        await _resources_changed(ctx)
        with contextlib.suppress(Exception):      # to a client subscribed to this note
            await ctx.session.send_resource_updated(f"{URI_PREFIX}{a.id}")
        return note

    @box.tool("delete_note", title="Delete note", args=DeleteArgs, read_only=False,
              destructive=True, idempotent=True,
              description="Permanently delete a note by its id. This cannot be undone.")
    async def delete_note(ctx: ServerRequestContext[Any], a: DeleteArgs) -> str:
        note = store.delete(a.id)
        await _resources_changed(ctx)
        return f"Deleted note {note['id']} ({note['title']!r})."

    return box


# -- resources and prompt -----------------------------------------------------------------------------


def _resource_handlers(store: NoteStore) -> dict[str, Any]:
    """Each note as a resource (notes://<id>, Markdown), and the template that names them."""

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        return t.ListResourcesResult(resources=[
            t.Resource(name=n["title"], uri=f"{URI_PREFIX}{n['id']}", mime_type="text/markdown",
                       description=f"Note {n['id']}" + (f" (tags: {', '.join(n['tags'])})" if n["tags"] else ""))
            for n in store.all()
        ])

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: t.PaginatedRequestParams | None) -> t.ListResourceTemplatesResult:
        return t.ListResourceTemplatesResult(resource_templates=[
            t.ResourceTemplate(name="note", uri_template=URI_PREFIX + "{id}", mime_type="text/markdown",
                               description="One note, as Markdown."),
        ])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        note_id = uri.removeprefix(URI_PREFIX)
        if not uri.startswith(URI_PREFIX) or not note_id:
            raise MCPError(code=t.INVALID_PARAMS, message=f"not a note URI: {uri} (expected {URI_PREFIX}<id>)")
        try:
            note = store.get(note_id)
        except ToolFailure as e:
            raise MCPError(code=t.INVALID_PARAMS, message=f"resource not found: {uri}: {e}") from None
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type="text/markdown",
                                                                     text=_markdown(note))])

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource}


def _prompt_handlers(store: NoteStore) -> dict[str, Any]:
    """The summarize_notes prompt."""
    summarize = t.Prompt(
        name="summarize_notes",
        title="Summarize notes",
        description="Ask for a concise summary of the saved notes, optionally only those with one tag.",
        arguments=[
            t.PromptArgument(name="tag", description="Only notes with this tag.", required=False),
            t.PromptArgument(name="style", description="'bullets' (default) or 'paragraph'.", required=False),
        ],
    )

    async def list_prompts(ctx: ServerRequestContext[Any],
                           params: t.PaginatedRequestParams | None) -> t.ListPromptsResult:
        return t.ListPromptsResult(prompts=[summarize])

    async def get_prompt(ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> t.GetPromptResult:
        if params.name != summarize.name:
            raise MCPError(code=t.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        args = params.arguments or {}
        tag = args.get("tag") or None
        style = args.get("style") or "bullets"
        if style not in ("bullets", "paragraph"):
            raise MCPError(code=t.INVALID_PARAMS, message=f"style must be 'bullets' or 'paragraph', not {style!r}")
        notes = [n for n in store.all() if tag is None or tag in n["tags"]]
        listing = "\n\n---\n\n".join(_markdown(n) for n in notes) or "(there are no notes)"
        shape = "a short bulleted list" if style == "bullets" else "one short paragraph"
        scope = f"tagged '{tag}'" if tag else "I have saved"
        return t.GetPromptResult(
            description=f"Summary of {len(notes)} note(s)",
            messages=[t.PromptMessage(role="user", content=t.TextContent(
                type="text",
                text=f"Summarize the notes {scope} as {shape}. Group related notes and point out "
                f"open questions or to-dos.\n\n{listing}"))],
        )

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}


def build(store: NoteStore) -> Server[Any]:
    return make_server(
        "mcpctl-notes", _tools(store),
        instructions="A personal notes store. Use create_note to save information, search_notes or "
        "list_notes to find it again, read_note for the full text.",
        **_resource_handlers(store), **_prompt_handlers(store),
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser("python -m mcpctl.examples.notes", "An MCP server for a small notes store (stdio).")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where notes.json lives (default: $NOTES_DIR, else mcpctl's state dir)")
    ns = parse_args(parser, argv)
    directory: Path = (ns.dir or default_dir()).expanduser()
    serve_stdio(build(NoteStore(directory)), ns.log_level)


if __name__ == "__main__":
    main()
