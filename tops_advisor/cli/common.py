"""Options and helpers shared by the command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..catalog import Catalog, load_catalog

catalog_option = click.option(
    "--catalog", "catalog_dirs", multiple=True, type=click.Path(path_type=Path),
    help="Extra directory of device files (adds or overrides by id); repeatable. Also $TOPS_ADVISOR_CATALOG.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON only on stdout.")


def get_catalog(catalog_dirs: tuple[Path, ...]) -> Catalog:
    return load_catalog(catalog_dirs)


def echo_json(obj) -> None:
    """JSON on stdout, nothing else."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str))
    sys.stdout.write("\n")


def console():
    """A rich console for tables (stdout)."""
    import shutil

    from rich.console import Console

    # a real terminal's width; 140 columns when piped (rich would otherwise wrap tables at 80)
    return Console(soft_wrap=False, width=shutil.get_terminal_size((140, 24)).columns)


def err_console():
    from rich.console import Console

    return Console(stderr=True)
