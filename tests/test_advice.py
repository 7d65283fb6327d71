"""Advice follows from the numbers: which rule fires for which prediction."""

from __future__ import annotations

from tests.conftest import make_hardware
from tops_advisor.advice import advise
from tops_advisor.roofline import predict
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.workload import OpRecord, Workload

HW = make_hardware()


def _memory_bound(param_bytes: float) -> Workload:
    # 1 GB read + 0.1 GB written by an elementwise op: memory-bound, utilisation ~0
    op = OpRecord("aten.mm", "matmul", "", 1e6, 1e9, 1e8, param_bytes, "fp16", 1)
    return Workload("w", 8, "fp16", (op,), param_bytes=param_bytes)


def test_weight_bound_says_raise_the_batch():
    w = _memory_bound(param_bytes=0.9e9)  # 0.9 of 1.1 GB are weights: 82%
    text = " ".join(advise(predict(w, HW), HW))
    assert "weights are 82% of the traffic: raise the batch" in text


def test_activation_bound_says_a_bigger_batch_will_not_help():
    w = _memory_bound(param_bytes=0.0)
    text = " ".join(advise(predict(w, HW), HW))
    assert "a bigger batch will not help" in text and "torch.compile" in text


def test_eager_host_bound_suggests_cuda_graphs_with_the_graph_prediction():
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(500))
    w = Workload("tiny", 1, "fp16", ops)
    eager, graph = predict(w, HW, mode="eager"), predict(w, HW, mode="graph")
    text = " ".join(advise(eager, HW, graph))
    # graph: 500 x (1.2 us floor + 200 B at 620.5 GB/s + 0.75 us gap) = 975 us; eager: 500 x 11 us host
    # (DEFAULTS.eager_op_s; no module calls) = 5.5 ms
    assert DEFAULTS.eager_op_s.value == 11e-6
    assert "replay as a CUDA graph" in text and "predicted 975 us instead of 5.5 ms" in text


def test_does_not_fit_names_the_sizes():
    w = Workload("big", 1, "fp16", (), param_bytes=40e9)
    text = advise(predict(w, HW), HW)[0]
    assert text.startswith("does not fit: needs 41.0 GB, toy-gpu has 16 GB")
