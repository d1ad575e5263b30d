"""The garbage collector and a process's lifetime: what start-up builds lives until the exit.

Importing the MCP SDK builds about 550 pydantic models (both protocol eras), each a cycle of
class, schema and validator that only the collector can free. Two costs follow, both measured
here (`python -c "import mcp"`, median CPU of 8 runs on 2 cores):

- At exit, the interpreter's last collections walk that whole heap and free it object by object,
  just before the operating system takes the memory back anyway: 0.29 s of the 1.12 s the
  process costs. `at_exit()` freezes the heap as the process ends (0.83 s, 0.74x), which is as
  cheap as `os._exit` and still runs every atexit handler, flushes the standard streams and
  closes files that are not in a cycle. Registered first, it runs last of the handlers, after
  `logging.shutdown()` and anything else a command registered.
- While a gateway serves, every full collection walks the same start-up heap again. `settle()`
  moves what start-up built out of the collector's sight, so a full collection walks only what
  the gateway allocated since (`gc.freeze`). What it freezes is the SDK, the store and the
  catalogue as first read: alive for the whole process anyway.

Every mcpctl process calls `at_exit()` first (`mcpctl.cli.main`, the example servers); the
gateway calls `settle()` once it is built, before it serves.
"""

from __future__ import annotations

import atexit
import gc

_registered = False


def at_exit() -> None:
    """Freeze the heap when the process exits, so the interpreter does not collect it first."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(gc.freeze)


def settle() -> None:
    """Start-up is over: what exists now lives as long as the process; later collections skip it."""
    gc.freeze()
