"""The pipeline's filters: curation, credential view, session gate (no `mcp`).

Each answers `check(tool)` for a tool and `check_server(server, what)` for a server's prompts,
resources and resource templates: forward the view drops what they refuse, in reverse a request
is refused with the reason (`Refusal`). A server's items go by the id `server/*`
(`server_items`), so a rule covering the whole server (`vault/*`, `*`) decides them and a rule
naming some of its tools (`vault/read_doc`) does not; the read-only profile admits them, since
listing, reading, getting, completing and subscribing change nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from mcpctl.catalogue.curation import is_enabled, matches_any
from mcpctl.resources.kinds import ProjectSpec

if TYPE_CHECKING:
    from mcpctl.catalogue.tool import CatalogueTool


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call may not go through, for the caller (`message`) and the log (outcome, class)."""

    outcome: str
    error_class: str
    message: str


def server_items(server: str) -> str:
    """The id a server's prompts, resources and templates go by in curation and profile rules."""
    return f"{server}/*"


class Filter(Protocol):
    def check(self, tool: CatalogueTool) -> Refusal | None: ...

    def check_server(self, server: str, what: str) -> Refusal | None:
        """The same stage for a server's prompts, resources and templates (`what` names the item)."""
        ...


@dataclass(frozen=True)
class Curation:
    """`tools.disabled` / `tools.enabled`."""

    project_name: str
    project: ProjectSpec

    def check(self, tool: CatalogueTool) -> Refusal | None:
        if is_enabled(tool.canonical_id, self.project):
            return None
        cid, p = tool.canonical_id, self.project_name
        return Refusal("denied", "ToolDisabled", f"tool {cid!r} is disabled in project {p!r} (tools.disabled); "
                       f"enable it with: mcpctl tools enable --project {p} {cid}")

    def check_server(self, server: str, what: str) -> Refusal | None:
        sid = server_items(server)
        if is_enabled(sid, self.project):
            return None
        p = self.project_name
        return Refusal("denied", "ServerDisabled", f"{what} is disabled in project {p!r}: tools.disabled covers "
                       f"server {server!r}; enable its prompts and resources with: mcpctl tools enable --project "
                       f"{p} '{sid}'")


@dataclass(frozen=True)
class Pinning:
    """`pinning: hold`: a tool whose definition changed (or that is new on a pinned server) since its
    server was pinned is withheld until approved (`catalogue.pins`); `held`: canonical id -> kind."""

    project_name: str
    held: Mapping[str, str]

    def check(self, tool: CatalogueTool) -> Refusal | None:
        kind = self.held.get(tool.canonical_id)
        if kind is None:
            return None
        cid, p = tool.canonical_id, self.project_name
        what = "is new on a pinned server" if kind == "new" else "changed since it was pinned"
        return Refusal("denied", "ToolHeld", f"tool {cid!r} is held in project {p!r}: its definition {what} "
                       f"(pinning: hold); read the change with: mcpctl tools changes --project {p}; approve it "
                       f"with: mcpctl tools approve --project {p} {cid}")

    def check_server(self, server: str, what: str) -> Refusal | None:
        return None


def read_only(tool: CatalogueTool) -> bool:
    """Annotated read-only and not destructive (annotations are the upstream's hints)."""
    ann = tool.wire.get("annotations")
    return isinstance(ann, Mapping) and ann.get("readOnlyHint") is True and ann.get("destructiveHint") is not True


@dataclass(frozen=True)
class CredentialView:
    """The credential's view of the project: the profile its token (or `serve --profile`)
    selects. No profile: the full view. A profile the project does not define sees nothing."""

    project_name: str
    project: ProjectSpec
    profile: str | None = None

    def _why_not(self, cid: str, readable: bool) -> str | None:
        """Why the profile keeps `cid` out (None: it does not); `readable`: a read by nature."""
        assert self.profile is not None
        p = self.project.profile(self.profile)
        if p is None:
            return "it is not defined in the project"
        if matches_any(cid, p.deny):
            return "denied or not allowed there"
        if p.read_only:
            return None if readable or matches_any(cid, p.allow) else \
                "read-only, and the tool is not annotated read-only"
        return None if not p.allow or matches_any(cid, p.allow) else "denied or not allowed there"

    def _refusal(self, what: str, why: str) -> Refusal:
        return Refusal("denied", "NotPermitted", f"{what} is not permitted for this credential "
                       f"(profile {self.profile!r} of project {self.project_name!r}: {why})")

    def check(self, tool: CatalogueTool) -> Refusal | None:
        if self.profile is None:
            return None
        why = self._why_not(tool.canonical_id, read_only(tool))
        return None if why is None else self._refusal(f"tool {tool.canonical_id!r}", why)

    def check_server(self, server: str, what: str) -> Refusal | None:
        if self.profile is None:
            return None
        why = self._why_not(server_items(server), True)
        return None if why is None else self._refusal(what, why)


GATED: Final = Refusal("denied", "SessionGated",
                       "this session has not begun: call begin_session with your task first; it returns the "
                       "project's instructions and tools, and then every tool can be called")


@dataclass(frozen=True)
class Gate:
    """While a session is gated it sees and may call only `begin_session`."""

    gated: bool

    def check(self, tool: CatalogueTool) -> Refusal | None:
        return GATED if self.gated else None

    def check_server(self, server: str, what: str) -> Refusal | None:
        return GATED if self.gated else None


__all__ = ["GATED", "CredentialView", "Curation", "Filter", "Gate", "Refusal", "read_only", "server_items"]
