"""An example MCP server: arithmetic, statistics, unit conversion and a slow tool with progress.

    python -m mcpctl.examples.calc

`statistics` returns structured content described by an output schema; `long_computation`
reports progress after every step (when the caller asks for progress) and can be cancelled.
"""

from __future__ import annotations

import math
import statistics as stats
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server import Server, ServerRequestContext
from pydantic import BaseModel, Field

from mcpctl.examples._base import Args, ToolBox, ToolFailure, arg_parser, make_server, parse_args, serve_stdio

# Factors to each dimension's base unit (metre, kilogram, second, byte, litre).
_LINEAR_UNITS: dict[str, dict[str, float]] = {
    "length": {"mm": 1e-3, "cm": 1e-2, "m": 1.0, "km": 1e3, "in": 0.0254, "ft": 0.3048, "yd": 0.9144,
               "mi": 1609.344},
    "mass": {"mg": 1e-6, "g": 1e-3, "kg": 1.0, "t": 1e3, "oz": 0.028349523125, "lb": 0.45359237},
    "time": {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0, "week": 604800.0},
    "data": {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1024.0, "MiB": 1024.0**2,
             "GiB": 1024.0**3, "TiB": 1024.0**4},
    "volume": {"ml": 1e-3, "l": 1.0, "m3": 1e3, "gal": 3.785411784, "qt": 0.946352946, "cup": 0.2365882365},
}
_TEMPERATURE = ("C", "F", "K")
_ALL_UNITS = sorted({u for units in _LINEAR_UNITS.values() for u in units} | set(_TEMPERATURE))


def _to_kelvin(value: float, unit: str) -> float:
    return {"C": value + 273.15, "F": (value - 32) * 5 / 9 + 273.15, "K": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"C": value - 273.15, "F": (value - 273.15) * 9 / 5 + 32, "K": value}[unit]


def convert(value: float, from_unit: str, to_unit: str) -> tuple[float, str]:
    """Convert `value`; returns (result, dimension). Raises ToolFailure for unknown or mixed units."""
    if from_unit in _TEMPERATURE or to_unit in _TEMPERATURE:
        if from_unit not in _TEMPERATURE or to_unit not in _TEMPERATURE:
            raise ToolFailure(f"cannot convert {from_unit} to {to_unit}: only C, F and K are temperatures")
        kelvin = _to_kelvin(value, from_unit)
        if kelvin < 0:
            raise ToolFailure(f"{value} {from_unit} is below absolute zero")
        return _from_kelvin(kelvin, to_unit), "temperature"
    for dimension, units in _LINEAR_UNITS.items():
        if from_unit in units and to_unit in units:
            return value * units[from_unit] / units[to_unit], dimension
    for name in (from_unit, to_unit):
        if name not in _ALL_UNITS:
            raise ToolFailure(f"unknown unit {name!r}; known units: {', '.join(_ALL_UNITS)}")
    raise ToolFailure(f"cannot convert {from_unit} to {to_unit}: they measure different things")


def _fmt(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


class TwoNumbers(Args):
    a: float = Field(description="The first number.")
    b: float = Field(description="The second number.")


class StatsArgs(Args):
    values: list[float] = Field(min_length=1, max_length=100_000,
                                description="The numbers to describe (at least one).")


class StatsResult(BaseModel):
    count: int = Field(description="How many values.")
    sum: float
    mean: float
    median: float
    min: float
    max: float
    stdev: float = Field(description="Sample standard deviation (0 for a single value).")
    variance: float = Field(description="Sample variance (0 for a single value).")


class ConvertArgs(Args):
    value: float = Field(description="The quantity to convert.")
    from_unit: str = Field(description=f"The unit of `value`, e.g. km, lb, F, GiB. One of: {', '.join(_ALL_UNITS)}.")
    to_unit: str = Field(description="The unit to convert to (same dimension as from_unit).")


class LongArgs(Args):
    steps: int = Field(default=5, ge=1, le=100, description="How many steps to run; progress is reported after each.")
    step_ms: int = Field(default=100, ge=0, le=5000, description="Milliseconds each step takes.")


def build() -> Server[Any]:
    box = ToolBox()

    @box.tool("add", title="Add", args=TwoNumbers, read_only=True,
              description="Add two numbers and return their sum (a + b).")
    async def add(ctx: ServerRequestContext[Any], a: TwoNumbers) -> str:
        return _fmt(a.a + a.b)

    @box.tool("multiply", title="Multiply", args=TwoNumbers, read_only=True,
              description="Multiply two numbers and return their product (a × b).")
    async def multiply(ctx: ServerRequestContext[Any], a: TwoNumbers) -> str:
        return _fmt(a.a * a.b)

    @box.tool("statistics", title="Descriptive statistics", args=StatsArgs, output=StatsResult, read_only=True,
              description="Describe a list of numbers: count, sum, mean, median, min, max, sample standard "
              "deviation and variance, returned as structured data.")
    async def statistics(ctx: ServerRequestContext[Any], a: StatsArgs) -> dict[str, Any]:
        if not all(math.isfinite(v) for v in a.values):
            raise ToolFailure("values must be finite numbers")
        n = len(a.values)
        result = StatsResult(
            count=n, sum=math.fsum(a.values), mean=stats.fmean(a.values), median=stats.median(a.values),
            min=min(a.values), max=max(a.values),
            stdev=stats.stdev(a.values) if n > 1 else 0.0,
            variance=stats.variance(a.values) if n > 1 else 0.0,
        )
        return result.model_dump()

    @box.tool("convert_units", title="Convert units", args=ConvertArgs, read_only=True,
              description="Convert a quantity between units of length, mass, time, volume, digital data "
              "or temperature (e.g. 5 km to mi, 100 F to C, 3 GiB to MB).")
    async def convert_units(ctx: ServerRequestContext[Any], a: ConvertArgs) -> str:
        result, _ = convert(a.value, a.from_unit, a.to_unit)
        return f"{_fmt(a.value)} {a.from_unit} = {result:.10g} {a.to_unit}"

    @box.tool("long_computation", title="Long computation", args=LongArgs, read_only=True,
              description="A deliberately slow computation (sum of the squares of 1..steps) that reports "
              "progress after every step; useful to test timeouts, progress and cancellation.")
    async def long_computation(ctx: ServerRequestContext[Any], a: LongArgs) -> str:
        total = 0
        for i in range(1, a.steps + 1):
            await anyio.sleep(a.step_ms / 1000)
            total += i * i
            await ctx.session.report_progress(i, total=a.steps, message=f"step {i} of {a.steps}")
        return f"sum of squares 1..{a.steps} = {total}"

    return make_server("mcpctl-calc", box,
                       instructions="Exact arithmetic, statistics and unit conversion. Prefer these tools "
                       "over mental arithmetic.")


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser("python -m mcpctl.examples.calc", "An MCP server for arithmetic and unit conversion (stdio).")
    ns = parse_args(parser, argv)
    serve_stdio(build(), ns.log_level)


if __name__ == "__main__":
    main()
