"""The roofline's properties, on a synthetic device and hand-built workloads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import make_hardware
from tops_advisor.calibration import Calibration
from tops_advisor.errors import InputError, UnsupportedPrecisionError
from tops_advisor.roofline import device_perf, predict
from tops_advisor.roofline.efficiency import gemm_efficiency
from tops_advisor.workload import GemmShape, OpRecord, Workload

HW = make_hardware()


def one_op(flops: float, nbytes: float, kind: str = "matmul", dtype: str = "fp16", kernels: int = 1,
           gemm: GemmShape | None = None) -> Workload:
    op = OpRecord("aten.mm", kind, "layer", flops, nbytes / 2, nbytes / 2, 0.0, dtype, kernels, gemm)
    return Workload("w", 1, dtype, (op,))


def test_big_gemm_uses_matrix_peak_times_default_fraction():
    # 8192^3 GEMM: 2 * 8192^3 = 1.0995e12 operations. Toy fp16 peak 100 TOPS x 0.80 (NVIDIA default).
    # Tiles of 128x256: 64 x 32 = 2048 tiles on 100 units -> 21 waves, occupancy 2048/2100 = 0.9752;
    # K ramp 8192 / (8192 + 48) = 0.99417. Rate = 80e12 x 0.9752 x 0.99417 = 77.56e12 ops/s.
    n = 8192
    w = one_op(2 * n**3, 3 * 2 * n * n, gemm=GemmShape(n, n, n))
    p = predict(w, HW)
    expected_compute = 2 * n**3 / (80e12 * (2048 / 2100) * (8192 / 8240))
    assert p.ops[0].compute_s == pytest.approx(expected_compute, rel=1e-9)
    # + the GEMM operator floor (3.6 us, added to the work) + the 0.75 us gap after the kernel
    assert p.latency_s == pytest.approx(expected_compute + 3.6e-6 + 0.75e-6, rel=1e-9)
    assert p.bound == "compute"


def test_memory_bound_elementwise_uses_bandwidth_fraction():
    # 1 GB moved by an fp16 elementwise op at 1000 GB/s x 0.85 (HBM default) x 0.73 (16-bit elementwise) =
    # 620.5 GB/s, plus the elementwise floor (1.2 us) and the 0.75 us gap after each kernel; in fp32 x 0.91.
    w = one_op(1e8, 1e9, kind="elementwise")
    p = predict(w, HW)
    assert p.latency_s == pytest.approx(1e9 / 620.5e9 + 1.2e-6 + 0.75e-6)
    p32 = predict(one_op(1e8, 1e9, kind="elementwise", dtype="fp32"), HW)
    assert p32.latency_s == pytest.approx(1e9 / 773.5e9 + 1.2e-6 + 0.75e-6)
    assert p.bound == "memory"


@settings(max_examples=200, deadline=None)
@given(flops=st.floats(1e3, 1e15), nbytes=st.floats(1e3, 1e12), kernels=st.integers(0, 5),
       kind=st.sampled_from(["matmul", "elementwise", "conv", "norm"]), mode=st.sampled_from(["graph", "eager"]))
def test_latency_never_below_either_roof(flops, nbytes, kernels, kind, mode):
    w = one_op(flops, nbytes, kind=kind, kernels=kernels)
    p = predict(w, HW, mode=mode)
    perf = device_perf(HW)
    # the ceilings, using the *best* attainable rates (no tile or kind penalty can beat them)
    assert p.latency_s >= flops / max(perf.matrix_ops_per_s.values()) * (1 - 1e-12)
    assert p.latency_s >= nbytes / perf.bandwidth_bytes_per_s * (1 - 1e-12)
    assert p.latency_s >= kernels * (perf.kernel_floor_s + perf.kernel_gap_s) * (1 - 1e-12)


def test_bound_switches_exactly_at_the_ridge():
    perf = device_perf(HW)
    ridge = perf.matrix_ops_per_s["fp16"] / perf.bandwidth_bytes_per_s  # 80e12 / 850e9 = 94.1 op/B
    nbytes = 1e9
    # no GEMM shape: efficiency 1, so the switch is at the ridge itself
    below = predict(one_op(nbytes * ridge * 0.99, nbytes, kernels=0), HW)
    above = predict(one_op(nbytes * ridge * 1.01, nbytes, kernels=0), HW)
    assert below.ops[0].bound == "memory"
    assert above.ops[0].bound == "compute"


def test_graph_latency_is_additive_over_operators():
    a = OpRecord("a", "elementwise", "", 0, 5e8, 5e8, 0, "fp16", 1)
    b = OpRecord("b", "matmul", "", 1e12, 1e6, 1e6, 0, "fp16", 1, GemmShape(4096, 4096, 4096))
    both = Workload("ab", 1, "fp16", (a, b))
    pa, pb = predict(Workload("a", 1, "fp16", (a,)), HW), predict(Workload("b", 1, "fp16", (b,)), HW)
    assert predict(both, HW).latency_s == pytest.approx(pa.latency_s + pb.latency_s)


def test_eager_is_host_bound_for_many_tiny_kernels():
    # 1000 tiny ops: each kernel takes its 1.2 us elementwise floor plus its work (200 bytes at 620.5 GB/s)
    # plus a 0.75 us gap on the device, and 29 us of host time to launch eagerly; eager latency = host time +
    # the last kernel; graph latency = device time only.
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(1000))
    w = Workload("tiny", 1, "fp16", ops)
    eager, graph = predict(w, HW, mode="eager"), predict(w, HW, mode="graph")
    per_op_device = 1.2e-6 + 200 / 620.5e9 + 0.75e-6
    assert graph.latency_s == pytest.approx(1000 * per_op_device)
    assert eager.latency_s == pytest.approx(1000 * 29e-6 + per_op_device)
    assert graph.bound == "overhead"
    assert eager.bound == "overhead"


def test_eager_equals_graph_plus_first_launch_when_device_bound():
    big = tuple(OpRecord(f"op{i}", "elementwise", "", 0, 5e8, 5e8, 0, "fp16", 1) for i in range(10))
    w = Workload("big", 1, "fp16", big)
    eager, graph = predict(w, HW, mode="eager"), predict(w, HW, mode="graph")
    assert eager.latency_s == pytest.approx(graph.latency_s + 29e-6)


def test_calibration_replaces_peaks_bandwidth_and_overheads():
    cal = Calibration(hardware="toy-gpu", measured_tops={"fp16": 50.0}, memory_bandwidth_gb_s=500.0,
                      kernel_graph_us=5.0, kernel_eager_us=20.0)
    perf = device_perf(HW, cal, "test")
    assert perf.matrix_ops_per_s["fp16"] == 50e12
    # unmeasured precisions scale by the measured/datasheet ratio (50 / 100 = 0.5): int8 200 -> 100 TOPS
    assert perf.matrix_ops_per_s["int8"] == pytest.approx(100e12)
    assert perf.bandwidth_bytes_per_s == 500e9
    # per-kernel costs scale with the probe's tiny-kernel times over the H200 reference (0.87 us graph,
    # 10.8 us eager): floors x 5 / 0.87 (elementwise 1.2 us, GEMM 3.6 us), gap 0.75 us x 5 / 0.87, eager
    # operator 29 us x 20 / 10.8
    scale = 5 / 0.87
    assert perf.kernel_floor_s == pytest.approx(1.2e-6 * scale)
    assert perf.kind_floor_s["matmul"] == pytest.approx(3.6e-6 * scale)
    assert perf.kernel_gap_s == pytest.approx(0.75e-6 * scale)
    assert perf.eager_op_s == pytest.approx(29e-6 * 20 / 10.8)
    w = one_op(1e8, 1e9, kind="elementwise")
    # 1 GB at 500 GB/s x 0.73 (16-bit elementwise), + floor 1.2 us and gap 0.75 us, both scaled
    assert predict(w, HW, cal).latency_s == pytest.approx(1e9 / (500e9 * 0.73) + (1.2e-6 + 0.75e-6) * scale)
    assert predict(w, HW, cal).calibrated and not predict(w, HW).calibrated


def test_fp32_convolution_runs_in_tf32_and_matmul_in_fp32_by_default():
    conv = one_op(1e12, 1e6, kind="conv", dtype="fp32")
    mm = one_op(1e12, 1e6, kind="matmul", dtype="fp32")
    assert predict(conv, HW).ops[0].precision == "tf32"
    assert predict(mm, HW).ops[0].precision == "fp32"
    assert predict(mm, HW, tf32_matmul=True).ops[0].precision == "tf32"


def test_missing_precision_names_what_the_device_has():
    w = one_op(1e12, 1e6, dtype="fp8")
    with pytest.raises(UnsupportedPrecisionError, match="toy-gpu has no fp8.*fp32, tf32, fp16, bf16, int8"):
        predict(w, HW)


def test_unknown_mode_is_an_input_error():
    with pytest.raises(InputError, match="unknown mode"):
        predict(one_op(1, 1), HW, mode="fast")


def test_memory_fit():
    w = Workload("w", 1, "fp16", (), param_bytes=14.5e9, activation_peak_bytes=0.4e9)
    p = predict(w, HW)  # 14.5 + 0.4 + 1 runtime = 15.9 GB <= 16 GB
    assert p.fits_memory and p.memory_required_bytes == pytest.approx(15.9e9)
    w2 = Workload("w", 1, "fp16", (), param_bytes=14.7e9, activation_peak_bytes=0.4e9)
    assert not predict(w2, HW).fits_memory


def test_gemm_efficiency_small_shapes_reach_less():
    big = gemm_efficiency([8192], [8192], [8192], [1], 132)[0]
    gemv = gemm_efficiency([1], [4096], [4096], [1], 132)[0]
    tiny_k = gemm_efficiency([8192], [8192], [16], [1], 132)[0]
    # m = 1 fills 1/8 of the narrowest (8 x 128) tile, of quality 0.6: at most 0.075 of the GEMM rate
    assert big > 0.9 and gemv <= 0.6 / 8 and tiny_k < 0.3
    # unknown shapes (m == 0) are not penalised
    assert gemm_efficiency([0], [0], [0], [0], 132)[0] == 1.0


def test_throughput_and_utilisation():
    n = 4096
    w = Workload("w", 8, "fp16", one_op(2 * n**3, 6 * n * n, gemm=GemmShape(n, n, n)).ops)
    p = predict(w, HW)
    assert p.throughput_per_s == pytest.approx(8 / p.latency_s)
    assert p.utilisation == pytest.approx(2 * n**3 / p.latency_s / 100e12)


def test_depthwise_convolution_is_memory_bound_on_cuda_cores():
    # groups = 144 with one output channel per group: a direct kernel at 0.25 of the attainable bandwidth
    # (850 GB/s), + the depthwise floor 3 us + the 0.75 us gap. Its 8.1 MFLOP at 0.17 x the vector rate
    # (toy fp32 peak x 0.7) is far below that.
    dw = OpRecord("aten.convolution", "conv", "", 2 * 3136 * 144 * 9, 1e8, 1e8, 0, "fp16", 1,
                  GemmShape(3136, 1, 9, 144))
    p = predict(Workload("dw", 1, "fp16", (dw,)), HW)
    assert p.ops[0].bound == "memory"
    assert p.latency_s == pytest.approx(2e8 / (850e9 * 0.25) + 3e-6 + 0.75e-6)


def test_misaligned_matmul_is_slower():
    # n = 50257 (GPT-2 vocabulary) is odd: 2-byte alignment in fp16 -> 0.15 of the aligned rate
    aligned = one_op(2 * 4096 * 50264 * 768, 1e6, gemm=GemmShape(4096, 50264, 768))
    odd = one_op(2 * 4096 * 50257 * 768, 1e6, gemm=GemmShape(4096, 50257, 768))
    ratio = predict(odd, HW).ops[0].compute_s / predict(aligned, HW).ops[0].compute_s
    assert ratio == pytest.approx(1 / 0.15, rel=0.01)


def test_attention_runs_the_next_compiled_head_dim():
    from tops_advisor.roofline.predict import head_dim_use

    # FlashAttention (16-bit): head dims are compiled in steps of 32; 36 and 40 run the 64 kernel
    assert list(head_dim_use([36, 40, 64, 96, 300], "fp16")) == pytest.approx([36 / 64, 40 / 64, 1, 1, 1])
    # the fp32 memory-efficient kernel: 64, 128, then any
    assert list(head_dim_use([40, 64, 100, 200], "fp32")) == pytest.approx([40 / 64, 1, 100 / 128, 1])


def test_attention_efficiency_counts_query_blocks_times_heads():
    from tops_advisor.roofline.efficiency import attention_efficiency

    # 256 queries in 128-row blocks x 8 heads = 16 blocks on 132 units: one wave, 16/132 occupied;
    # the key loop's ramp 256 / (256 + 48)
    eff = attention_efficiency([256], [256], [8], 132, 128.0)[0]
    assert eff == pytest.approx(16 / 132 * 256 / 304)
    # 200 queries fill 2 blocks of 128 with 200/256 of their rows
    eff = attention_efficiency([200], [4096], [132], 132, 128.0)[0]
    assert eff == pytest.approx(200 / 256 * 1.0 * 4096 / 4144)


def test_pointwise_convolution_has_the_gemm_floor():
    # same work, 1x1 (window 1) vs 3x3 (window 9): the floors are the GEMM's 3.6 us and a convolution's 5.5 us
    def conv(window):
        op = OpRecord("aten.convolution", "conv", "", 1e3, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(64, 64, 64, 1, window=window))
        return predict(Workload("c", 1, "fp16", (op,)), HW).latency_s

    # (and the 1x1 runs at the GEMM rate, not the convolution factor: a few ns on this tiny op)
    assert conv(9) - conv(1) == pytest.approx(5.5e-6 - 3.6e-6, rel=1e-2)


def test_skinny_tiles_only_for_few_rows():
    tiles = ((128, 128, 1.0), (8, 128, 0.6))
    # 64 rows: the GEMV-like 8-row tile is not a choice, so the result is the 128x128 tile's alone
    assert gemm_efficiency([64], [4096], [4096], [1], 132, 1.0, 16.0, tiles=tiles)[0] == pytest.approx(
        gemm_efficiency([64], [4096], [4096], [1], 132, 1.0, 16.0, tiles=tiles[:1])[0])
    # 8 rows: it is, and it beats a 128-row tile padded 16x
    assert gemm_efficiency([8], [4096], [4096], [1], 132, 1.0, 16.0, tiles=tiles)[0] > \
        gemm_efficiency([8], [4096], [4096], [1], 132, 1.0, 16.0, tiles=tiles[:1])[0]


def test_internal_kernels_cost_only_their_launches_in_eager_mode():
    conv = OpRecord("aten.convolution", "conv", "", 1e3, 1e3, 1e3, 0, "fp16", 1, GemmShape(8, 8, 8))
    bias = OpRecord("aten.add", "elementwise", "", 1e3, 1e3, 1e3, 0, "fp16", 1, strided=True, internal=True)
    alone = predict(Workload("a", 1, "fp16", (conv,)), HW, mode="eager").host_time_s
    both = predict(Workload("b", 1, "fp16", (conv, bias)), HW, mode="eager").host_time_s
    assert alone == pytest.approx(29e-6)              # one eager operator
    assert both - alone == pytest.approx(3e-6)        # + one extra kernel launch, not another operator


def test_one_dimensional_depthwise_convolution_has_its_own_rate():
    # 1-D depthwise kernels reach 0.28 of the vector rate in fp16 (2-D: 0.17): same work, 0.17/0.28 the time
    def dw(dims):
        op = OpRecord("aten.convolution", "conv", "", 1e10, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(1000, 1, 33, 256, window=33, spatial_dims=dims))
        return predict(Workload("d", 1, "fp16", (op,)), HW).ops[0].compute_s

    assert dw(1) / dw(2) == pytest.approx(0.17 / 0.28)


def test_pointwise_convolution_runs_at_the_gemm_rate():
    def conv(window):
        op = OpRecord("aten.convolution", "conv", "", 2 * 4096**3, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(4096, 4096, 4096, 1, window=window))
        return predict(Workload("c", 1, "fp16", (op,)), HW).ops[0].compute_s

    # same GEMM shape: a 3x3 convolution runs at 0.40 of it (cuDNN implicit GEMM), a 1x1 at the GEMM's rate
    # (no split-K for convolutions either way, so the shape efficiency is the same)
    assert conv(9) / conv(1) == pytest.approx(1 / 0.40)


def test_functional_workloads_pay_less_host_time_per_operator():
    # 10 tiny operators: from nn.Module model files 29 us each, from plain functions (the LLM builder) 20.5 us
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(10))
    modules = predict(Workload("m", 1, "fp16", ops), HW, mode="eager").host_time_s
    functional = predict(Workload("f", 1, "fp16", ops, functional=True), HW, mode="eager").host_time_s
    assert modules == pytest.approx(10 * 29e-6) and functional == pytest.approx(10 * 20.5e-6)
