"""`mcpctl edit KIND NAME`: open the object in $EDITOR and apply it on save."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from mcpctl.errors import InvalidResource, MCPCtlError
from mcpctl.presentation.resources import live_view
from mcpctl.resources.apply import apply_documents
from mcpctl.resources.yamlio import parse_text, to_yaml

from ._common import cli_errors, err, the_store, warn, write_stdout
from ._resources import complete_kind, resolve_kind
from .get import _complete_name

HEADER = ("# Edit the object below and save to apply it; close without saving (or empty the file) to cancel.\n"
          "# status and mcpctl-owned metadata (uid, timestamps, generation) are ignored; if the object changes\n"
          "# before you save (resourceVersion), nothing is written and your edit is kept to redo.\n")


def register(app: typer.Typer) -> None:
    @app.command("edit", rich_help_panel="Resources")
    @cli_errors
    def edit(
        kind: Annotated[str, typer.Argument(autocompletion=complete_kind)],
        name: Annotated[str, typer.Argument(autocompletion=_complete_name)],
    ) -> None:
        """Edit an object in $VISUAL / $EDITOR; it is validated and applied when you save."""
        k = resolve_kind(kind)
        store = the_store()
        original = HEADER + to_yaml(live_view(store, store.get(k.name, name)))
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.TemporaryDirectory(prefix="mcpctl-edit-") as tmp:
            path = Path(tmp) / f"{k.name.lower()}-{name}.yaml"
            path.write_text(original, encoding="utf-8")
            try:
                rc = subprocess.call([*shlex.split(editor), str(path)])
            except FileNotFoundError:
                raise MCPCtlError(f"editor {editor!r} not found", hint="set $EDITOR to an installed editor") from None
            if rc != 0:
                raise MCPCtlError(f"editor {editor!r} exited with code {rc}; nothing changed")
            text = path.read_text(encoding="utf-8")
            if text == original or not text.strip():
                err.print("Edit cancelled, no changes made.")
                return
            docs = parse_text(text, str(path))
            if len(docs) != 1 or not isinstance(docs[0].data, dict):
                raise InvalidResource(f"{path}: expected exactly one object")
            data = docs[0].data
            if data.get("kind") != k.name or (data.get("metadata") or {}).get("name") != name:
                raise InvalidResource(f"{path}: kind and metadata.name cannot be changed by edit",
                                      hint="create the new object with mcpctl apply and delete the old one")
            try:
                from ._common import the_cache

                changes, warnings = apply_documents(docs, store, known_tools=the_cache().read_server_tools)
            except MCPCtlError as e:
                fd, kept = tempfile.mkstemp(prefix=f"mcpctl-edit-{k.name.lower()}-{name}-", suffix=".yaml")
                keep = Path(kept)                # private (0600), never someone else's fixed path
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                e.hint = (e.hint + "\n" if e.hint else "") + f"your edit is saved in {keep}; fix it and run mcpctl apply -f {keep}"
                raise
        for w in warnings:
            warn(w)
        write_stdout("".join(f"{c.ref} {'edited' if c.action == 'configured' else c.action}\n" for c in changes))
