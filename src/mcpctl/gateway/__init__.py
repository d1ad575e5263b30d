"""The gateway: one MCP server in front of a project's upstream MCP servers.

`upstream` owns the connections (one supervised, long-lived client per upstream), `catalogue`
merges what they offer, `view` is the presentation pipeline (curation, credential view, gate,
presentation, `names`, built-ins) that decides what each session sees and where each call goes,
`sessions` knows who is calling, `front` is the MCP server clients talk to, `builtins` and
`search` hold mcpctl's own tools, and `run` wires them together for `mcpctl serve`. Only the
modules that talk MCP (`front`, `sessions`, `upstream`, `stdio`, `run`) import `mcp`; `view`,
`names`, `catalogue` and `builtins` do not, so the CLI builds the very same view from the cache.
"""
