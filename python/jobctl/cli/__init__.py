"""The `jobctl` command line: a thin shell over the jobctl SQL functions, called through
`jobctl.client` (all but `migrate`, `validate` and `doctor`'s schema check, which read the migration
plan, and `token revoke`'s check of a full token with jobctl.authenticate).

Human output by default, `--json` for machines. Every error is one line on stderr, never a
traceback: `jobctl: <what went wrong> [SQLSTATE, field: <name>] hint: <HINT>` and exit status 1, or
for a command line that does not parse `jobctl: <what is wrong> (see 'jobctl <command> --help')` and
exit status 2 (docs/cli.md). `JobctlGroup.make_context` (the group's own options) and
`JobctlGroup.invoke` (everything below it) are the one place that turns errors into that line.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any

import click

from jobctl.cli import access, archiving, flows, jobs, ops, schedules, schema, shards, tenants, tokens
from jobctl.cli.common import CliError, one_line_usage, user_message
from jobctl.errors import first_line


class JobctlGroup(click.Group):
    """A click group whose subcommands' errors end as one line and exit 1 (see module docstring)."""

    # Commands that pull in heavy imports (uvicorn, FastAPI), loaded only when used or listed
    LAZY = {"serve": ("jobctl.api.serve", "serve_command"), "worker": ("jobctl.worker", "worker_command")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.commands, *self.LAZY]  # in the order added below: by family, not alphabetically

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            module, attr = self.LAZY[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attr)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as e:  # `jobctl --bogus`
            raise one_line_usage(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # an unknown command, option or value, a missing argument
            raise one_line_usage(e) from None
        except click.ClickException as e:  # raised by a command (serve, worker): the same one-line form
            if isinstance(e, CliError):
                raise
            raise CliError(e.format_message()) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # `jobctl list ... | head`: stop quietly
            with contextlib.suppress(OSError, ValueError):  # no flush error at exit either
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(1)
        except Exception as e:
            message = user_message(e)
            if message is None:
                if os.environ.get("JOBCTL_DEBUG"):
                    raise
                message = (
                    f"internal error: {type(e).__name__}: {first_line(str(e))} "
                    "(set JOBCTL_DEBUG=1 to see the traceback)"
                )
            raise CliError(message) from None


@click.group(
    cls=JobctlGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    # by family: schema; jobs; workflows and batches; tenants, schedules and API tokens; figures and health
    commands=[
        *(schema.migrate, schema.validate, shards.shards),
        *(jobs.submit, jobs.get, jobs.wait, jobs.list_, jobs.history, jobs.cancel, jobs.retry),
        *(flows.workflow, flows.batch, flows.event),
        *(tenants.tenant, tenants.key, tenants.queue, schedules.schedule, tokens.token, access.access),
        *(ops.stats, ops.doctor, ops.top, archiving.archive_group),
    ],
)
@click.option(
    "--dsn",
    metavar="DSN",
    help="PostgreSQL connection string. Default: $JOBCTL_DSN, else the local cluster's .pg/dsn.",
)
@click.version_option(package_name="jobctl")
def main(dsn: str | None) -> None:
    """jobctl: a multi-tenant job scheduler inside PostgreSQL.

    Every command calls the jobctl SQL functions. Add --json to a command for machine output.
    """
    if dsn:
        os.environ["JOBCTL_DSN"] = dsn  # seen by db.dsn() here and in any child process
