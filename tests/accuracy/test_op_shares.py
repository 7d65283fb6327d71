"""benchmarks/reports/op_shares.py: which group an operator's predicted time is summed into, and that the shares
of a prediction add up to its device time."""

from __future__ import annotations

import pytest

from tests.paths import load_script

shares = load_script("benchmarks/reports/op_shares.py", "op_shares")


@pytest.mark.parametrize("name,kind,bound,group", [
    ("aten.convolution", "conv", "compute", "conv compute"),
    ("aten.convolution", "conv", "memory", "conv memory"),
    # TensorRT lowering turns convolutions into implicit GEMMs (kind matmul): still convolutions, by name
    ("aten.convolution", "matmul", "compute", "conv compute"),
    ("aten.addmm", "matmul", "compute", "matmul"),
    ("aten.scaled_dot_product_attention", "attention", "memory", "matmul"),
    ("aten.native_batch_norm", "norm", "memory", "elementwise/norm"),
    ("aten.relu_", "elementwise", "memory", "elementwise/norm"),
    ("aten.relu_", "elementwise", "overhead", "launch"),
])
def test_groups(name, kind, bound, group):
    assert shares.group_of(name, kind, bound) == group


class _Op:
    def __init__(self, name, kind, bound, latency_s):
        self.name, self.kind, self.bound, self.latency_s = name, kind, bound, latency_s


class _Prediction:
    ops = [_Op("aten.convolution", "conv", "compute", 3e-3), _Op("aten.relu_", "elementwise", "memory", 1e-3)]


def test_shares_are_fractions_of_the_device_time():
    # 3 ms of convolution and 1 ms of ReLU: 3/4 and 1/4 of the 4 ms device time, nothing elsewhere
    s = shares.shares(_Prediction())
    assert s["conv compute"] == pytest.approx(0.75)
    assert s["elementwise/norm"] == pytest.approx(0.25)
    assert s["matmul"] == s["conv memory"] == s["launch"] == 0.0
