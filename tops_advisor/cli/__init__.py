"""The command line: parse arguments, call the library, render. Nothing else.

Each command group lives in its own module here and is added to the group below. Errors from the library
(``TopsAdvisorError``) are printed once, on one line on stderr, with a non-zero exit; ``--debug`` shows
the traceback, with the error that caused it (a model's own failure, its frames included).

Tables are laid out for ``$COLUMNS`` when set, else the terminal's width, else 120 columns when stdout is piped
(``render/console.py``); long work shows a transient progress line on stderr when stderr is a terminal.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import CountingError, ModelFileError, TopsAdvisorError, user_frames, with_location
from .analyze import analyze
from .count import count
from .hardware import hardware
from .llm import llm
from .probe import probe
from .recommend import recommend
from .train import train
from .validate import validate

EXIT_USER_ERROR = 2


class _Main(click.Group):
    """Turns TopsAdvisorError into one clear line and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TopsAdvisorError as exc:
            foreign = _foreign_cause(exc)
            if ctx.obj and ctx.obj.get("debug"):
                _show_causes(exc)
                _echo_user_frames(foreign)
                raise
            click.echo(f"error: {with_location(str(exc), foreign) if foreign is not None else exc}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            if foreign is not None:
                click.echo("hint: 'tops-advisor --debug ...' shows the model's whole error and its traceback",
                           err=True)
            ctx.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


def _chain(exc: BaseException):
    """``exc``, then its cause or context, and theirs."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _foreign_cause(exc: TopsAdvisorError) -> BaseException | None:
    """For an error about the user's model: the model's own error it quotes in one line (kept as the explicit
    cause, ``raise ... from exc``, of an error in the chain), or None."""
    if not isinstance(exc, (ModelFileError, CountingError)):
        return None
    return next((e.__cause__ for e in _chain(exc)
                 if e.__cause__ is not None and not isinstance(e.__cause__, TopsAdvisorError)), None)


def _echo_user_frames(foreign: BaseException | None) -> None:
    """For --debug: the frames of the model's own code that raised, above the whole traceback."""
    frames = user_frames(foreign) if foreign is not None else []
    if frames:
        click.echo("in your code (outermost first):", err=True)
        for frame in frames:
            click.echo(f"  {frame.filename}:{frame.lineno}, in {frame.name}: {frame.line or ''}".rstrip(": "),
                       err=True)
        click.echo(f"  {type(foreign).__name__}: {foreign}", err=True)


def _show_causes(exc: BaseException) -> None:
    """For --debug: let Python print every error of the chain, even those raised ``from None``."""
    for e in _chain(exc):
        e.__suppress_context__ = False


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tops-advisor")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Which accelerator to buy or rent for your model, and what it will really deliver there."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


for _command in (hardware, count, analyze, train, recommend, probe, llm, validate):
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
