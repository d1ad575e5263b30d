"""The bake-off (`mcpctl bakeoff`): what a presentation does to a real model's choice of tool.

A model behind any OpenAI-compatible chat-completions endpoint is driven through the real
gateway (`mcpctl serve` over stdio, as a client would start it) once per presentation, each on
its own temporary copy of a project (or of a catalogue served by stub upstreams), and every
task × presentation × trial becomes one JSON line; the report is drawn from those lines.

- `data`: tasks (prompts and their correct tools) and tools.jsonl catalogues; the shipped set.
- `stub`: the stub upstream server a catalogue's tools are served by (records every call).
- `workspace`: the temporary MCPCTL_HOMEs, one per presentation, and their projects.
- `session`: one gateway session over the SDK's `Client`: its tools, instructions and calls.
- `llm`: the OpenAI-compatible client (httpx2; no `openai` dependency).
- `episode`: one task played to its end; `run`: every presentation × trial × task.
- `metrics`: per presentation × model, with confidence intervals; `report`: table, markdown, JSON.

Nothing here is imported by the CLI until the command runs (it imports `mcp`).
"""
