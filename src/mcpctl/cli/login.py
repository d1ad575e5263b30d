"""`mcpctl login SERVER` and `mcpctl logout SERVER`: remote sign-in (mcpctl.auth)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors, complete_names, err


def _say(text: str) -> None:
    err.print(text, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("login", rich_help_panel="Servers")
    @cli_errors
    def login(
        server: Annotated[str, typer.Argument(help="A server with spec.auth (type: oauth).",
                                              autocompletion=complete_names("Server"))],
        port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                          help="Loopback port for the sign-in redirect (0: a free one).")] = 0,
        no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the sign-in URL.")] = False,
        timeout: Annotated[float, typer.Option("--timeout", min=1.0,
                                               help="Seconds to wait for the sign-in.")] = 300.0,
    ) -> None:
        """Sign in to a remote server (OAuth 2.1 + PKCE); a running gateway picks the tokens up."""
        import anyio

        from mcpctl.resources.kinds import ServerSpec
        from mcpctl.upstream.login import login as run_login

        from ._common import the_store

        spec = ServerSpec.from_resource(the_store().get("Server", server))
        result = anyio.run(lambda: run_login(spec, port=port, open_browser=not no_browser,
                                             timeout=timeout, say=_say))
        _say(f"server/{result.server}: {result.state}")

    @app.command("logout", rich_help_panel="Servers")
    @cli_errors
    def logout(
        server: Annotated[str, typer.Argument(autocompletion=complete_names("Server"))],
    ) -> None:
        """Forget a server's tokens and client registration."""
        from mcpctl.auth.storage import forget

        from ._common import the_store

        the_store().get("Server", server)
        if forget(server):
            _say(f"server/{server}: signed out (tokens and registration removed)")
        else:
            _say(f"server/{server}: was not signed in")
