"""Counting a forward as it runs under CUDA-graph capture (counting/capture.py).

A model that asks ``torch.cuda.is_current_stream_capturing()`` is counted both ways (graph and compiled
mode captured, eager not); one that never asks is counted once. Transformers materialises the attention
mask under capture, which sends a vision model's SDPA (broadcast all-true mask) to the math path.
"""

from __future__ import annotations

import json

import pytest
import torch

from tops_advisor.api import ModelCosts
from tops_advisor.counting import count_module
from tops_advisor.counting.capture import capture_state, captured_for
from tops_advisor.counting.model_file import load_model_file
from tops_advisor.workload import NoteKind

MODEL_FILE = """
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

    def forward(self, x):
        x = self.a(x)
        if ASKS and torch.cuda.is_current_stream_capturing():
            x = self.b(x)
        return x


def build_model():
    return Model()


def example_inputs(batch_size):
    return torch.randn(batch_size, 16)
"""


def _model_file(tmp_path, asks: bool) -> str:
    path = tmp_path / f"asks_{asks}.py"
    path.write_text(f"ASKS = {asks}\n" + MODEL_FILE)
    return str(path)


def test_capture_state_answers_and_restores():
    real = torch.cuda.is_current_stream_capturing
    with capture_state(True) as probe:
        assert probe.asked is False
        assert torch.cuda.is_current_stream_capturing() is True
        assert probe.asked is True
    assert torch.cuda.is_current_stream_capturing is real
    with capture_state(False) as probe:
        assert torch.cuda.is_current_stream_capturing() is False
    assert probe.asked


def test_modes_that_run_captured():
    assert captured_for("graph") and captured_for("compiled") and not captured_for("eager")


def test_a_forward_that_asks_is_counted_on_the_captured_path(tmp_path):
    asks = load_model_file(_model_file(tmp_path, asks=True))   # one linear eagerly; a second only while captured
    x = torch.randn(4, 16)
    eager = count_module(asks.build(meta=False), x, "fp32")
    captured = count_module(asks.build(meta=False), x, "fp32", captured=True)
    assert eager.capture_sensitive and captured.capture_sensitive
    assert captured.flops == pytest.approx(2 * eager.flops)
    assert captured.captured and not eager.captured
    assert [n.kind for n in captured.notes] == [NoteKind.CAPTURED_PATH]
    assert "takes another path there" in captured.notes[0].text
    assert eager.notes == ()


def test_model_costs_counts_once_when_the_forward_never_asks(tmp_path):
    costs = ModelCosts(_model_file(tmp_path, asks=False), base_dtype="fp32", batches=(1, 2), mode="graph")
    counted = []
    real = costs._count
    costs._count = lambda *a, **k: counted.append(k["captured"]) or real(*a, **k)
    graph, eager = costs.at(4, mode="graph"), costs.at(4, mode="eager")
    assert counted == []              # both extrapolated from the graph-mode anchors, counted once
    assert graph.flops == pytest.approx(eager.flops)
    assert not graph.capture_sensitive
    assert graph.captured and not eager.captured      # one count, labelled with the path each mode asked for


def test_model_costs_counts_both_paths_when_the_forward_asks(tmp_path):
    costs = ModelCosts(_model_file(tmp_path, asks=True), base_dtype="fp32", batches=(1, 2), mode="graph")
    graph, eager = costs.at(4, mode="graph"), costs.at(4, mode="eager")
    assert graph.flops == pytest.approx(2 * eager.flops)


def _tiny_hf(tmp_path, name: str, **fields) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=128, **fields)))
    return f"hf:{path}"


def test_transformers_text_model_builds_its_mask_under_capture(tmp_path):
    pytest.importorskip("transformers")
    from tops_advisor.counting import count, load_model

    spec = _tiny_hf(tmp_path, "bert", model_type="bert", vocab_size=1000, architectures=["BertModel"])
    eager = count(load_model(spec, seq=17), batch=2, dtype="fp16")
    captured = count(load_model(spec, seq=17), batch=2, dtype="fp16", captured=True)
    assert eager.capture_sensitive                       # the mask functions ask when a padding mask is given
    names = [op.name for op in captured.ops]
    assert "aten.arange" in names and "aten.arange" not in [op.name for op in eager.ops]   # the mask, built
    assert "aten.bmm" not in names                       # a dense (batch, 1, q, kv) mask: a fused kernel takes it


def test_transformers_vision_model_under_capture_follows_the_library(tmp_path):
    """transformers 5.17 (the H200 image's) materialises the mask under capture even when none is given, and
    its broadcast last dimension sends SDPA to the fp32 math path; later versions (5.24) skip it when no
    mask is given, and the captured count is the eager one."""
    pytest.importorskip("transformers")
    from tops_advisor.counting import count

    # 32x32 pixels in 8x8 patches: 16 patches + [CLS] = 17 tokens; no attention_mask input
    spec = _tiny_hf(tmp_path, "vit", model_type="vit", image_size=32, patch_size=8, architectures=["ViTModel"])
    eager = count(spec, batch=2, dtype="fp16")
    captured = count(spec, batch=2, dtype="fp16", captured=True)
    assert not any(op.name == "aten.bmm" for op in eager.ops)       # one fused SDPA kernel per layer
    bmm = [op for op in captured.ops if op.name == "aten.bmm"]
    if eager.capture_sensitive:
        assert len(bmm) == 2 * 2 and all(op.dtype == "fp32" for op in bmm)   # QK^T and PV per layer, upcast
    else:
        assert [op.name for op in captured.ops] == [op.name for op in eager.ops]


class ReadsOutsideCapture(torch.nn.Module):
    """Checks its input on the host only when not captured (transformers' mask functions do this)."""

    def __init__(self, always: bool):
        super().__init__()
        self.a, self.always = torch.nn.Linear(16, 16), always

    def forward(self, x):
        if (self.always or not torch.cuda.is_current_stream_capturing()) and not torch.isfinite(x).all():
            x = x.nan_to_num()
        return self.a(x)


def _capture_fails(w) -> bool:
    return any(n.kind == NoteKind.CAPTURE_FAILS for n in w.notes)


def test_a_host_read_on_the_captured_path_says_capture_fails():
    x = torch.randn(4, 16, device="meta")
    assert _capture_fails(count_module(ReadsOutsideCapture(always=True).to("meta"), x, "fp16", captured=True))
    # read only outside capture: fine to capture, and eager does not claim otherwise
    assert not _capture_fails(count_module(ReadsOutsideCapture(always=False).to("meta"), x, "fp16", captured=True))
    assert not _capture_fails(count_module(ReadsOutsideCapture(always=False).to("meta"), x, "fp16"))


def test_notes_have_kinds_and_dump_as_their_text():
    x = torch.randn(4, 16, device="meta")
    w = count_module(ReadsOutsideCapture(always=True).to("meta"), x, "fp16", captured=True)
    assert [n.kind for n in w.notes] == [NoteKind.CAPTURE_FAILS]   # it never asks: no captured-path note
    assert w.notes[0].text.startswith("its forward reads a tensor's value on the host while captured (1x")
    assert json.loads(json.dumps(w.model_dump()))["notes"] == [w.notes[0].text]


def test_a_note_given_as_a_string_is_an_info_note():
    from tops_advisor.workload import Note, Workload

    w = Workload(name="w", batch=1, dtype="fp32", ops=(), notes=("derived from a count at fp16",))
    assert w.notes == (Note(NoteKind.INFO, "derived from a count at fp16"),)
    assert str(w.notes[0]) == "derived from a count at fp16" and "count at" in w.notes[0]


def test_a_forward_that_never_asks_and_reads_fails_capture_in_every_count():
    class Reads(torch.nn.Module):
        def forward(self, x):
            return x * 2 if bool((x > 0).any()) else x

    assert _capture_fails(count_module(Reads(), torch.randn(4, 16, device="meta"), "fp16"))


class MakesDeviceTensors(torch.nn.Module):
    """transformers' eager_mask under capture: torch.tensor(0.0, device=...) copies from pageable host memory;
    its caches start as torch.tensor([], device=...), which copies nothing."""

    def __init__(self, scalar: bool):
        super().__init__()
        self.scalar = scalar

    def forward(self, x):
        empty = torch.tensor([], device=x.device)
        if self.scalar and torch.cuda.is_current_stream_capturing():
            x = x + torch.tensor(0.0, device=x.device, dtype=x.dtype)
        return x + empty.numel()


def test_a_device_tensor_made_from_python_data_under_capture_fails_capture():
    x = torch.randn(4, 16, device="meta")
    assert _capture_fails(count_module(MakesDeviceTensors(scalar=True), x, "fp16", captured=True))
    assert not _capture_fails(count_module(MakesDeviceTensors(scalar=True), x, "fp16"))      # eager path: fine
    assert not _capture_fails(count_module(MakesDeviceTensors(scalar=False), x, "fp16", captured=True))


class DrawsOnTheHost(torch.nn.Module):
    """wav2vec2/data2vec-audio's layer drop: ``torch.rand([])`` with no device, compared on the host; plus a
    position table made on the host and moved to the model's device."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)

    def forward(self, x):
        draw = torch.rand([])
        skip = self.training and bool(draw * 2 < 0.1)   # eval: the draw is never read
        positions = torch.arange(x.shape[1]).to(x.device)
        return x if skip else self.a(x) + positions


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_operators_on_host_data_launch_no_kernel(device):
    """On the meta device the draw is a real CPU tensor; through fake tensors (a model built on the CPU)
    every tensor reads as the CPU, so host data is known by where it was made."""
    model, x = DrawsOnTheHost().to(device), torch.randn(4, 16, device=device)
    w = count_module(model, x, "fp32")
    names = [o.name for o in w.ops]
    assert "aten.rand" not in names and "aten.arange" not in names
    assert "aten.addmm" in names and names.count("aten.add") == 1   # the device add, after the move
    # moving the positions to the device copies pageable host memory: capture fails (XLNet's torch.eye(q).to(
    # mask), counted through fake tensors, failed capture on the H200 in blind round 24)
    assert _capture_fails(w)


def test_a_host_read_of_host_data_does_not_fail_capture():
    class ReadsHostData(torch.nn.Module):
        def forward(self, x):
            return x * float(torch.rand([]).item())

    w = count_module(ReadsHostData(), torch.randn(4, 16, device="meta"), "fp16", captured=True)
    assert not _capture_fails(w) and [o.name for o in w.ops] == ["aten.mul"]


class IndexesWithHostData(torch.nn.Module):
    """CSATv2's DCT stem: ``x[:, :, perm]`` with ``perm`` a Python list (or a CPU tensor): PyTorch copies the
    index to the device first, which a capture refuses (H200, blind round 23)."""

    def __init__(self, index: str):
        super().__init__()
        self.index = index
        self.perm = [3, 1, 2, 0]
        self.register_buffer("perm_buffer", torch.tensor(self.perm))   # moves with the model

    def forward(self, x):
        if self.index == "list":
            return x[:, self.perm]
        if self.index == "cpu tensor":
            return x[:, torch.tensor(self.perm)]
        return x[:, self.perm_buffer]


@pytest.mark.parametrize("index,fails", [("list", True), ("cpu tensor", True), ("buffer", False)])
def test_indexing_a_device_tensor_with_host_data_fails_capture(index, fails):
    model = IndexesWithHostData(index).to("meta")
    w = count_module(model, torch.randn(2, 4, device="meta"), "fp16", captured=True)
    assert _capture_fails(w) is fails
    assert [o.name for o in w.ops] == ["aten.index"]
