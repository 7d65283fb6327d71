"""Advice follows from the numbers: which rule fires for which prediction."""

from __future__ import annotations

from dataclasses import replace

from tests.conftest import make_hardware
from tops_advisor.advice import advise
from tops_advisor.roofline import device_perf, predict
from tops_advisor.roofline.defaults import DEFAULTS, Default
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


def _round_defaults():
    """Round numbers for the host-bound case: 1 us floors, 0.5 us gaps, 8 us of host time per operator, 1000 GB/s
    copies of which fp16 elementwise kernels reach 0.1."""
    d = DEFAULTS
    return replace(
        d, kind_floor_s=Default({**d.kind_floor_s.value, "elementwise": 1e-6}, "test"),
        kernel_gap_s=Default(0.5e-6, "test"), eager_op_s=Default(8e-6, "test"),
        bandwidth_fraction=Default({k: Default(1.0, "test") for k in ("HBM", "GDDR", "LPDDR")}, "test"),
        kind_bandwidth_factor_by_width=Default({"elementwise": {"16-bit": 0.1, "32-bit": 0.1}}, "test"))


def test_eager_host_bound_suggests_cuda_graphs_with_the_graph_prediction():
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(500))
    w = Workload("tiny", 1, "fp16", ops)
    perf = device_perf(HW, defaults=_round_defaults())
    eager, graph = predict(w, HW, mode="eager", perf=perf), predict(w, HW, mode="graph", perf=perf)
    text = " ".join(advise(eager, HW, graph))
    # graph: 500 x (1 us floor + 200 B at 1000 GB/s x 0.1 = 2 ns + 0.5 us gap) = 751 us; eager: 500 x 8 us host
    # (no module calls) = 4 ms, then the last operator's 1.502 us on the device: 4.0015 ms, "4 ms"
    assert "replay as a CUDA graph" in text and "predicted 751 us instead of 4 ms" in text


def test_does_not_fit_names_the_sizes():
    w = Workload("big", 1, "fp16", (), param_bytes=40e9)
    text = advise(predict(w, HW), HW)[0]
    assert text.startswith("does not fit: needs 41.0 GB, toy-gpu has 16 GB")


# --- advice that does not contradict itself -----------------------------------------------------------------

def _compute_bound(peak_scale: float):
    """A compute-bound prediction on a small fp32 device (no faster precision to suggest, so no other rule
    speaks), its peak scaled by ``peak_scale``: utilisation = attainable / (peak x scale)."""
    hw = make_hardware(dense_tops={"fp32": 10}, sparse_tops={})
    op = OpRecord("aten.mm", "matmul", "", 1e9, 1e4, 1e4, 0, "fp32", 1)
    pred = predict(Workload("w", 1, "fp32", (op,)), hw)
    return replace(pred, peak_ops_per_s=pred.peak_ops_per_s * peak_scale), hw


def test_compute_bound_far_below_peak_says_what_limits_it():
    pred, hw = _compute_bound(3.0)   # 78% of peak at scale 1: 26% at scale 3
    assert pred.bound == "compute" and pred.utilisation < 0.3
    text = advise(pred, hw)[-1]
    assert "little to gain" not in text and "shapes allow" in text


def test_little_to_gain_only_near_the_roof():
    pred, hw = _compute_bound(1.0)   # 78% of peak
    assert pred.utilisation > 0.6
    assert advise(pred, hw)[-1] == f"near the roof: compute-bound at {pred.utilisation:.0%} of peak; little to " \
                                   "gain from settings"
