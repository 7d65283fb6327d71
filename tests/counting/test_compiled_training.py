"""The inductor lowering of a training step (``counting/lowering/inductor_training.py``) and what a compiled
step saves for its backward (``counting/lowering/remat.py``), on tiny models and hand-built dataflows whose
answers are derived here."""

import pytest
import torch
from torch import nn

from tests.paths import FIXTURES
from tops_advisor.counting.lowering import CountedOp, Flow, Value, saved_bytes
from tops_advisor.counting.lowering.remat import _Graph
from tops_advisor.counting.training import count_training
from tops_advisor.errors import InputError
from tops_advisor.kinds import Lowering, OpKind, Phase
from tops_advisor.train import TrainSetup
from tops_advisor.train.predict import predict_training
from tops_advisor.workload import OpRecord


def _op(name, kind, reads, writes, phase=Phase.FORWARD):
    record = OpRecord(name=name, kind=kind, module="m", flops=0.0, bytes_read=0.0, bytes_written=0.0, phase=phase)
    return CountedOp(record, None, Flow(reads=tuple(reads), writes=tuple(writes)))


X = Value(1, 100, 200.0)        # the batch: a graph input, free to keep
MM = Value(2, 100, 200.0)       # a matrix product's fp16 output
UP = Value(3, 100, 400.0)       # its fp32 upcast (a fused cast)
ACT = Value(4, 100, 400.0)      # an activation of the upcast


def test_min_cut_saves_the_library_output_a_fused_chain_recomputes_from():
    # mm -> cast -> gelu; the backward's gelu gradient (pointwise) reads ACT: eager saves ACT (400 bytes), the
    # partitioner saves MM (200) and recomputes the cast and the gelu in the backward
    ops = [_op("aten.mm", OpKind.MATMUL, [X], [MM]), _op("aten._to_copy", OpKind.ELEMENTWISE, [MM], [UP]),
           _op("aten.gelu", OpKind.ELEMENTWISE, [UP], [ACT]),
           _op("aten.gelu_backward", OpKind.ELEMENTWISE, [Value(9, 100, 400.0), ACT], [Value(10, 100, 400.0)],
               Phase.BACKWARD)]
    assert saved_bytes(ops) == (400.0, 200.0)


def test_a_value_a_backward_library_kernel_reads_is_saved():
    # the same chain, but ACT feeds the backward's weight-gradient matrix product: materialized, so saved
    ops = [_op("aten.mm", OpKind.MATMUL, [X], [MM]), _op("aten._to_copy", OpKind.ELEMENTWISE, [MM], [UP]),
           _op("aten.gelu", OpKind.ELEMENTWISE, [UP], [ACT]),
           _op("aten.mm", OpKind.MATMUL, [Value(9, 100, 400.0), ACT], [Value(10, 100, 400.0)], Phase.BACKWARD)]
    assert saved_bytes(ops) == (400.0, 400.0)


def test_a_fused_value_of_graph_inputs_costs_nothing_and_dropout_is_kept():
    cast = _op("aten._to_copy", OpKind.ELEMENTWISE, [X], [UP])
    drop = _op("aten.native_dropout", OpKind.ELEMENTWISE, [X], [ACT])
    grad = _op("aten.mul", OpKind.ELEMENTWISE, [UP, ACT], [Value(10, 100, 400.0)], Phase.BACKWARD)
    # the cast is recomputed from the batch (free); dropout's mask is random: saved
    assert saved_bytes([cast, drop, grad]) == (800.0, 400.0)


def test_max_flow_on_a_small_network():
    g = _Graph()
    s, a, b, t = (g.node() for _ in range(4))
    g.edge(s, a, 3.0)
    g.edge(s, b, 2.0)
    g.edge(a, b, 1.0)
    g.edge(a, t, 2.0)
    g.edge(b, t, 3.0)
    assert g.cut(s, t) == {s}          # the source's edges (3 + 2 = 5) are a minimum cut


class BnNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3))).sum()


def _bn_model(tmp_path):
    path = tmp_path / "bn_net.py"
    path.write_text("import torch\nfrom tests.counting.test_compiled_training import BnNet\n"
                    "def build_model():\n    return BnNet()\n"
                    "def example_inputs(batch):\n    return (torch.randn(batch, 8, 16, 16),)\n")
    return path


def test_training_batch_norm_is_a_split_reduction_and_a_fused_normalize(tmp_path):
    setup = TrainSetup(precision="amp")
    eager = count_training(_bn_model(tmp_path), 4, setup)
    compiled = count_training(_bn_model(tmp_path), 4, setup, lowering=Lowering.INDUCTOR_CUDA)
    names = [(op.phase, op.name) for op in compiled.workload.ops]
    assert (Phase.FORWARD, "triton.split_reduction:batch_norm_stats") in names
    assert (Phase.BACKWARD, "triton.split_reduction:batch_norm_backward_sums") in names
    assert not any("native_batch_norm" == n.removeprefix("aten.") for _, n in names)
    stats = next(op for op in compiled.workload.ops if op.name.endswith("batch_norm_stats"))
    # 4 x 16 x 16 = 1024 elements per channel: one kernel (inductor splits over 8192); the fp16 output read once
    assert stats.kernels == 1 and stats.bytes_read == 4 * 16 * 16 * 16 * 2
    big = count_training(_bn_model(tmp_path), 40, setup, lowering=Lowering.INDUCTOR_CUDA)   # 10240 per channel
    assert next(op for op in big.workload.ops if op.name.endswith("batch_norm_stats")).kernels == 2
    # the normalize joins the ReLU (and the mean) in one generated kernel
    assert any(op.name.startswith("triton:") and "batch_norm_normalize" in op.name and "relu" in op.name
               for op in compiled.workload.ops)
    # the optimizer stays eager: the same kernels as the eager count's
    opt = [(op.name, op.bytes) for op in compiled.workload.ops if op.phase == Phase.OPTIMIZER]
    assert opt == [(op.name, op.bytes) for op in eager.workload.ops if op.phase == Phase.OPTIMIZER]
    assert compiled.workload.kernels < eager.workload.kernels


def test_compiled_mode_needs_the_compiled_count(tmp_path):
    from tops_advisor.catalog import load_catalog

    hw = load_catalog().get("h200-sxm")
    eager = count_training(_bn_model(tmp_path), 4, TrainSetup())
    compiled = count_training(_bn_model(tmp_path), 4, TrainSetup(), lowering=Lowering.INDUCTOR_CUDA)
    with pytest.raises(InputError, match="inductor-cuda"):
        predict_training(eager, hw, mode="compiled")
    with pytest.raises(InputError, match="pytorch-cuda"):
        predict_training(compiled, hw, mode="eager")
    pred = predict_training(compiled, hw, mode="compiled")
    # a tiny step is host-bound: its forward at least one graph call and its kernels' launches
    assert pred.mode == "compiled" and pred.forward_s >= pred.part(Phase.FORWARD).device_s > 0


def test_compiled_memory_scales_the_saved_activations():
    model = FIXTURES / "train" / "tiny_mlp.py"
    eager = count_training(model, 8, TrainSetup(precision="amp"))
    compiled = count_training(model, 8, TrainSetup(precision="amp"), lowering=Lowering.INDUCTOR_CUDA)
    assert compiled.memory.activations <= eager.memory.activations
    assert compiled.memory.weights == eager.memory.weights
    assert any("torch.compile saves" in n.text for n in compiled.workload.notes)


def test_channels_last_step_runs_nhwc_convolutions_and_spread_batch_norm(tmp_path):
    nchw = count_training(_bn_model(tmp_path), 8, TrainSetup(precision="amp"))
    nhwc = count_training(_bn_model(tmp_path), 8, TrainSetup(precision="amp", channels_last=True))
    assert "channels-last" in nhwc.setup.describe()

    def convs(tw, phase):
        return [op for op in tw.workload.ops if op.phase == phase and op.gemm is not None
                and op.gemm.spatial_dims == 2]

    # the 3x3 convolution with 8 input channels (aligned): an implicit GEMM forward and backward, same flops
    assert all(op.kind == OpKind.CONV for op in convs(nchw, Phase.FORWARD) + convs(nchw, Phase.BACKWARD))
    assert all(op.kind == OpKind.MATMUL for op in convs(nhwc, Phase.FORWARD) + convs(nhwc, Phase.BACKWARD))
    assert sum(op.flops for op in nhwc.workload.ops) == sum(op.flops for op in nchw.workload.ops)
    # training batch norm keeps its bytes but loses the per-channel rows (its NHWC kernels spread each channel)
    bn = [op for op in nchw.workload.ops if op.family in ("batch_norm", "batch_norm_backward")]
    bn_cl = [op for op in nhwc.workload.ops if op.family in ("batch_norm", "batch_norm_backward")]
    assert [op.bytes for op in bn] == [op.bytes for op in bn_cl]
    assert all(op.gemm is not None for op in bn) and all(op.gemm is None for op in bn_cl)
    assert nhwc.memory.peak_bytes == nchw.memory.peak_bytes
