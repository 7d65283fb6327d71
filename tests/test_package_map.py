"""The package map in docs/architecture.md names exactly the modules under tops_advisor/."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "tops_advisor"
ARCHITECTURE = REPO / "docs" / "architecture.md"
# a row of the package map: its first cell holds one backticked path relative to tops_advisor/
ROW = re.compile(r"^\| `([\w/]+(?:\.py|/))` \|", re.M)


def _package_map() -> list[str]:
    text = ARCHITECTURE.read_text()
    section = text[text.index("## Package map"):text.index("## Rules that keep it so")]
    return ROW.findall(section)


def _tree() -> set[str]:
    """Every module and package under tops_advisor/, as the table writes them ('counting/handles/')."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.name != "__init__.py":
            names.add(rel.as_posix())
        if rel.parent != Path("."):
            names.add(rel.parent.as_posix() + "/")
    return names


def test_the_package_map_parses_into_rows():
    rows = _package_map()
    assert len(rows) > 100                      # ~150 rows today: a broken pattern would find none
    assert len(rows) == len(set(rows)), sorted({r for r in rows if rows.count(r) > 1})


def test_every_module_in_the_package_map_exists():
    missing = [name for name in _package_map() if not (PACKAGE / name).exists()]
    assert missing == []


def test_every_module_in_the_tree_is_in_the_package_map():
    assert sorted(_tree() - set(_package_map())) == []
