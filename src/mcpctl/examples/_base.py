"""Shared plumbing for the example servers: declared tools, validated arguments, stdio runner.

A tool is an async function taking the request context and a pydantic model of its arguments.
The model is the single source of the advertised `inputSchema` (with each parameter's
description) and of validation: bad arguments come back as an `isError` result the model can
read, never as a protocol error. A tool signals a user-facing failure with `ToolFailure`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp.types as t
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, ConfigDict, ValidationError

from mcpctl import heap

log = logging.getLogger("mcpctl.examples")

A = TypeVar("A", bound=BaseModel)
ToolResult = t.CallToolResult | str | dict[str, Any] | list[Any]
ToolFn = Callable[[ServerRequestContext[Any], Any], Awaitable[ToolResult]]


class Args(BaseModel):
    """Base for tool argument models: unknown arguments are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class ToolFailure(Exception):
    """A failure the calling model should read (returned as an `isError` result)."""


def _clean_schema(node: Any, *, in_properties: bool = False) -> Any:
    """Drop pydantic's generated `title` keywords (noise for rankers and token budgets)."""
    if isinstance(node, dict):
        return {
            k: _clean_schema(v, in_properties=(k == "properties" and not in_properties))
            for k, v in node.items()
            if in_properties or k != "title"
        }
    if isinstance(node, list):
        return [_clean_schema(v) for v in node]
    return node


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _clean_schema(model.model_json_schema())
    schema.setdefault("properties", {})
    return schema


@dataclass(frozen=True)
class _Entry:
    tool: t.Tool
    args: type[BaseModel]
    fn: ToolFn


def text_result(text: str, *, is_error: bool = False) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=is_error)


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)


class ToolBox:
    """The tools of one server, in declaration order."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def tool(
        self,
        name: str,
        *,
        title: str,
        description: str,
        args: type[A],
        read_only: bool,
        destructive: bool = False,
        idempotent: bool = False,
        open_world: bool = False,
        output: type[BaseModel] | None = None,
    ) -> Callable[[Callable[[ServerRequestContext[Any], A], Awaitable[ToolResult]]], ToolFn]:
        def register(fn: Callable[[ServerRequestContext[Any], A], Awaitable[ToolResult]]) -> ToolFn:
            tool = t.Tool(
                name=name,
                title=title,
                description=description,
                input_schema=schema_for(args),
                output_schema=schema_for(output) if output is not None else None,
                annotations=t.ToolAnnotations(
                    title=title,
                    read_only_hint=read_only,
                    destructive_hint=False if read_only else destructive,
                    idempotent_hint=True if read_only else idempotent,
                    open_world_hint=open_world,
                ),
            )
            self._entries[name] = _Entry(tool, args, fn)
            return fn

        return register

    @property
    def tools(self) -> list[t.Tool]:
        return [e.tool for e in self._entries.values()]

    async def list_tools(self, ctx: ServerRequestContext[Any],
                         params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        return t.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        entry = self._entries.get(params.name)
        if entry is None:
            raise MCPError(code=t.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            args = entry.args.model_validate(params.arguments or {})
        except ValidationError as e:
            return text_result(f"Invalid arguments for {params.name}:\n{_describe(e)}", is_error=True)
        try:
            out = await entry.fn(ctx, args)
        except ToolFailure as e:
            return text_result(str(e), is_error=True)
        except Exception as e:
            log.exception("tool %s failed", params.name)
            return text_result(f"{params.name} failed: {type(e).__name__}: {e}", is_error=True)
        if isinstance(out, t.CallToolResult):
            return out
        if isinstance(out, str):
            return text_result(out)
        if entry.tool.output_schema is not None and isinstance(out, dict):
            return t.CallToolResult(content=[t.TextContent(type="text", text=json_text(out))],
                                    structured_content=out)
        return text_result(json_text(out))


def _describe(e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        lines.append(f"- {where}: {err['msg']}")
    return "\n".join(lines)


def make_server(name: str, box: ToolBox, *, instructions: str, **handlers: Any) -> Server[Any]:
    from mcpctl import __version__

    return Server(name, version=__version__, instructions=instructions,
                  on_list_tools=box.list_tools, on_call_tool=box.call_tool, **handlers)


def arg_parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   help="stderr log level (default: WARNING)")
    return p


def serve_stdio(server: Server[Any], log_level: str = "WARNING") -> None:
    """Serve `server` on stdin/stdout until stdin closes. Logs go to stderr only."""
    heap.at_exit()          # also when run as `python -m mcpctl.examples.NAME`
    heap.settle()
    logging.basicConfig(stream=sys.stderr, level=log_level,
                        format=f"%(asctime)s {server.name} %(levelname)s %(message)s")

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    return parser.parse_args(list(argv) if argv is not None else None)
