"""MCP clients' own configuration files: read them (`import`), point them at the gateway
(`connect`, `disconnect`) and check the whole install (`doctor`).

One module per client format (`claude_desktop`, `claude_code`, `cursor`, `vscode`, `codex`,
`mcp_json`) over two surgical text editors (`jsonc`, `tomledit`): a client's file is the user's,
so mcpctl changes the bytes of one entry and keeps every other key, comment and byte.
`registry` names the formats; `importer`, `connect` and `doctor` are the core of the three
verbs (no typer or rich here: the CLI renders what they return).
"""
