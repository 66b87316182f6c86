"""API tokens: `token create`, `token revoke`, `token list`, through jobctl.client. Only a token's hash
is stored.

`token revoke <token>` first checks the token with jobctl.authenticate (queries.AUTHENTICATE): that is
authentication, not a client call, as in the HTTP API."""

from __future__ import annotations

import click
import psycopg

from jobctl import contract, errors, output, queries
from jobctl.cli.common import JsonGroup, as_id, client, connect, show, show_table

CREATE_EPILOG = """\b
Examples:
  TOKEN=$(jobctl token create --tenant acme --label ci)
  jobctl token create --tenant acme --scope jobs:read --scope jobs:submit
  jobctl token create --admin --label ops

\b
The token goes to stdout, the reminder that it cannot be shown again to
stderr."""


@click.group(cls=JsonGroup)
def token() -> None:
    """Bearer tokens for the HTTP API."""


@token.command(epilog=CREATE_EPILOG)
@click.option("--tenant", "tenant_id", metavar="TENANT", help="The tenant the token speaks for.")
@click.option("--admin", is_flag=True, help="A token for every tenant instead.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help=f"What it may do (repeatable): {', '.join(contract.SCOPES)}. Default: all of them.",
)
@click.option("--label", metavar="TEXT", help="A note to tell tokens apart in `token list`.")
def create(
    tenant_id: str | None, admin: bool, scopes: tuple[str, ...], label: str | None, as_json: bool
) -> None:
    """Create an API token and print it (the only time it is shown)."""
    if admin == (tenant_id is not None):
        raise click.UsageError("give exactly one of --tenant TENANT or --admin")
    chosen = list(scopes) or list(contract.SCOPES)
    value = client().create_api_token(tenant_id, chosen, label)
    match = contract.TOKEN_RE.match(value)
    token_id = int(match[1]) if match else None
    whom = f"tenant {tenant_id}" if tenant_id is not None else "every tenant (admin)"
    doc = {"token": value, "token_id": token_id, "tenant_id": tenant_id, "scopes": chosen, "label": label}
    show(doc, as_json, value)
    click.echo(
        f"token {token_id} for {whom}, scopes {', '.join(chosen)}: store it now, it cannot be shown again",
        err=True,
    )


@token.command()
@click.argument("token_ref", metavar="ID_OR_TOKEN")
def revoke(token_ref: str, as_json: bool) -> None:
    """Revoke a token by id, or by the token itself (jct_<id>_<secret>).

    A full token must be valid: a mistyped secret revokes nothing.
    """
    ctx = click.get_current_context()
    with connect() as conn:
        if token_ref.isdigit():
            token_id = as_id(ctx, ctx.command.params[0], token_ref)
            assert token_id is not None
        else:
            match = contract.TOKEN_RE.match(token_ref)
            if match is None:
                raise errors.InvalidInput("expected a token id or a token jct_<id>_<secret>", field="token")
            token_id = int(match[1])
            # a full token must be valid: a mistyped secret must not revoke token <id>
            try:
                conn.execute(queries.AUTHENTICATE, {"token": token_ref, "scope": contract.SCOPES[0]})
            except psycopg.Error as e:
                if e.sqlstate != "JC021":  # JC021: valid, it just lacks that scope
                    raise
        revoked = client().revoke_api_token(token_id, conn=conn)
    if not revoked:
        raise errors.NotFound(f"no active token {token_id}")
    show({"token_id": token_id, "revoked": True}, as_json, f"token {token_id}: revoked")


COLUMNS: output.Columns = {
    "ID": "token_id",
    "TENANT": lambda t: t.tenant_id or "(admin)",
    "SCOPES": "scopes",
    "LABEL": "label",
    "CREATED": "created_at",
    "REVOKED": "revoked_at",
}


@token.command("list")
@click.option("--tenant", "tenant_id", metavar="TENANT", help="Only this tenant's tokens.")
def list_(tenant_id: str | None, as_json: bool) -> None:
    """List API tokens (ids, scopes, labels; never the tokens)."""
    show_table(client().list_api_tokens(tenant_id), as_json, COLUMNS)
