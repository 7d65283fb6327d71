"""A model file whose ``example_inputs`` takes ``sequence=`` is counted at the tokens per sequence asked for
(``load_model(path, seq=N)``, the CLI's ``--seq``): what a fixed-length engine built for N computes, or a packed
variable-length engine at its data's mean length (benchmarks/reports/published_score.py, tokens_per_sample)."""

from __future__ import annotations

import pytest

from tops_advisor.counting import count, load_model
from tops_advisor.errors import ModelFileError

TEXT_MODEL = '''import torch
from torch import nn
import torch.nn.functional as F

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.proj = nn.Linear(16, 16)

    def forward(self, ids):
        q = self.proj(self.emb(ids)).unsqueeze(1)   # (batch, 1 head, sequence, 16)
        return F.scaled_dot_product_attention(q, q, q)

def build_model():
    return M()

def example_inputs(batch_size, sequence=32):
    return torch.randint(0, 100, (batch_size, sequence))
'''


@pytest.fixture
def text_model(tmp_path):
    path = tmp_path / "tiny_text.py"
    path.write_text(TEXT_MODEL)
    return path


def _flops(workload, kind: str) -> float:
    return sum(op.flops for op in workload.ops if op.kind == kind)


@pytest.mark.parametrize("seq", [None, 8, 20])
def test_tokens_per_sequence_set_the_token_and_attention_work(text_model, seq):
    s = 32 if seq is None else seq   # the file's default
    w = count(load_model(text_model, seq=seq), batch=2, dtype="fp16")
    # the projection: 2 ops x (2 sequences x s tokens) x 16 in x 16 out
    assert _flops(w, "matmul") == 2 * (2 * s) * 16 * 16
    # attention: two matmuls (QK^T and PV) of s x s x 16 per sequence and head: 2 x 2 x 2 x 1 x s x s x 16
    assert _flops(w, "attention") == 2 * 2 * 2 * 1 * s * s * 16
    assert any(f"{seq} tokens per sequence" in str(n) for n in w.notes) == (seq is not None)


def test_a_model_file_without_a_sequence_parameter_refuses_seq(tmp_path):
    path = tmp_path / "fixed.py"
    path.write_text("import torch\n\ndef build_model():\n    return torch.nn.Linear(8, 4)\n\n"
                    "def example_inputs(batch_size):\n    return torch.randn(batch_size, 8)\n")
    with pytest.raises(ModelFileError, match="takes no sequence length") as exc:
        load_model(path, seq=16)
    assert "sequence=DEFAULT" in exc.value.hint
    assert load_model(path).sequence is None   # without --seq it loads as before


def test_task_and_input_shape_still_apply_to_library_models_only(text_model):
    with pytest.raises(ModelFileError, match="--task applies to library models"):
        load_model(text_model, task="masked-lm")
