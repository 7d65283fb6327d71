"""Every ``benchmarks/...`` path cited in the package (code, comments, docstrings, shipped data), in docs/ and in
README.md names a file or folder that exists (a glob such as ``benchmarks/results/*records*`` matches at least
one), so a moved script or result cannot leave a citation pointing nowhere."""

from __future__ import annotations

import re

import pytest

from tests.paths import REPO

# a path starts at "benchmarks/" (alone or after "../" in a relative link, not inside a longer path such as
# /root/out/benchmarks/...) and ends on a name character, "*" or "/" (so a closing period or comma is not in it)
CITED = re.compile(r"(?:(?<=\.\./)|(?<![\w/.-]))benchmarks/[\w.*/-]*[\w*/]")
SOURCES = ("tops_advisor/**/*.py", "tops_advisor/**/*.json", "tops_advisor/**/*.toml", "docs/**/*.md",
           "README.md")


def cited_paths(text: str) -> list[str]:
    """The benchmarks/ paths a text cites, in order."""
    return CITED.findall(text)


# Generated reports quote the command a measurement was recorded with, and some were recorded while the scripts
# lived at the top of benchmarks/ (benchmarks/measure_models.py, now benchmarks/harness/measure_models.py).
RECORDED = re.compile(r"benchmarks/(\w+\.py)")


def _exists(cited: str) -> bool:
    if "*" in cited:
        return any(REPO.glob(cited.rstrip("/")))
    return (REPO / cited).exists()


def _recorded_script(where: str, cited: str) -> bool:
    """In a generated report, a top-level script path that names exactly one script now in a subfolder."""
    match = RECORDED.fullmatch(cited)
    return (where.startswith("docs/reports/") and match is not None
            and len(list(REPO.glob(f"benchmarks/**/{match.group(1)}"))) == 1)


def _citations(patterns: tuple[str, ...] = SOURCES) -> list[tuple[str, str]]:
    """(file, cited path) for every citation in the files the glob patterns name."""
    out = []
    for pattern in patterns:
        for path in sorted(REPO.glob(pattern)):
            for cited in cited_paths(path.read_text(encoding="utf-8")):
                out.append((str(path.relative_to(REPO)), cited))
    return out


def test_the_pattern_finds_paths_and_stops_at_punctuation():
    text = ("see benchmarks/results/h200_models.json, and `benchmarks/harness/measure_models.py`. "
            "Also [notes](../benchmarks/rounds/round-25/NOTES.md) and benchmarks/results/*records*; "
            "not /root/out/benchmarks/x.json nor my_benchmarks/y.py")
    assert cited_paths(text) == ["benchmarks/results/h200_models.json", "benchmarks/harness/measure_models.py",
                                 "benchmarks/rounds/round-25/NOTES.md", "benchmarks/results/*records*"]


def test_a_missing_path_is_reported():
    assert not _exists("benchmarks/no_such_script.py")
    assert not _exists("benchmarks/results/*no_such_glob*")
    assert _exists("benchmarks/prediction_snapshot.py")
    assert _recorded_script("docs/reports/x.md", "benchmarks/measure_models.py")
    assert not _recorded_script("docs/accuracy.md", "benchmarks/measure_models.py")
    assert not _recorded_script("docs/reports/x.md", "benchmarks/no_such_script.py")


def test_there_are_citations_to_check():
    # the package and the docs cite dozens of scripts and results; none found means the pattern broke
    assert len(_citations()) > 50


@pytest.mark.parametrize("source", SOURCES)
def test_every_cited_benchmarks_path_exists(source):
    missing = sorted({f"{where}: {cited}" for where, cited in _citations((source,))
                      if not _exists(cited) and not _recorded_script(where, cited)})
    assert not missing, "cited paths that do not exist:\n" + "\n".join(missing)
