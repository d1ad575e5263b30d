"""The upstreams: one supervised, long-lived MCP client per upstream server.

`supervisor` (`Upstream`) owns a connection's life: first contact, listing, restart with
backoff, fault handling; `transport` is the one place a transport is chosen (stdio, streamable
HTTP, legacy SSE); `stdio` runs a stdio server as a process group (`procgroup`) with its stderr
logged; `client` holds the client options both protocol eras use; `starts` bounds how many start at once; `probe` tells a URL's
transport; `errors` are the configuration errors a server's spec can raise; `login` is the sign-in of
`mcpctl login` (the OAuth flow on a loopback redirect), here since it starts as a request to the
server. Below `gateway/`: nothing here imports it.
"""
