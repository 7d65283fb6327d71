"""The command line: parse arguments, call the library, render. Nothing else.

Each command group lives in its own module here and is added to the group below. Errors from the library
(``TopsAdvisorError``) are printed once, on one line on stderr, with a non-zero exit; ``--debug`` shows
the traceback.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import TopsAdvisorError
from .analyze import analyze
from .count import count
from .hardware import hardware
from .llm import llm
from .probe import probe
from .recommend import recommend
from .validate import validate

EXIT_USER_ERROR = 2


class _Main(click.Group):
    """Turns TopsAdvisorError into one clear line and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TopsAdvisorError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            ctx.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tops-advisor")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Which accelerator to buy or rent for your model, and what it will really deliver there."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


for _command in (hardware, count, analyze, recommend, probe, llm, validate):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (testable without a subprocess)."""
    try:
        cli.main(args=argv, prog_name="tops-advisor", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
