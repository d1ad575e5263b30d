"""The gateway: one MCP server in front of a project's upstream MCP servers.

Above `presentation/` (what each session sees and where each call goes, no `mcp`) and
`upstream/` (one supervised client per upstream server). Here: `front` wires the parts,
`sessions` knows who is calling, `router` and `relay` carry calls and the upstreams' requests,
`stdio`, `early` and `http` are the transports clients use, and `run` starts it all for
`mcpctl serve`.
"""
