"""Which activations an operator reads that an earlier operator wrote (``counting/reuse.py``), counted from the
dataflow of a tiny model; expected bytes derived from its shapes."""

from __future__ import annotations

import torch
from torch import nn

from tops_advisor.counting import count_module
from tops_advisor.kinds import Lowering
from tops_advisor.workload import Reuse


class Chain(nn.Module):
    """relu(x) -> sigmoid -> add of the relu output: a reuse right after its producer and one two operators
    later."""

    def forward(self, x):
        r = torch.relu(x)
        s = torch.sigmoid(r)
        return s + r


class InPlace(nn.Module):
    """sigmoid(x) -> relu_ in place -> neg: relu_ writes the lines it reads."""

    def forward(self, x):
        return torch.neg(torch.relu_(torch.sigmoid(x)))


def test_reuse_records_bytes_traffic_between_and_the_producers_traffic():
    x = torch.randn(4, 256)                       # 1,024 fp32 elements: 4,096 bytes per tensor
    w = count_module(Chain(), x, "fp32")
    relu, sigmoid, add = (o for o in w.ops if o.name in ("aten.relu", "aten.sigmoid", "aten.add"))
    size = 4 * 256 * 4
    assert relu.reuse == ()                       # reads the model's input: no producer in the pass
    # sigmoid reads the relu output right after it; relu moved 4 KiB in and 4 KiB out
    assert sigmoid.reuse == (Reuse(bytes=size, between_bytes=0.0, producer_bytes=2 * size, consumer_bytes=2 * size),)
    # add reads the sigmoid output (its producer just before) and the relu output (sigmoid's 8 KiB between);
    # add itself reads two and writes one
    assert sorted(add.reuse, key=lambda r: r.between_bytes) == [
        Reuse(bytes=size, between_bytes=0.0, producer_bytes=2 * size, consumer_bytes=3 * size),
        Reuse(bytes=size, between_bytes=2 * size, producer_bytes=2 * size, consumer_bytes=3 * size)]


def test_an_in_place_write_adds_no_traffic():
    w = count_module(InPlace(), torch.randn(4, 256), "fp32")
    relu, neg = (o for o in w.ops if o.name in ("aten.relu_", "aten.neg"))
    size = 4 * 256 * 4
    # relu_ reads 4 KiB and writes them back: 4 KiB of distinct lines, for itself and as neg's producer
    assert relu.reuse == (Reuse(bytes=size, between_bytes=0.0, producer_bytes=2 * size, consumer_bytes=size),)
    assert neg.reuse == (Reuse(bytes=size, between_bytes=0.0, producer_bytes=size, consumer_bytes=2 * size),)


def test_reuse_is_left_out_where_the_lowering_is_not_eager():
    w = count_module(Chain(), torch.randn(4, 256), "fp32", lowering=Lowering.NONE)
    assert all(o.reuse == () for o in w.ops)
