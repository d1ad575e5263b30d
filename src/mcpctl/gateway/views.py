"""What the project shows each session: its spec, its catalogue, search, and who has begun.

The one place a caller becomes a view of the presentation pipeline (`presentation.view`): the
session gate (has this session begun?) and the credential's profile make the `SessionKey`, the
catalogue builds and caches the view for it. The router, the surfaces, the relay and the list
handlers all ask here; a project change (`reproject`) reaches them all at once.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mcpctl.presentation.budgets import Limits
from mcpctl.presentation.search import Evidence, Learning, ToolSearch
from mcpctl.presentation.view import GATED_SESSION, OPEN_SESSION, SessionKey, View

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.gateway.sessions import Caller, Sessions
    from mcpctl.presentation.catalogue import Catalogue
    from mcpctl.resources.kinds import ProjectSpec


def _search_for(project: ProjectSpec, name: str, evidence: Evidence | None, cache: CatalogueCache) -> ToolSearch | None:
    if not project.search.enabled:
        return None
    if evidence is None or not project.search.learns:
        return ToolSearch(project.search.ranker, cache)
    return ToolSearch(project.search.ranker, cache, Learning(name, project.search.learn, evidence))


class Views:
    """The project spec, its catalogue and search, and the views of sessions in them.
    `evidence`: how search reads what the log teaches (`log.search_evidence`; None: nothing);
    `cache`: the catalogue cache search reads the servers' about texts from."""

    def __init__(self, project: ProjectSpec, catalogue: Catalogue, sessions: Sessions, *,
                 cache: CatalogueCache, evidence: Evidence | None = None) -> None:
        self.project = project
        self.catalogue = catalogue
        self.sessions = sessions
        self.evidence = evidence
        self.cache = cache
        self.limits = Limits(project)      # each identity's calls-per-minute budget (its profile's)
        self.search = _search_for(project, catalogue.project_name, evidence, cache)

    def reproject(self, spec: ProjectSpec) -> None:
        """The project changed while serving (its servers are fixed for the gateway's life)."""
        if spec.search != self.project.search:
            self.close()
            self.search = _search_for(spec, self.catalogue.project_name, self.evidence, self.cache)
        self.project = spec
        self.limits.reproject(spec)
        self.catalogue.set_project(spec)

    def close(self) -> None:
        """Stop search's background work (the gateway is stopping, or search was replaced)."""
        if self.search is not None:
            self.search.close()

    def gated(self, session_id: str) -> bool:
        return self.project.gate.enabled and not self.sessions.begun(session_id)

    def key(self, caller: Caller) -> SessionKey:
        gated = self.gated(caller.session_id)
        if caller.profile is not None:
            return SessionKey(gated, caller.profile)
        return GATED_SESSION if gated else OPEN_SESSION

    def view_for(self, caller: Caller) -> View:
        """The view of this caller's session and credential (cached per catalogue version and key)."""
        return self.catalogue.view(self.key(caller))

    def view_of(self, session_id: str, profile: str | None) -> View:
        """The view of a session known by its id and credential profile (outside its requests)."""
        return self.catalogue.view(SessionKey(self.gated(session_id), profile))

    def ungated(self, view: View) -> View:
        """What the same session sees once it has begun."""
        return self.catalogue.view(dataclasses.replace(view.session, gated=False))

    def may_use(self, session_id: str, profile: str | None, server: str) -> bool:
        """Whether anything passes between this session (of this credential profile) and `server`."""
        return self.view_of(session_id, profile).uses(server)

    def session_uses(self, session_id: str, server: str) -> bool:
        """`may_use` for a session known by its id alone (an unknown session: no)."""
        known, profile = self.sessions.profile_of(session_id)
        return known and self.may_use(session_id, profile, server)
