"""Shared pieces of the blind example tests: the row types of their table, counting an example through the CLI
once per test run, and a real forward under torch's FlopCounterMode."""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass, field

import torch
from click.testing import CliRunner
from torch.utils.flop_counter import FlopCounterMode

from tests.paths import EXAMPLES
from tops_advisor.cli import cli

MATRIX_KINDS = ("conv", "matmul", "attention")

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Forward:
    """A real fp32 forward at batch 1 under FlopCounterMode (2 per multiply-add, like us), and what it must give.

    flops: FlopCounterMode's counts by ATen name; all of them (exact) or only the names listed (exact=False).
    ours: ATen names whose counts add up to our conv + matmul + attention operations per item.
    out: the output's shape, or a list of shapes for a tuple of outputs; None: not checked."""

    out: Shape | list[Shape] | None = None
    flops: dict[str, int] | None = None
    exact: bool = True
    ours: tuple[str, ...] = ()
    build_args: tuple = ()
    input_args: tuple = ()
    input_shape: Shape | None = None       # a random input of this shape instead of example_inputs(1, ...)
    built_in_eval: bool = True             # build_model() returns an eval-mode model; False: call .eval()
    slow: bool = False                     # the forward takes more than about 0.4 s on 2 CPU cores


@dataclass(frozen=True)
class Blind:
    """One blind example, examples/<name>.py, and what its fp32 count must show at the tests' batch.

    ops: operations per item of the kinds listed (a subset of conv, matmul, attention), exactly.
    total: (operations per item, relative tolerance) of the whole workload.
    names / kinds: how many operators of each ATen name / of each kind.
    groups: the sorted groups (gemm batch > 1) of the grouped and depthwise convolutions.
    gemms: for an ATen name, the sorted (m, n, k, batch) of its operators."""

    name: str
    params: int
    ops: dict[str, int] | None = None
    total: tuple[float, float] | None = None
    names: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    groups: list[int] | None = None
    gemms: dict[str, list[tuple[int, int, int, int]]] = field(default_factory=dict)
    forward: Forward | None = None


def load_example(name: str, prefix: str = "blind"):
    """Import examples/<name>.py as a fresh module."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def count_example(name: str, batch: int) -> dict:
    """`tops-advisor count FILE --strict --batch N --json`, once per test run; fails the test on a non-zero exit.
    The dict is shared between tests: read it, never change it."""
    result = CliRunner().invoke(cli, ["count", str(EXAMPLES / f"{name}.py"), "--strict", "--batch", str(batch),
                                      "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ops_by_kind(workload: dict, batch: int, kinds=MATRIX_KINDS) -> dict[str, float]:
    """Operations per item of each matrix kind."""
    return {kind: sum(op["flops"] for op in workload["ops"] if op["kind"] == kind) / batch for kind in kinds}


def check_strict_count(workload: dict, params: int, batch: int) -> None:
    """What every blind example's fp32 count must show: no unsupported operator, the requested batch, some work,
    and 4 bytes per parameter."""
    assert workload["unsupported_ops"] == {}
    assert workload["batch"] == batch and workload["dtype"] == "fp32"
    assert workload["flops"] > 0 and workload["bytes"] > 0
    assert workload["param_bytes"] == 4 * params


def torch_forward(name: str, forward: Forward):
    """(output, FlopCounterMode's counts by ATen name) of a seeded forward at batch 1; every output is finite."""
    mod = load_example(name)
    torch.manual_seed(0)
    model = mod.build_model(*forward.build_args)
    if forward.built_in_eval:
        assert not model.training
    else:
        model.eval()
    if forward.input_shape is not None:
        inputs = (torch.randn(*forward.input_shape),)
    else:
        inputs = mod.example_inputs(1, *forward.input_args)
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(*inputs)
    for t in out if isinstance(out, tuple) else (out,):
        assert torch.isfinite(t).all()
    return out, {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
