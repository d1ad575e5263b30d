"""One gateway process for several stdio sessions of a project (`mcpctl serve --project P --shared`).

Each agent session starts its own `mcpctl serve` over stdio, and each such process privately holds
the SDK, pydantic, the catalogue and its upstreams. With `--shared` (or MCPCTL_SHARED=1) the
process the client starts is `relay`, stdlib only, which hands its stdin/stdout over a unix socket
(or splices them to it) to `daemon` (one per store, project, profile and working directory: `relay.key`) serves every
connection as its own stdio session of one `Gateway`, with one set of upstreams. The relay starts
the daemon when none listens; the daemon exits a grace period after its last connection closes.
"""
