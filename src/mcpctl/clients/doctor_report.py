"""What `mcpctl doctor` reports: each `Check` (scope, check, status, message, hint) in a
`DoctorReport`, and the token and protocol wording its checks share (`doctor`, `doctor_listing`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final

NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEFAULT_TOOL_BUDGET: Final = 1_000        # tokens for one tool's definition
DEFAULT_BUDGET: Final = 10_000            # tokens for a project's whole tools/list
MODERN_ERA: Final = "2026-07-28"
MAX_FLAGS_SHOWN: Final = 5                # suspicious-description flags one doctor line names

@dataclass
class Check:
    scope: str            # install | server/NAME | project/NAME | client/NAME
    check: str            # command, references, connect, names, tokens, search, ...
    status: str           # ok | info | warn | fail
    message: str
    hint: str | None = None


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    def add(self, scope: str, check: str, status: str, message: str, hint: str | None = None) -> None:
        self.checks.append(Check(scope, check, status, message, hint))

    def replace(self, scope: str, check: str, status: str, message: str, hint: str | None = None) -> None:
        """Say it again where it was said (what a later check learned), or add it."""
        for i, c in enumerate(self.checks):
            if (c.scope, c.check) == (scope, check):
                self.checks[i] = Check(scope, check, status, message, hint)
                return
        self.add(scope, check, status, message, hint)

    @property
    def problems(self) -> int:
        return sum(c.status == "fail" for c in self.checks)

    @property
    def warnings(self) -> int:
        return sum(c.status == "warn" for c in self.checks)

    def scopes(self) -> list[str]:
        return list(dict.fromkeys(c.scope for c in self.checks))

    def to_json(self) -> dict[str, Any]:
        return {"problems": self.problems, "warnings": self.warnings,
                "checks": [asdict(c) for c in self.checks]}


def tokens(tool: Mapping[str, Any]) -> int:
    """≈ tokens of a presented tool's definition, counted as `surface` counts them (one estimator:
    `catalogue.tokens`, the parts a client puts in front of the model)."""
    from mcpctl.catalogue.tokens import definition_text, token_counter

    return token_counter().count(definition_text(tool))


def token_kind() -> str:
    """How `tokens` counts: cl100k where the `tokens` extra is installed, else chars/4."""
    from mcpctl.catalogue.tokens import token_counter

    return token_counter().kind


def era(version: str | None) -> str:
    if not version:
        return "unknown protocol"
    return f"protocol {version} ({'server/discover' if version >= MODERN_ERA else 'initialize handshake'} era)"
