"""Small but real MCP servers shipped with mcpctl, for the demo, the docs and the tests.

Each runs over stdio with `python -m mcpctl.examples.<name>`:

- `notes`: a notes store in a JSON file (`--dir` or `NOTES_DIR`), with tools, resources and a prompt.
- `calc`: arithmetic, statistics with structured output, unit conversion, a slow tool with progress.
- `textkit`: word counts, slugs, regex search, diffs, hashes, echo.

They are written with the low-level `mcp.server.Server` of the SDK (v2), log only to stderr and
never print to stdout, which carries the protocol.
"""
