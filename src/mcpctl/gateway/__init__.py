"""The gateway: one MCP server in front of a project's upstream MCP servers.

`upstream` owns the connections (one supervised, long-lived client per upstream), `catalogue`
merges and names what they offer, `front` is the MCP server clients talk to, `builtins` holds
mcpctl's own tools (`search_tools`), and `run` wires them together for `mcpctl serve`.
Only this package imports `mcp`.
"""
