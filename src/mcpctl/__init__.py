"""mcpctl: one curated, searchable MCP catalogue for coding agents."""

__version__ = "0.1.0"
