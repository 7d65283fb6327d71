"""A training step of a tiny module under the counting modes, for the backward and optimizer formulas' tests:
forward, loss and ``backward()`` (and an optimizer's ``step()`` when given) on meta tensors, with the records
split where each part began. A test harness only: the product's training runner lives in the package."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from tops_advisor.counting.dispatch import FunctionCounter, OperatorCounter
from tops_advisor.counting.state import CountingRun
from tops_advisor.workload import OpRecord


@dataclass
class Step:
    forward: list[OpRecord]
    backward: list[OpRecord]
    optimizer: list[OpRecord]
    unsupported: dict[str, int]
    run: CountingRun

    def named(self, name: str, part: str = "backward") -> list[OpRecord]:
        return [r for r in getattr(self, part) if r.name == name]


def on_meta(module: nn.Module) -> nn.Module:
    """A copy of ``module`` with its parameters and buffers on the meta device."""
    return copy.deepcopy(module).to("meta")


def count_step(module: nn.Module, *inputs: torch.Tensor, loss=None, optimizer=None) -> Step:
    """Count ``loss(module(*inputs)).backward()`` (``loss`` defaults to the sum of the output's squares: the
    gradient reaching the module is then a dense tensor, not the broadcast one a plain sum hands back), then
    ``optimizer(params).step()`` when ``optimizer`` (a factory of the parameters) is given. ``module`` and
    ``inputs`` are moved to the meta device (inputs keep their ``requires_grad``)."""
    module = on_meta(module).train()
    inputs = tuple(x.detach().to("meta").requires_grad_(x.requires_grad) for x in inputs)
    run = CountingRun("fp32", list(module.parameters()) + list(module.buffers()))
    params = [p for p in module.parameters() if p.requires_grad]
    opt = optimizer(params) if optimizer is not None else None
    with OperatorCounter(run), FunctionCounter(run):
        out = module(*inputs)
        value = (loss or (lambda o: (o * o).sum()))(out)
        forward = len(run.recorder.records)
        value.backward()
        backward = len(run.recorder.records)
        if opt is not None:
            opt.step()
    records = [counted.record for counted in run.recorder.records]
    return Step(records[:forward], records[forward:backward], records[backward:],
                dict(run.recorder.unsupported), run)
