"""benchmarks/reports/op_accuracy.py: lining measured operator calls up with counted operators, and the classes it
reports by. The measurements themselves come from a GPU (benchmarks/harness/profile_records.py); here they are
written by hand."""

from __future__ import annotations

import importlib.util

from tests.paths import REPO
from tops_advisor.workload import GemmShape, OpRecord, Workload

SCRIPT = REPO / "benchmarks" / "reports" / "op_accuracy.py"


def _load():
    spec = importlib.util.spec_from_file_location("op_accuracy", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


OA = _load()


def _op(name: str, kind: str = "elementwise", **kw) -> OpRecord:
    return OpRecord(name, kind, "", 1.0, 1.0, 1.0, **kw)


def test_alignment_skips_views_and_unmatched_calls():
    # measured: [name, device us, kernels, kernel-name index]; views (aten.view) launch nothing and are not
    # counted; aten.clone was measured but the counter folded it away; aten.relu was counted but not measured.
    run = {"ops": [["aten.addmm", 10.0, 1, 0], ["aten.view", 0.0, 0, 1], ["aten.clone", 3.0, 1, 2],
                   ["aten.gelu", 2.0, 1, 3], ["aten.addmm", 12.0, 2, 0]]}
    w = Workload("w", 1, "fp16", (_op("aten.addmm", "matmul"), _op("aten.gelu"), _op("aten.relu"),
                                  _op("aten.addmm", "matmul")))
    got = OA.aligned(run, w)
    # counted op 0 <- measured addmm (10 us), 1 <- gelu (2 us), 3 <- the second addmm (12 us, 2 kernels)
    assert got == [(0, 10.0, 1), (1, 2.0, 1), (3, 12.0, 2)]


def test_op_classes():
    assert OA.op_class(_op("aten.convolution", "conv", gemm=GemmShape(100, 1, 9, 32))) == "conv depthwise"
    assert OA.op_class(_op("aten.convolution", "conv", gemm=GemmShape(100, 8, 72, 32))) == "conv grouped"
    assert OA.op_class(_op("aten.convolution", "conv", gemm=GemmShape(100, 64, 576, 1))) == "conv"
    assert OA.op_class(_op("aten.add", strided=True)) == "elementwise strided"
    assert OA.op_class(_op("aten.mm", "matmul")) == "matmul"
