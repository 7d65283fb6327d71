"""benchmarks/harness/llm_measure.py on the CPU: it runs, writes its JSON, and its model runs the kernels we model."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.paths import REPO

torch = pytest.importorskip("torch")

from tops_advisor.llm import build_workload, config_from_dict  # noqa: E402

SCRIPT = REPO / "benchmarks" / "harness" / "llm_measure.py"
VIEWS = {"view", "transpose", "unsqueeze", "slice", "expand", "t", "reshape", "_unsafe_view", "alias", "select",
         "as_strided", "detach", "_reshape_alias"}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("llm_measure", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_tiny_run_writes_results(bench, tmp_path):
    out = tmp_path / "r.json"
    assert bench.main(["--tiny", "--out", str(out), "--iters", "2", "--batches", "1,2", "--contexts", "16",
                       "--prefill", "32"]) == 0
    d = json.loads(out.read_text())
    rows = d["results"]
    assert [(r["phase"], r["batch"], r["context"]) for r in rows] == [
        ("decode", 1, 16), ("decode", 2, 16), ("prefill", 1, 32)]
    assert all(r["median_ms"] > 0 and r["iters"] >= 2 for r in rows)
    assert "predicted_ms" in rows[0] and d["environment"]["torch"] == torch.__version__


@pytest.mark.parametrize("seq, start", [(1, 64), (16, 0)])
def test_benchmark_model_runs_the_modelled_operators(bench, seq, start):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    model = bench.Decoder(bench.TINY, torch.device("cpu"))
    model.allocate_cache(2, 65)
    tokens = torch.zeros(2, seq, dtype=torch.long)
    positions = torch.arange(start, start + seq).expand(2, seq)
    counter = Count()
    with torch.inference_mode(), counter:
        model.forward(tokens, positions, start)
    real = [op for op in counter.ops if op not in VIEWS]
    phase = "decode" if seq == 1 else "prefill"
    w = build_workload(config_from_dict(bench.TINY), phase=phase, batch=2, context=start if seq == 1 else seq)
    assert len(real) == w.kernels


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_tiny_run_on_the_gpu_with_cuda_graphs(bench, tmp_path):
    out = tmp_path / "g.json"
    assert bench.main(["--tiny", "--device", "cuda", "--out", str(out), "--iters", "3", "--batches", "1,4",
                       "--contexts", "16,64", "--prefill", "64"]) == 0
    rows = json.loads(out.read_text())["results"]
    assert {r["mode"] for r in rows} == {"graph", "eager"}
    assert len(rows) == 2 * 2 * 2 + 2 and all(r["median_ms"] > 0 for r in rows)
