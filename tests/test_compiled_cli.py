"""--mode compiled through the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tops_advisor.cli import cli

MODEL = "examples/small_cnn.py"


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def test_recommend_compiled():
    r = _run("recommend", MODEL, "--latency", "1ms", "--mode", "compiled", "-H", "h200", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["recommendations"][0]["mode"] == "compiled"

