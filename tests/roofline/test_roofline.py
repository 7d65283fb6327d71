"""The roofline's properties, on a synthetic device, hand-built workloads and round-number defaults.

The defaults are an object (``RooflineDefaults``): these tests build their own with round numbers, so the
arithmetic in each comment is checkable by hand and no tuned constant is repeated here (recalibrating the
shipped defaults breaks none of these tests).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import make_hardware
from tops_advisor.calibration import Calibration
from tops_advisor.catalog import load_catalog
from tops_advisor.errors import InputError, UnsupportedPrecisionError
from tops_advisor.kinds import OpKind
from tops_advisor.roofline import device_perf, predict
from tops_advisor.roofline.arrays import OpArrays
from tops_advisor.roofline.defaults import DEFAULTS, Default, RooflineDefaults
from tops_advisor.roofline.device import bandwidth_fraction
from tops_advisor.roofline.efficiency import attention_efficiency, gemm_efficiency
from tops_advisor.roofline.rates import conv_factor, head_dim_use
from tops_advisor.workload import OP_KINDS, GemmShape, OpRecord, Workload

HW = make_hardware()  # 100 TOPS fp16, 50 tf32, 10 fp32; 1000 GB/s; 100 units

_KINDS = {k: 0.5 for k in OP_KINDS}


def t(value):
    """A round-number default for these tests."""
    return Default(value, "test")


def widths(bits16, bits32):
    return {"16-bit": bits16, "32-bit": bits32}


ROUND = replace(
    DEFAULTS,
    matmul_fraction=t({"NVIDIA": t(0.5)}), bandwidth_fraction=t({k: t(0.5) for k in ("HBM", "GDDR", "LPDDR")}),
    vector_fraction=t(0.5), kernel_gap_s=t(1e-6),
    kind_floor_s=t({**{k: 1e-6 for k in OP_KINDS}, "matmul": 2e-6, "conv": 4e-6, "depthwise": 3e-6,
                    "batch_norm_cudnn": 0.5e-6}),
    kernel_floor_s=t(1e-6), eager_op_s=t(10e-6),
    eager_functional_op_s=t(5e-6), eager_extra_kernel_s=t(2e-6),
    eager_no_kernel_op_s=t(1e-6), conv_factor=t(0.5),
    conv_tf32_factor=t(0.25), conv_intensity_scaling=t(False), attention_factor=t(0.5),
    kind_bandwidth_factor=t({**_KINDS, "matmul": 1.0}),
    kind_bandwidth_factor_by_width=t({"elementwise": widths(0.5, 1.0)}),
    norm_bandwidth_factor=t({"batch_norm": widths(0.25, 0.125)}),
    strided_kind_bandwidth_factor=t({"elementwise": 0.1}),
    strided_bandwidth_factor=t(0.2), depthwise_bandwidth_factor=t(0.25), depthwise_vector_factor=t(widths(0.2, 0.1)),
    depthwise_1d_vector_factor=t(widths(0.4, 0.1)), runtime_memory_bytes=t(1e9))
PERF = device_perf(HW, defaults=ROUND)
# 50 TOPS fp16 GEMMs, 500 GB/s, 2.5 TOPS of vector work (0.5 x the 10 TOPS fp32 peak)


def run(w: Workload, mode: str = "graph", **kw):
    return predict(w, HW, mode=mode, perf=PERF, **kw)


def one_op(flops: float, nbytes: float, kind: str = "matmul", dtype: str = "fp16", kernels: int = 1,
           gemm: GemmShape | None = None, **kw) -> Workload:
    op = OpRecord("op", kind, "layer", flops, nbytes / 2, nbytes / 2, 0.0, dtype, kernels, gemm, **kw)
    return Workload("w", 1, dtype, (op,))


def test_big_gemm_uses_matrix_peak_times_default_fraction():
    # 8192^3 GEMM: 2 * 8192^3 operations at 100 TOPS x 0.5. Tiles of 128x256: 64 x 32 = 2048 tiles on 100
    # units -> 21 waves, occupancy 2048/2100; K ramp 8192 / (8192 + 48).
    n = 8192
    p = run(one_op(2 * n**3, 3 * 2 * n * n, gemm=GemmShape(n, n, n)))
    expected_compute = 2 * n**3 / (50e12 * (2048 / 2100) * (8192 / 8240))
    assert p.ops[0].compute_s == pytest.approx(expected_compute, rel=1e-9)
    # + the GEMM floor (2 us) + the 1 us gap after the kernel
    assert p.latency_s == pytest.approx(expected_compute + 2e-6 + 1e-6, rel=1e-9)
    assert p.bound == "compute"


def test_memory_bound_elementwise_uses_bandwidth_fraction():
    # 1 GB at 500 GB/s x 0.5 (16-bit elementwise) + the 1 us floor + the 1 us gap; in fp32 x 1.0
    assert run(one_op(1e8, 1e9, kind="elementwise")).latency_s == pytest.approx(1e9 / 250e9 + 2e-6)
    assert run(one_op(1e8, 1e9, kind="elementwise", dtype="fp32")).latency_s == pytest.approx(1e9 / 500e9 + 2e-6)
    assert run(one_op(1e8, 1e9, kind="elementwise")).bound == "memory"


def test_norm_family_and_strided_views_set_the_bandwidth_share():
    # the native batch norm kernels (two kernels: the kernel and its copy): 0.25 (16-bit) / 0.125 (32-bit); other
    # norms: the kind's 0.5; a strided elementwise: 0.1
    bn = run(one_op(0, 1e9, kind="norm", family="batch_norm", kernels=2)).ops[0].memory_s
    ln = run(one_op(0, 1e9, kind="norm", family="layer_norm")).ops[0].memory_s
    bn32 = run(one_op(0, 1e9, kind="norm", dtype="fp32", family="batch_norm", kernels=2)).ops[0].memory_s
    strided = run(one_op(0, 1e9, kind="elementwise", strided=True)).ops[0].memory_s
    strided_pool = run(one_op(0, 1e9, kind="pool", strided=True)).ops[0].memory_s
    assert (bn, ln, bn32) == pytest.approx((1e9 / 125e9, 1e9 / 250e9, 1e9 / 62.5e9))
    assert strided == pytest.approx(1e9 / 50e9)
    assert strided_pool == pytest.approx(1e9 / (500e9 * 0.5 * 0.2))   # the kind's share x 0.2
    # cuDNN's one-kernel inference batch norm (fp32, or autocast's half input) at its own shares of 500 GB/s
    shares = PERF.defaults.cudnn_batch_norm_bandwidth_factor.value
    cudnn16 = run(one_op(0, 1e9, kind="norm", family="batch_norm"))
    cudnn32 = run(one_op(0, 1e9, kind="norm", dtype="fp32", family="batch_norm"))
    assert cudnn16.ops[0].memory_s == pytest.approx(1e9 / (500e9 * shares["16-bit"]))
    assert cudnn32.ops[0].memory_s == pytest.approx(1e9 / (500e9 * shares["32-bit"]))
    # one-kernel batch norm has its own floor (0.5 us): its bytes + 0.5 + the 1 us gap
    assert cudnn32.latency_s == pytest.approx(cudnn32.ops[0].memory_s + 1.5e-6)


@settings(max_examples=200, deadline=None)
@given(flops=st.floats(1e3, 1e15), nbytes=st.floats(1e3, 1e12), kernels=st.integers(0, 5),
       kind=st.sampled_from(["matmul", "elementwise", "conv", "norm"]), mode=st.sampled_from(["graph", "eager"]))
def test_latency_never_below_either_roof(flops, nbytes, kernels, kind, mode):
    p = predict(one_op(flops, nbytes, kind=kind, kernels=kernels), HW, mode=mode)
    perf = device_perf(HW)
    # the ceilings, using the *best* attainable rates (no tile or kind penalty can beat them)
    assert p.latency_s >= flops / max(perf.matrix_ops_per_s.values()) * (1 - 1e-12)
    assert p.latency_s >= nbytes / perf.bandwidth_bytes_per_s * (1 - 1e-12)
    assert p.latency_s >= kernels * (perf.kernel_floor_s + perf.kernel_gap_s) * (1 - 1e-12)


def test_bound_switches_exactly_at_the_ridge():
    ridge = PERF.matrix_ops_per_s["fp16"] / PERF.bandwidth_bytes_per_s  # 50e12 / 500e9 = 100 op/B
    # no GEMM shape: efficiency 1, so the switch is at the ridge itself
    assert run(one_op(1e9 * ridge * 0.99, 1e9, kernels=0)).ops[0].bound == "memory"
    assert run(one_op(1e9 * ridge * 1.01, 1e9, kernels=0)).ops[0].bound == "compute"


def test_graph_latency_is_additive_over_operators():
    a = OpRecord("a", "elementwise", "", 0, 5e8, 5e8, 0, "fp16", 1)
    b = OpRecord("b", "matmul", "", 1e12, 1e6, 1e6, 0, "fp16", 1, GemmShape(4096, 4096, 4096))
    both = Workload("ab", 1, "fp16", (a, b))
    pa, pb = run(Workload("a", 1, "fp16", (a,))), run(Workload("b", 1, "fp16", (b,)))
    assert run(both).latency_s == pytest.approx(pa.latency_s + pb.latency_s)


# Operators of every class, dtype and shape the predictor distinguishes.
_OPS = st.builds(
    lambda kind, dtype, m, n, k, b, window, dims, strided, family, kernels: OpRecord(
        "op", kind, "", 2.0 * m * n * k * b, 1e3 * m, 1e3 * n, 0.0, dtype, kernels,
        GemmShape(m, n, k, b, window=window, spatial_dims=dims) if kind in ("matmul", "conv", "attention")
        else None, strided=strided, family=family),
    kind=st.sampled_from(OP_KINDS), dtype=st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8"]),
    m=st.integers(1, 5000), n=st.integers(1, 5000), k=st.integers(1, 5000), b=st.integers(1, 64),
    window=st.sampled_from([1, 9, 49]), dims=st.sampled_from([1, 2]), strided=st.booleans(),
    family=st.sampled_from(["", "batch_norm", "layer_norm"]), kernels=st.integers(0, 3))


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(_OPS, min_size=2, max_size=8), calibrated=st.booleans())
def test_an_operators_time_does_not_depend_on_the_rest_of_the_workload(ops, calibrated):
    # h100-sxm has fp8, int8 and tf32 peaks, so every dtype above predicts; the shipped defaults
    hw = load_catalog().get("h100-sxm")
    perf = device_perf(hw, Calibration(hardware=hw.id, measured_tops={"fp16": 700.0},
                                       memory_bandwidth_gb_s=3000.0) if calibrated else None)
    together = predict(Workload("w", 1, "fp16", tuple(ops)), hw, perf=perf).ops
    for op, in_context in zip(ops, together, strict=True):
        alone = predict(Workload("w", 1, "fp16", (op,)), hw, perf=perf).ops[0]
        assert in_context.latency_s == pytest.approx(alone.latency_s, rel=1e-12)
        assert in_context.precision == alone.precision


def test_fp8_convolution_is_not_sped_up_by_an_fp32_one():
    # a past bug: the TF32 convolution factor leaked into the next dtype of the same kind
    hw = load_catalog().get("h100-sxm")
    shape = GemmShape(50176, 256, 2304, 1, window=9, spatial_dims=2)
    fp8 = OpRecord("aten.convolution", "conv", "", 2.0 * 50176 * 256 * 2304, 1e6, 1e6, 0, "fp8", 1, shape)
    fp32 = replace(fp8, dtype="fp32")
    alone = predict(Workload("a", 1, "fp8", (fp8,)), hw).ops[0].compute_s
    mixed = predict(Workload("m", 1, "fp8", (fp32, fp8)), hw).ops[1].compute_s
    assert mixed == pytest.approx(alone, rel=1e-12)


def test_eager_is_host_bound_for_many_tiny_kernels():
    # 1000 tiny ops: each kernel takes its 1 us floor plus its work (200 bytes at 250 GB/s) plus a 1 us gap
    # on the device, and 10 us of host time to launch eagerly; eager latency = host time + the last kernel;
    # graph latency = device time only.
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(1000))
    w = Workload("tiny", 1, "fp16", ops)
    eager, graph = run(w, "eager"), run(w)
    per_op_device = 1e-6 + 200 / 250e9 + 1e-6
    assert graph.latency_s == pytest.approx(1000 * per_op_device)
    assert eager.latency_s == pytest.approx(1000 * 10e-6 + per_op_device)
    assert graph.bound == "overhead" and eager.bound == "overhead"


def test_eager_equals_graph_plus_first_launch_when_device_bound():
    big = tuple(OpRecord(f"op{i}", "elementwise", "", 0, 5e8, 5e8, 0, "fp16", 1) for i in range(10))
    w = Workload("big", 1, "fp16", big)
    assert run(w, "eager").latency_s == pytest.approx(run(w).latency_s + 10e-6)


def test_calibration_replaces_peaks_bandwidth_and_overheads():
    cal = Calibration(hardware="toy-gpu", measured_tops={"fp16": 50.0}, memory_bandwidth_gb_s=500.0,
                      kernel_graph_us=5.0, kernel_eager_us=20.0)
    perf = device_perf(HW, cal, "test", defaults=ROUND)
    assert perf.matrix_ops_per_s["fp16"] == 50e12
    # unmeasured precisions scale by the measured/datasheet ratio (50 / 100 = 0.5): int8 200 -> 100 TOPS
    assert perf.matrix_ops_per_s["int8"] == pytest.approx(100e12)
    assert perf.bandwidth_bytes_per_s == 500e9
    # per-kernel costs scale with the probe's tiny-kernel times over the reference ones (shipped: H200)
    scale = 5e-6 / ROUND.tiny_kernel_reference_s.value
    assert perf.kernel_floor_s == pytest.approx(1e-6 * scale)
    assert perf.kind_floor_s["matmul"] == pytest.approx(2e-6 * scale)
    assert perf.kernel_gap_s == pytest.approx(1e-6 * scale)
    # the eager host cost follows the launch time in part (eager_host_fixed_share does not scale)
    fixed = ROUND.eager_host_fixed_share.value
    launch = 20e-6 / ROUND.eager_launch_reference_s.value
    assert perf.eager_op_s == pytest.approx(10e-6 * (fixed + (1 - fixed) * launch))
    w = one_op(1e8, 1e9, kind="elementwise")
    # 1 GB at 500 GB/s x 0.5 (16-bit elementwise), + floor 1 us and gap 1 us, both scaled
    assert predict(w, HW, perf=perf).latency_s == pytest.approx(1e9 / 250e9 + 2e-6 * scale)
    assert predict(w, HW, perf=perf).calibrated and not run(w).calibrated


def test_a_module_stack_probe_scales_the_eager_host_cost_in_proportion():
    """The module-stack time (probe.overhead.module_call_s) replaces the launch-time rule: twice the reference
    stack time, twice the host cost per operator, whatever the launch probe said."""
    ref = ROUND.eager_module_call_reference_s.value * 1e6
    for eager_us in (None, 20.0):
        cal = Calibration(hardware="toy-gpu", measured_tops={"fp16": 100.0}, memory_bandwidth_gb_s=1000.0,
                          kernel_eager_us=eager_us, module_call_us=2 * ref)
        perf = device_perf(HW, cal, "test", defaults=ROUND)
        assert perf.eager_op_s == pytest.approx(2 * ROUND.eager_op_s.value)
    slow = Calibration(hardware="toy-gpu", measured_tops={"fp16": 100.0}, memory_bandwidth_gb_s=1000.0,
                       module_call_us=2 * ref)
    fast = slow.model_copy(update={"module_call_us": ref})
    tiny = Workload("tiny", 1, "fp16", tuple(OpRecord(f"op{i}", "elementwise", "", 0, 8, 8, 0, "fp16", 1)
                                              for i in range(100)))
    host_bound = [predict(tiny, HW, mode="eager", perf=device_perf(HW, c, "test", defaults=ROUND)).latency_s
                  for c in (fast, slow)]
    assert host_bound[1] == pytest.approx(2 * host_bound[0], rel=0.02)


def test_fp32_convolution_runs_in_tf32_and_matmul_in_fp32_by_default():
    conv = one_op(1e12, 1e6, kind="conv", dtype="fp32")
    mm = one_op(1e12, 1e6, kind="matmul", dtype="fp32")
    assert run(conv).ops[0].precision == "tf32"
    assert run(mm).ops[0].precision == "fp32"
    assert run(mm, tf32_matmul=True).ops[0].precision == "tf32"


def test_tf32_convolutions_take_their_own_factor():
    # same 3x3 convolution (same tile efficiency): TF32 at 50 TOPS x 0.5 (fraction) x 0.25 (TF32 factor),
    # fp16 at 100 x 0.5 x 0.5 (convolution factor): 6.25 vs 25 TOPS, 4x the time
    shape = GemmShape(4096, 256, 2304, 1, window=9, spatial_dims=2)
    tf32 = run(one_op(1e12, 1e3, kind="conv", dtype="fp32", gemm=shape)).ops[0].compute_s
    fp16 = run(one_op(1e12, 1e3, kind="conv", gemm=shape)).ops[0].compute_s
    assert tf32 / fp16 == pytest.approx(4.0)


def test_winograd_speeds_up_only_plain_fp32_3x3_stride_1_convolutions():
    # a card without TF32: fp32 convolutions run on the SIMT units, where cuDNN's Winograd pays (x 2 here)
    hw = make_hardware(dense_tops={"fp32": 10, "fp16": 100})
    perf = device_perf(hw, defaults=replace(ROUND, winograd_speedup=Default(2.0, "test")))
    shape = GemmShape(4096, 256, 2304, 1, window=9, spatial_dims=2)

    def compute_s(dtype="fp32", on=hw, p=perf, **over):
        w = one_op(1e12, 1e3, kind="conv", dtype=dtype, gemm=replace(shape, **over))
        return predict(w, on, perf=p).ops[0].compute_s

    base = compute_s(stride=2)
    assert compute_s() == pytest.approx(base / 2.0)
    assert compute_s(window=25) == pytest.approx(base)                     # 5x5: no Winograd
    assert compute_s(batch=4) == pytest.approx(compute_s(batch=4, stride=2))   # grouped
    assert compute_s("fp16") == pytest.approx(compute_s("fp16", stride=2))   # tensor cores
    amd = make_hardware(vendor="AMD", dense_tops={"fp32": 10, "fp16": 100})
    amd_perf = device_perf(amd, defaults=replace(ROUND, winograd_speedup=Default(2.0, "test")))
    assert compute_s(on=amd, p=amd_perf) == pytest.approx(compute_s(on=amd, p=amd_perf, stride=2))
    # with TF32 (HW) the fp32 convolution runs in TF32 on tensor cores: unchanged
    tf32 = device_perf(HW, defaults=replace(ROUND, winograd_speedup=Default(2.0, "test")))
    assert compute_s(on=HW, p=tf32) == pytest.approx(compute_s(on=HW, p=tf32, stride=2))


def test_fp32_convolutions_take_the_faster_simt_kernels_where_tf32_buys_little():
    """GeForce runs TF32 no faster than FP32 (RTX 3090: 35.6 both): an fp32 NCHW convolution takes the faster of
    the TF32 implicit GEMM and cuDNN's FP32 SIMT kernels (Winograd for 3x3 stride 1), priced as on a card without
    TF32; where TF32 is more than 2x FP32 (HW: 5x) and for channels-last convolutions, TF32 alone."""
    defaults = replace(ROUND, winograd_speedup=Default(2.0, "test"))
    geforce = make_hardware(dense_tops={"fp32": 10, "tf32": 10, "fp16": 100})
    no_tf32 = make_hardware(dense_tops={"fp32": 10, "fp16": 100})
    tf32_only = make_hardware(dense_tops={"fp32": 4.9, "tf32": 10, "fp16": 100})   # TF32 just over 2x FP32
    shape = GemmShape(4096, 256, 2304, 1, window=9, spatial_dims=2)

    def compute_s(on, family="", **over):
        w = one_op(1e12, 1e3, kind="conv", dtype="fp32", gemm=replace(shape, **over))
        w = replace(w, ops=tuple(replace(o, family=family) for o in w.ops))
        return predict(w, on, perf=device_perf(on, defaults=defaults)).ops[0].compute_s

    assert compute_s(geforce) == pytest.approx(compute_s(no_tf32))                             # Winograd
    assert compute_s(geforce) < compute_s(tf32_only)
    assert compute_s(geforce, stride=2) == pytest.approx(min(compute_s(no_tf32, stride=2), compute_s(tf32_only)))
    assert compute_s(geforce, family="channels_last") == pytest.approx(compute_s(tf32_only, family="channels_last"))
    assert compute_s(HW) == pytest.approx(compute_s(HW, stride=2))             # TF32 5x FP32: implicit GEMM


def test_missing_precision_names_what_the_device_has():
    with pytest.raises(UnsupportedPrecisionError, match="toy-gpu has no fp8.*fp32, tf32, fp16, bf16, int8"):
        run(one_op(1e12, 1e6, dtype="fp8"))


def test_unknown_mode_is_an_input_error():
    with pytest.raises(InputError, match="unknown mode"):
        predict(one_op(1, 1), HW, mode="fast")


def test_memory_fit():
    w = Workload("w", 1, "fp16", (), param_bytes=14.5e9, activation_peak_bytes=0.4e9)
    p = run(w)  # 14.5 + 0.4 + 1 runtime = 15.9 GB <= 16 GB
    assert p.fits_memory and p.memory_required_bytes == pytest.approx(15.9e9)
    assert not run(Workload("w", 1, "fp16", (), param_bytes=14.7e9, activation_peak_bytes=0.4e9)).fits_memory


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
    p = run(Workload("w", 8, "fp16", one_op(2 * n**3, 6 * n * n, gemm=GemmShape(n, n, n)).ops))
    assert p.throughput_per_s == pytest.approx(8 / p.latency_s)
    assert p.utilisation == pytest.approx(2 * n**3 / p.latency_s / 100e12)


def test_depthwise_convolution_is_memory_bound_on_cuda_cores():
    # groups = 144 with one output channel per group: a direct kernel at 0.25 of the bandwidth (500 GB/s),
    # + the depthwise floor 3 us + the 1 us gap. Its 8.1 MFLOP at 0.2 x the 2.5 TOPS vector rate: 16 us, less.
    dw = OpRecord("aten.convolution", "conv", "", 2 * 3136 * 144 * 9, 1e8, 1e8, 0, "fp16", 1,
                  GemmShape(3136, 1, 9, 144))
    p = run(Workload("dw", 1, "fp16", (dw,)))
    assert p.ops[0].bound == "memory"
    assert p.latency_s == pytest.approx(2e8 / (500e9 * 0.25) + 3e-6 + 1e-6)


def test_misaligned_matmul_is_slower():
    # n = 50257 (GPT-2 vocabulary) is odd: 2-byte alignment in fp16 -> the table's 2-byte factor
    aligned = one_op(2 * 4096 * 50264 * 768, 1e6, gemm=GemmShape(4096, 50264, 768))
    odd = one_op(2 * 4096 * 50257 * 768, 1e6, gemm=GemmShape(4096, 50257, 768))
    ratio = run(odd).ops[0].compute_s / run(aligned).ops[0].compute_s
    assert ratio == pytest.approx(1 / ROUND.gemm_alignment.value[2.0], rel=0.01)


def test_attention_runs_the_next_compiled_head_dim():
    # FlashAttention (16-bit): head dims are compiled in steps of 32; 36 and 40 run the 64 kernel
    assert list(head_dim_use([36, 40, 64, 96, 300], "fp16", ROUND)) == pytest.approx([36 / 64, 40 / 64, 1, 1, 1])
    # the fp32 memory-efficient kernel: 64, 128, then any
    assert list(head_dim_use([40, 64, 100, 200], "fp32", ROUND)) == pytest.approx([40 / 64, 1, 100 / 128, 1])


def test_attention_efficiency_counts_query_blocks_times_heads():
    # 256 queries in 128-row blocks x 8 heads = 16 blocks on 132 units: one wave, 16/132 occupied;
    # the key loop's ramp 256 / (256 + 48)
    assert attention_efficiency([256], [256], [8], 132, 128.0)[0] == pytest.approx(16 / 132 * 256 / 304)
    # 200 queries fill 2 blocks of 128 with 200/256 of their rows
    eff = attention_efficiency([200], [4096], [132], 132, 128.0)[0]
    assert eff == pytest.approx(200 / 256 * 1.0 * 4096 / 4144)


def test_pointwise_convolution_has_the_gemm_floor():
    # same work, 1x1 (window 1) vs 3x3 (window 9): the floors are the GEMM's 2 us and a convolution's 4 us
    def conv(window):
        op = OpRecord("aten.convolution", "conv", "", 1e3, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(64, 64, 64, 1, window=window))
        return run(Workload("c", 1, "fp16", (op,))).latency_s

    # (and the 1x1 runs at the GEMM rate, not the convolution factor: a few ns on this tiny op)
    assert conv(9) - conv(1) == pytest.approx(4e-6 - 2e-6, rel=1e-2)


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
    alone = run(Workload("a", 1, "fp16", (conv,)), "eager").host_time_s
    both = run(Workload("b", 1, "fp16", (conv, bias)), "eager").host_time_s
    assert alone == pytest.approx(10e-6)              # one eager operator
    assert both - alone == pytest.approx(2e-6)        # + one extra kernel launch, not another operator


def test_one_dimensional_depthwise_convolution_has_its_own_rate():
    # 1-D depthwise kernels reach 0.4 of the vector rate in fp16 here (2-D: 0.2): same work, half the time
    def dw(dims):
        op = OpRecord("aten.convolution", "conv", "", 1e10, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(1000, 1, 33, 256, window=33, spatial_dims=dims))
        return run(Workload("d", 1, "fp16", (op,))).ops[0].compute_s

    assert dw(1) / dw(2) == pytest.approx(0.2 / 0.4)


def test_pointwise_convolution_runs_at_the_gemm_rate():
    def conv(window):
        op = OpRecord("aten.convolution", "conv", "", 2 * 4096**3, 1e3, 1e3, 0, "fp16", 1,
                      GemmShape(4096, 4096, 4096, 1, window=window))
        return run(Workload("c", 1, "fp16", (op,))).ops[0].compute_s

    # same GEMM shape: a 3x3 convolution runs at the convolution factor (0.5) of it, a 1x1 at the GEMM's rate
    assert conv(9) / conv(1) == pytest.approx(1 / 0.5)


def test_functional_workloads_pay_less_host_time_per_operator():
    # 10 tiny operators: from nn.Module model files 10 us each, from plain functions (the LLM builder) 5 us
    ops = tuple(OpRecord(f"op{i}", "elementwise", "", 10, 100, 100, 0, "fp16", 1) for i in range(10))
    modules = run(Workload("m", 1, "fp16", ops), "eager").host_time_s
    functional = run(Workload("f", 1, "fp16", ops, functional=True), "eager").host_time_s
    assert modules == pytest.approx(10 * 10e-6) and functional == pytest.approx(10 * 5e-6)


def test_unknown_compute_units_take_the_named_default():
    hw = make_hardware(compute_units=None)
    perf = device_perf(hw, defaults=replace(ROUND, compute_units_unknown=Default(7, "test")))
    assert perf.compute_units == 7
    assert any("compute units not in the catalog: 7" in a for a in perf.assumptions)


def test_shipped_defaults_are_one_frozen_object():
    with pytest.raises(AttributeError):
        DEFAULTS.kernel_gap_s = Default(0.0, "x")  # type: ignore[misc]
    assert isinstance(DEFAULTS, RooflineDefaults)


def test_conv_factor_follows_operations_per_byte_through_two_reference_points():
    # references: 0.4 at 200 flop/B (16-bit), 0.6 at 100 flop/B (32-bit) -> c = (0.6 - 0.4) / (0.4 x 200 -
    # 0.6 x 100) = 0.01 B/flop and A = 0.4 x (1 + 2) = 1.2; a card at 50 flop/B (50 TOPS fp16 over 1000 GB/s)
    # gets 1.2 / 1.5 = 0.8, its TF32 path (25 TOPS: 25 flop/B) 1.2 / 1.25; plain FP32 (SIMT) convolutions
    # take their own factor, whatever the intensity
    d = replace(DEFAULTS, conv_factor=Default(0.4, "test"), conv_tf32_factor=Default(0.6, "test"),
                conv_reference_intensity=t({"fp16": t(200.0), "tf32": t(100.0)}),
                conv_simt_factor=Default(0.9, "test"))
    hw = make_hardware(dense_tops={"fp32": 10, "tf32": 25, "fp16": 50})
    assert conv_factor(hw, "fp16", d) == pytest.approx(0.8)
    assert conv_factor(hw, "tf32", d) == pytest.approx(1.2 / 1.25)
    assert conv_factor(hw, "fp32", d) == pytest.approx(0.9)
    assert conv_factor(hw, "fp16", replace(d, conv_intensity_scaling=t(False))) == pytest.approx(0.4)


def test_shipped_conv_factors_reproduce_the_h200_measurements():
    cat = {hw.id: hw for hw in load_catalog()}
    h200, v100 = cat["h200-sxm"], cat["v100-sxm2-32gb"]
    assert conv_factor(h200, "fp16", DEFAULTS) == pytest.approx(DEFAULTS.conv_factor.value, rel=1e-12)
    assert conv_factor(h200, "tf32", DEFAULTS) == pytest.approx(DEFAULTS.conv_tf32_factor.value, rel=1e-12)
    # V100: 125 TFLOPS fp16 / 900 GB/s = 139 flop/B, FP32 SIMT 15.7 / 900 = 17 flop/B: both above the H200's
    assert conv_factor(v100, "fp32", DEFAULTS) > conv_factor(v100, "fp16", DEFAULTS) > DEFAULTS.conv_factor.value


def test_bandwidth_fraction_rules_match_architecture_and_memory_type():
    rule = Default(0.9, "test")
    d = replace(DEFAULTS, bandwidth_fraction_rules=t((("Volta", "HBM2", t(0.7)), (None, "GDDR6X", rule))),
                bandwidth_fraction=t({k: t(0.5) for k in ("HBM", "GDDR", "LPDDR")}))
    assert bandwidth_fraction(make_hardware(architecture="Volta", memory_type="HBM2"), d).value == 0.7
    assert bandwidth_fraction(make_hardware(architecture="Ampere", memory_type="HBM2e"), d).value == 0.5
    assert bandwidth_fraction(make_hardware(memory_type="GDDR6X"), d) is rule
    assert bandwidth_fraction(make_hardware(memory_type="GDDR6"), d).value == 0.5
    hw = make_hardware(architecture="Volta", memory_type="HBM2")
    assert device_perf(hw, defaults=d).bandwidth_bytes_per_s == pytest.approx(0.7 * 1000e9)


def test_hopper_attention_pays_whole_tiles_in_waves():
    """Hopper, 16 bits: 128 x 128 tiles, one block per SM in waves, a fixed block cost, products at the GEMM
    rate and the tile's exponentials at 16 per clock per SM (rates.tiled_attention_rate)."""
    from tops_advisor.roofline.rates import tiled_attention_rate

    hw = make_hardware(architecture="Hopper", boost_clock_mhz=1000, compute_units=100, citations={"memory_gb": "made-up", "memory_bandwidth_gb_s": "made-up", "compute_units": "made-up",
                                  "tdp_w": "made-up", "dense_tops": "made-up", "sparse_tops": "made-up",
                                  "boost_clock_mhz": "made-up"})
    d = replace(ROUND, attention_block_s=Default(1e-6, "test"), attention_hopper_native_fraction=Default(1.0, "t"),
                attention_hopper_fa2_fraction=Default(0.25, "test"))
    perf = device_perf(hw, defaults=d)  # 50 TOPS fp16 GEMMs: 0.5 TOPS per SM; 16e9 exponentials/s per SM

    def seconds(L, hd, bh):
        a = OpArrays.build(OpKind.ATTENTION, "fp16", m=[L], n=[L], k=[hd], batch_heads=[bh])
        return float(4.0 * L * L * hd * bh / tiled_attention_rate(a, perf, "fp16")[0])

    tile_64 = 128 * 128 * 64 * 4 / 0.5e12 + 128 * 128 / 16e9        # head dims up to 64 run the 64 kernel
    assert seconds(16, 32, 100) == pytest.approx(1e-6 + tile_64)    # one wave of 100 blocks, one tile each
    assert seconds(64, 48, 100) == pytest.approx(seconds(16, 32, 100))  # shorter or narrower costs the same
    assert seconds(256, 64, 100) == pytest.approx(2 * (1e-6 + 2 * tile_64))  # 2 query blocks: 2 waves, 2 tiles
    assert seconds(16, 32, 101) == pytest.approx(2 * seconds(16, 32, 100))   # one more block: a second wave
    fa2 = 128 * 128 * 64 * 4 / (0.5e12 * 0.25) + 128 * 128 / 16e9  # head dim 36: FlashAttention-2's kernel
    assert seconds(16, 36, 100) == pytest.approx(1e-6 + fa2)
    from tops_advisor.roofline.rates import attention_rate

    a = OpArrays.build(OpKind.ATTENTION, "fp16", m=[16], n=[16], k=[32], batch_heads=[100])
    assert attention_rate(a, perf, "fp16")[0] == tiled_attention_rate(a, perf, "fp16")[0]
    other = device_perf(make_hardware(boost_clock_mhz=1000, compute_units=100, citations=hw.citations),
                        defaults=d)  # not Hopper: FlashAttention-2's efficiency model, not re-measured
    assert attention_rate(a, other, "fp16")[0] != tiled_attention_rate(a, other, "fp16")[0]


def test_nchw_bilinear_upsampling_loops_over_batch_and_channels():
    """PyTorch's NCHW kernel: one thread per output position loops over batch x channels (a floor of
    waves x iterations x bilinear_iteration_s); a channels-last input takes the NHWC kernel (a plain copy)."""
    import torch
    import torch.nn.functional as F

    from tops_advisor.counting import count_module

    class Up(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(x, size=(20, 20), mode="bilinear")

    d = replace(ROUND, bilinear_iteration_s=Default(100e-9, "test"), resident_threads_per_unit=t(2.0))
    perf = device_perf(HW, defaults=d)   # 100 units x 2 threads: 200 positions per wave
    nchw = count_module(Up(), (torch.empty(4, 8, 10, 10, device="meta"),), "fp16")
    op = nchw.ops[0]
    assert op.family == "bilinear_upsample" and (op.gemm.m, op.gemm.n) == (400, 32)
    loop_s = 2 * 32 * 100e-9                                   # 400 positions: 2 waves of 32 iterations
    assert predict(nchw, HW, perf=perf).device_time_s >= loop_s
    last = torch.empty(4, 8, 10, 10, device="meta").to(memory_format=torch.channels_last)
    nhwc = count_module(Up(), (last,), "fp16")
    assert nhwc.ops[0].family == "" and predict(nhwc, HW, perf=perf).device_time_s < loop_s


def test_thin_input_convolution_runs_at_the_cuda_core_rate():
    """A 3-channel fp16 stem convolution cannot use tensor-core tiles: on an architecture where this was
    measured its rate is a share of the FP32 CUDA-core peak (10 TFLOPS here), not of the fp16 tensor peak; an
    8-channel one keeps the tensor rate, and so does any convolution on an architecture not measured."""
    perf = device_perf(HW, defaults=replace(ROUND, thin_conv_architectures=t(("Toy",))))

    def conv(n: int, cin: int, window: int, stride: int = 1):
        w = one_op(1e11, 1e3, kind="conv", gemm=GemmShape(64 * 112 * 112, n, cin * window, 1, window=window,
                                                          spatial_dims=2, stride=stride))
        return predict(w, HW, perf=perf).ops[0].compute_s, run(w).ops[0].compute_s

    thin, elsewhere = conv(32, 3, 9, stride=2)
    share = ROUND.thin_conv_fp32_factor.value * 27 / (27 + ROUND.thin_conv_k0.value)
    assert thin == pytest.approx(1e11 / (10e12 * share))
    assert elsewhere < thin / 2
    wide, _ = conv(32, 8, 9)
    assert wide < thin / 2
    # the ResNet stem (7x7, stride 2, 64 outputs) has cuDNN's tensor-core first-layer kernel
    stem, _ = conv(64, 3, 49, stride=2)
    assert stem == pytest.approx(1e11 / (100e12 * ROUND.first_layer_conv_factor.value))

def test_thin_input_convolution_channels_last_runs_cudnns_indexed_kernel():
    """Channels-last (inductor's layout) thin stems run cuDNN's indexed NHWC tensor-core kernel: a share of
    the datasheet fp16 peak (100 TFLOPS here) with the same K / (K + K0) term and a 32-output tile, so 16
    outputs run at half the rate of 32; the ResNet stem has its own channels-last factor."""
    from tops_advisor.workload import CHANNELS_LAST_FAMILY
    perf = device_perf(HW, defaults=replace(ROUND, thin_conv_architectures=t(("Toy",))))

    def conv(n: int, cin: int, window: int, stride: int = 1, family: str = CHANNELS_LAST_FAMILY):
        w = one_op(1e11, 1e3, kind="conv", family=family,
                   gemm=GemmShape(64 * 112 * 112, n, cin * window, 1, window=window, spatial_dims=2,
                                  stride=stride))
        return predict(w, HW, perf=perf).ops[0].compute_s

    share = ROUND.thin_conv_channels_last_factor.value * 27 / (27 + ROUND.thin_conv_k0.value)
    assert conv(32, 3, 9, stride=2) == pytest.approx(1e11 / (100e12 * share))
    assert conv(16, 3, 9, stride=2) == pytest.approx(2 * conv(32, 3, 9, stride=2))
    assert conv(32, 3, 9, stride=2) != pytest.approx(conv(32, 3, 9, stride=2, family=""))
    stem = conv(64, 3, 49, stride=2)
    assert stem == pytest.approx(1e11 / (100e12 * ROUND.first_layer_channels_last_factor.value))


def test_matmul_fraction_per_architecture_and_precision_comes_first():
    # Toy architecture: fp16 at 0.25 of its 100 TOPS, the others at the vendor's 0.5
    d = replace(ROUND, matmul_fraction_by_architecture_precision=t({("Toy", "fp16"): t(0.25)}))
    perf = device_perf(HW, defaults=d)
    assert perf.matrix_ops_per_s["fp16"] == pytest.approx(25e12)
    assert perf.matrix_ops_per_s["fp32"] == pytest.approx(5e12)
    other = device_perf(make_hardware(architecture="Other"), defaults=d)
    assert other.matrix_ops_per_s["fp16"] == pytest.approx(50e12)


def test_simt_convolutions_ramp_over_k_in_time_not_in_k():
    """The K ramp's fixed time per tile, set by gemm_k_half K steps of the reference tensor-core tile, over
    the time of one K step of a SIMT tile (rates.simt_conv_k_half): slow SIMT steps amortise it in few K."""
    from tops_advisor.roofline.rates import simt_conv_k_half

    hw = make_hardware(dense_tops={"fp32": 10, "fp16": 100})   # no TF32: fp32 convolutions run on SIMT units
    d = replace(ROUND, gemm_k_half=t(48.0), gemm_k_half_reference_tile=t({"rows": 128.0, "cols": 256.0}),
                gemm_k_half_reference_rate_per_unit=Default(8e11, "test"))
    perf = device_perf(hw, defaults=d)
    # fixed time 48 x 2 x 128 x 256 / 8e11 = 3.93 us; SIMT step 2 x 128 x 128 / (5 TOPS / 100 units) = 0.655 us
    assert simt_conv_k_half(perf, "fp32") == pytest.approx(6.0)
    # a SIMT tile faster per step than the reference keeps the constant
    fast = device_perf(hw, defaults=replace(d, gemm_k_half_reference_rate_per_unit=Default(1e9, "test")))
    assert simt_conv_k_half(fast, "fp32") == 48.0

    def compute_s(k, kind="conv", dtype="fp32"):
        w = one_op(1e12, 1e3, kind=kind, dtype=dtype, gemm=GemmShape(4096, 256, k, 1, window=1, spatial_dims=2))
        return predict(w, hw, perf=perf).ops[0].compute_s

    # same operations, K 6 vs 12: conv ramps 6/12 and 12/18 (k_half 6); a SIMT matmul 6/54 and 12/60 (48)
    assert compute_s(6) / compute_s(12) == pytest.approx((12 / 18) / (6 / 12))
    assert compute_s(6, "matmul") / compute_s(12, "matmul") == pytest.approx((12 / 60) / (6 / 54))
    # tensor-core convolutions keep the constant
    assert compute_s(16, dtype="fp16") / compute_s(32, dtype="fp16") == pytest.approx((32 / 80) / (16 / 64))
