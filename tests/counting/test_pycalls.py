"""The counter counts the model's own Python calls (eager host work), not torch's nor its own."""

import pytest
import torch
from torch import nn

from tops_advisor.counting.counter import count_module
from tops_advisor.workload import NoteKind


def _helper(x):
    return x * 2


class Calls(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.n = n
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(self.n):
            x = _helper(x)
        return torch.nn.functional.layer_norm(self.lin(x), (8,))   # torch's Python wrapper: not counted


def test_python_calls_count_the_models_own_functions():
    x = torch.empty(2, 8, device="meta")
    w0 = count_module(Calls(0).to("meta"), x, "fp16")
    w5 = count_module(Calls(5).to("meta"), x, "fp16")
    assert w0.python_calls == 0
    assert w5.python_calls == 5
    # a real-tensor model counted through fake tensors: the fake-tensor machinery is not counted either
    assert count_module(Calls(3), torch.randn(2, 8), "fp32").python_calls == 3


def test_python_calls_cost_eager_host_time():
    """A host-bound eager forward: each Python call adds eager_python_call_s to the latency; graph mode pays
    nothing for them."""
    from dataclasses import replace

    from tops_advisor.catalog.loader import load_catalog
    from tops_advisor.roofline import predict
    from tops_advisor.roofline.defaults import DEFAULTS

    hw = load_catalog().get("h200-sxm")
    w = count_module(Calls(0).to("meta"), torch.empty(1, 8, device="meta"), "fp16")
    base, more = w, replace(w, python_calls=100)
    extra = predict(more, hw, mode="eager").latency_s - predict(base, hw, mode="eager").latency_s
    assert extra == pytest.approx(100 * DEFAULTS.eager_python_call_s.value, rel=1e-6)
    assert predict(more, hw, mode="graph").latency_s == predict(base, hw, mode="graph").latency_s


def test_module_calls_that_run_no_operator_are_counted_apart():
    """nn.Identity and eval-mode Dropout run no operator: their calls cost the call machinery alone."""
    model = nn.Sequential(nn.Linear(8, 8), nn.Identity(), nn.Dropout(0.1), nn.Identity()).eval()
    w = count_module(model.to("meta"), torch.empty(2, 8, device="meta"), "fp16")
    assert (w.module_calls, w.empty_module_calls) == (5, 3)   # the Sequential, the Linear and three empty ones


class CopiesFromCpu(nn.Module):
    """Makes a tensor on the CPU in forward and moves it to the input's device (Gemma-3's and MPNet's pattern
    that breaks CUDA-graph capture)."""

    def __init__(self, copy: bool):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.copy = copy

    def forward(self, x):
        if self.copy:
            x = x + torch.arange(8).to(x.device, x.dtype)
        return self.lin(x)


def test_a_forward_that_copies_a_cpu_tensor_to_the_device_is_noted():
    x = torch.empty(2, 8, device="meta")
    noted = count_module(CopiesFromCpu(True).to("meta"), x, "fp16").notes
    assert [n.kind for n in noted] == [NoteKind.CAPTURE_FAILS] and "(1x)" in noted[0].text
    assert count_module(CopiesFromCpu(False).to("meta"), x, "fp16").notes == ()
