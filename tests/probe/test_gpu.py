"""GPU-only probe tests: skipped without CUDA. Their results on a real card are recorded in docs/probe.md."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_bf16_product_is_correct_and_timed():
    from tops_advisor.probe.gemm import make_gemm, measure_gemm
    from tops_advisor.probe.kit import CudaBackend

    backend = CudaBackend()
    r = measure_gemm(backend, "bf16", 1024, 1024, 1024, budget_s=0.01)
    # 2 * 1024^3 ops = 2.147e9; any positive time gives a positive rate
    assert r.ops == 2 * 1024**3
    assert r.tops > 0
    out = make_gemm("bf16", 256, 128, 64, "cuda")()
    assert out.shape == (256, 128) and torch.isfinite(out).all()


@pytest.mark.parametrize("precision", ["fp8", "int8"])
def test_low_precision_products_run(precision):
    from tops_advisor.probe.gemm import make_gemm, precision_support

    if precision_support(precision, "cuda"):
        pytest.skip(f"{precision} not supported on this card")
    out = make_gemm(precision, 64, 32, 128, "cuda")()
    assert out.shape == (64, 32)


def test_fp32_mode_matches_float64():
    from tops_advisor.probe.gemm import fp32_mode

    a, b = torch.randn(512, 512, device="cuda"), torch.randn(512, 512, device="cuda")
    ref = (a.double() @ b.double())
    with fp32_mode(False):
        err32 = ((a @ b).double() - ref).norm() / ref.norm()
    with fp32_mode(True):
        errtf = ((a @ b).double() - ref).norm() / ref.norm()
    assert err32 < 1e-5  # plain FP32: far under 1e-3
    assert errtf > err32  # TF32 keeps 10 mantissa bits: visibly less accurate


def test_quick_probe_end_to_end_on_gpu():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.probe.runner import run_probe

    r = run_probe("cuda", "quick", catalog=load_catalog(), progress=None)
    cal = r.calibration
    assert cal is not None and cal.backend == "cuda"
    assert cal.kernel_graph_us is not None and cal.kernel_eager_us is not None
    assert "bf16" in cal.measured_tops and cal.memory_bandwidth_gb_s > 0
