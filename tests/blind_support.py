"""Shared helpers for the blind example tests: load an example module, count examples through the CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from click.testing import CliRunner

from tops_advisor.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str, prefix: str = "blind"):
    """Import examples/<name>.py as a fresh module."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def count_strict(names, batch: int) -> dict[str, dict]:
    """`tops-advisor count FILE --strict --batch N --json` for each example; fails the test on a non-zero exit."""
    out = {}
    for name in names:
        result = CliRunner().invoke(cli, ["count", str(EXAMPLES / f"{name}.py"), "--strict", "--batch",
                                          str(batch), "--json"])
        assert result.exit_code == 0, result.output
        out[name] = json.loads(result.stdout)
    return out


def ops_by_kind(workload: dict, batch: int, kinds=("conv", "matmul", "attention")) -> dict[str, float]:
    """Operations per item of each matrix kind."""
    return {kind: sum(op["flops"] for op in workload["ops"] if op["kind"] == kind) / batch for kind in kinds}


def check_strict_count(workload: dict, params: int, batch: int) -> None:
    """What every blind example's fp32 count must show: no unsupported operator, the requested batch, some work,
    and 4 bytes per parameter."""
    assert workload["unsupported_ops"] == {}
    assert workload["batch"] == batch and workload["dtype"] == "fp32"
    assert workload["flops"] > 0 and workload["bytes"] > 0
    assert workload["param_bytes"] == 4 * params
