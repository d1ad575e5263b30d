"""`mcpctl create token NAME --project P [--profile PROFILE] [--expires 30d]`: a bearer credential
for the project's HTTP gateway, selecting a profile (a narrower view). The secret is printed once,
on stdout, and only its hash is kept; `get tokens`, `describe token` and `delete token` (which
revokes it, at a running gateway's next request) work like any kind.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors, complete_projects, err, write_stdout


def _complete_profiles(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    from mcpctl.resources.kinds import ProjectSpec

    from ._common import the_store

    try:
        spec = ProjectSpec.from_resource(the_store().get("Project", str(ctx.params.get("project"))))
    except Exception:
        return []
    return [(n, "profile") for n in spec.profile_names() if n.startswith(incomplete)]


def add_command(create_app: typer.Typer) -> None:
    """`create token`, in the `create` group that `create.register` builds."""
    @create_app.command("token")
    @cli_errors
    def create_token(
        name: Annotated[str, typer.Argument(help="Token name: lowercase letters, digits, '-'.")],
        project: Annotated[str, typer.Option("--project", "-p", help="The project whose HTTP gateway it opens.",
                                             autocompletion=complete_projects)],
        profile: Annotated[str | None, typer.Option(
            "--profile", help="The view it selects (read-only, or a profile the project declares); none: the full view.",
            autocompletion=_complete_profiles)] = None,
        expires: Annotated[str | None, typer.Option(
            "--expires", help="When it stops working: 30d, 12h, 2w, 90m, or a date (2026-12-31).")] = None,
        description: Annotated[str | None, typer.Option("--description", help="What it is for.")] = None,
        force: Annotated[bool, typer.Option("--force", help="Replace an existing token (a new secret; the old "
                                            "one stops working).")] = False,
    ) -> None:
        """Create a bearer token for a project's HTTP gateway; the secret is printed once (stdout)."""
        from mcpctl.resources import apply

        from ._common import the_store

        change, secret = apply.create_token(the_store(), name, project, profile=profile, expires=expires,
                                            description=description, force=force)
        write_stdout(secret + "\n")
        view = f"profile {profile}" if profile else "the full view"
        until = f", expires {change.resource['spec']['expires']}" if expires is not None else ""
        err.print(f"token/{name} {change.action} for project {project} ({view}{until}). The secret above is shown "
                  "only now: send it as 'Authorization: Bearer <secret>'.", markup=False)
