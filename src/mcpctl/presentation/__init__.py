"""The presentation pipeline: what a project shows each session, and where each call goes (no `mcp`).

Between `catalogue/` (what exists) and `gateway/` (the protocol). `catalogue` holds a project's
listings (`CatalogueTool`s) and builds per session key a `view`: the filters (`filters`: curation,
credential view, gate, pinning), the presentation modes (`modes`: flat, favourite index,
deferred), the name table (`names`), mcpctl's built-ins (`builtins`), `search_tools` (`search`),
cursors (`paging`), results cut into sections (`sections`) and the surface audit (`surface`). The
gateway serves it; the CLI builds the very same view from the cache.
"""
