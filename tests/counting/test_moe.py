"""Mixture-of-experts models as transformers 5.x builds them: counted fully, in the dtype asked for.

transformers runs experts as grouped GEMMs by default (``aten._grouped_mm``), routed by topk, sort, histc and
cumsum. Before this, ``_grouped_mm`` and ``histc`` had no formula (all expert work counted as zero) and the
meta kernel of ``_grouped_mm`` refused fp16 and fp32. The routed rows are exact (tokens * top_k), so the
experts' operations are checked exactly; the experts hit (weight bytes) follow the documented uniform-routing
assumption (``handles.experts_hit``, docs/counting.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.counting.modules import as_module
from tops_advisor.counting import count, count_module, load_model
from tops_advisor.counting.handles import experts_hit
from tops_advisor.counting.meta_kernels import grouped_mm as grouped_mm_shape
from tops_advisor.workload import GemmShape, NoteKind

H, LAYERS, HEADS, KV_HEADS, VOCAB = 64, 2, 4, 2, 1000
EXPERTS, TOP_K, EXPERT_FFN = 4, 2, 128
HEAD_DIM = H // HEADS
ITEMSIZE = {"fp16": 2, "bf16": 2, "fp32": 4}




def _config(tmp_path: Path, name: str, **fields) -> Path:
    pytest.importorskip("transformers")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(fields))
    return path


@pytest.fixture
def mixtral(tmp_path):
    return _config(tmp_path, "mixtral", model_type="mixtral", hidden_size=H, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, num_local_experts=EXPERTS,
                   num_experts_per_tok=TOP_K, intermediate_size=EXPERT_FFN, vocab_size=VOCAB,
                   architectures=["MixtralForCausalLM"])


def _grouped(w):
    return [op for op in w.ops if op.name == "aten._grouped_mm"]


# --- the handle and the shape function on their own ---------------------------------------------------------
def test_experts_hit_uniform_routing():
    assert experts_hit(8, 2) == pytest.approx(8 * (1 - (7 / 8) ** 2))  # 1.875: two rows, top-2 of 8
    assert experts_hit(4, 512) == pytest.approx(4.0)                   # prefill: every expert
    assert experts_hit(4, 1) == pytest.approx(1.0)                     # one row, one expert
    assert experts_hit(4, 0) == 0.0


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_grouped_mm_formula(dtype):
    """(S, K) rows sorted by expert @ (E, K, N) expert matrices, offs marking where each expert's rows end."""
    rows, k, n, experts = 12, 16, 8, 3
    a, b = torch.randn(rows, k), torch.randn(experts, k, n)
    offs = torch.tensor([4, 8, 12], dtype=torch.int32)
    w = count_module(as_module(lambda a, b, offs: torch._grouped_mm(a, b, offs=offs)), (a, b, offs), dtype)
    (op,) = w.ops
    size = ITEMSIZE[dtype]
    hit = 3 * (1 - (2 / 3) ** 12)                                     # 2.9769 of 3 experts hit
    assert op.kind == "matmul" and op.kernels == 2 and not w.unsupported_ops
    assert op.flops == 2 * rows * k * n                               # 2 * 12 * 16 * 8 = 3072
    weights = experts * k * n * size * hit / experts                  # the experts hit are read
    assert op.bytes_read == pytest.approx(rows * k * size + 3 * 4 + weights)  # rows + int32 offs + weights
    assert op.bytes_written == rows * n * size                        # (12, 8) out
    assert op.gemm == GemmShape(m=4, n=8, k=16, batch=3)              # 12 rows / 2.98 experts, rounded


def test_routing_operators():
    ids = torch.randint(0, 8, (64,))
    cases = [  # (function, inputs, expected operations)
        (lambda x: torch.histc(x, bins=8, min=0, max=7), (ids.float(),), 64),           # 1 per element
        (lambda s, v: torch.searchsorted(s, v), (torch.arange(16.0), torch.rand(10)), 10 * 4),  # log2(16)
        (lambda x, i, s: x.scatter_reduce(0, i, s, "sum"), (torch.zeros(8), ids, torch.rand(64)), 64),
        (lambda x, i, s: x.index_reduce(0, i, s, "amax"), (torch.zeros(8), ids, torch.rand(64)), 64),
    ]
    for fn, inputs, ops in cases:
        w = count_module(as_module(fn), inputs, "fp32")
        assert not w.unsupported_ops, w.unsupported_ops
        assert sum(op.flops for op in w.ops) == ops


def test_grouped_mm_shape_function_layouts():
    meta = {"device": "meta"}
    offs = torch.empty(3, dtype=torch.int32, **meta)
    a2, b3 = torch.empty(12, 16, **meta), torch.empty(3, 16, 8, **meta)
    assert grouped_mm_shape(a2, b3, offs).shape == (12, 8)                          # MoE forward
    assert grouped_mm_shape(torch.empty(3, 5, 16, **meta), b3).shape == (3, 5, 8)   # batched
    assert grouped_mm_shape(torch.empty(3, 5, 16, **meta), torch.empty(16, 24, **meta),
                            offs).shape == (5, 24)                                  # 3-D x 2-D
    assert grouped_mm_shape(torch.empty(5, 12, **meta), torch.empty(12, 8, **meta),
                            offs).shape == (3, 5, 8)                                # weight gradients
    with pytest.raises(RuntimeError, match="contraction"):
        grouped_mm_shape(a2, torch.empty(3, 15, 8, **meta), offs)


# --- Mixtral as transformers builds it -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_mixtral_counts_fully_in_every_dtype(mixtral, dtype):
    batch, seq = 2, 16
    w = count(load_model(f"hf:{mixtral}", seq=seq), batch=batch, dtype=dtype)
    assert w.unsupported_ops == {}
    tokens = batch * seq
    # Expert GEMMs: each token's top-k rows go through gate, up (fused as one gate_up GEMM of 2I outputs)
    # and down: 2 * tokens * top_k * H * I * 3 per layer. Exact: the routed rows are tokens * top_k whatever
    # the routing, so no tolerance is needed.
    expert_flops = sum(op.flops for op in _grouped(w))
    assert len(_grouped(w)) == 2 * LAYERS
    assert expert_flops == LAYERS * 2 * tokens * TOP_K * H * EXPERT_FFN * 3  # 2 * 3 * 2*32*2*64*128 = 12.6 M
    # Prefill: 64 routed rows over 4 experts hit all of them (1 - (3/4)^64 = 1 - 1e-8): every weight is read.
    weights = LAYERS * EXPERTS * 3 * H * EXPERT_FFN * ITEMSIZE[dtype]
    assert sum(op.param_bytes for op in _grouped(w)) == pytest.approx(weights, rel=1e-6)
    assert all(op.dtype == dtype for op in _grouped(w))


def test_mixtral_matrix_work_against_hand_formula(mixtral):
    batch, seq = 2, 16
    w = count(load_model(f"hf:{mixtral}", seq=seq), batch=batch, dtype="bf16")
    t, kv = batch * seq, KV_HEADS * HEAD_DIM
    projections = 2 * t * H * (H + kv + kv + H)                   # q, k, v, o
    router = 2 * t * H * EXPERTS                                  # gate: H -> E logits
    experts = 2 * t * TOP_K * H * EXPERT_FFN * 3                  # gate, up, down of each routed row
    pairs = seq * (seq + 1) // 2                                  # causal query-key pairs
    attention = 2 * 2 * batch * HEADS * pairs * HEAD_DIM          # QK^T and PV
    head = 2 * t * H * VOCAB                                      # logits at every position
    matrix = LAYERS * (projections + router + experts + attention) + head
    counted = sum(op.flops for op in w.ops if op.kind in ("matmul", "attention"))
    rotary = 2 * (HEAD_DIM // 2) * seq   # transformers 5.17's rotary angles as a matmul, positions of batch 1
    assert counted in (matrix, matrix + rotary)
    # The rest is vector work (norms, rotary, SiLU, softmax, routing): a few operations per element of
    # (tokens x H) tensors against thousands per row in the GEMMs, so well under a tenth of the total here.
    vector = sum(op.flops for op in w.ops) - counted
    assert 0 < vector < 0.1 * matrix


def test_mixtral_one_token_reads_only_the_experts_hit(mixtral):
    """Decoding one token: top-2 rows; uniform routing hits 4 * (1 - (3/4)^2) = 1.75 of the 4 experts."""
    w = count(load_model(f"hf:{mixtral}", seq=1), batch=1, dtype="bf16")
    hit = EXPERTS * (1 - (1 - 1 / EXPERTS) ** TOP_K)
    per_layer = 3 * H * EXPERT_FFN * 2 * hit                      # gate, up, down of the experts hit, bf16
    assert sum(op.param_bytes for op in _grouped(w)) == pytest.approx(LAYERS * per_layer)
    assert sum(op.flops for op in _grouped(w)) == LAYERS * 2 * TOP_K * H * EXPERT_FFN * 3


def test_mixtral_fp16_and_bf16_count_alike(mixtral):
    model = load_model(f"hf:{mixtral}", seq=8)
    half, brain = count(model, 1, "fp16"), count(model, 1, "bf16")
    assert [(op.name, op.flops, op.bytes_read) for op in half.ops] == \
           [(op.name, op.flops, op.bytes_read) for op in brain.ops]


def test_mixtral_eager_experts_count_like_grouped(tmp_path):
    """The eager expert loop branches on routing values (a boolean host read answered True would skip every
    expert): such configs are counted as grouped GEMMs, with a note."""
    fields = json.loads(Path(_config(tmp_path, "m", model_type="mixtral", hidden_size=H, num_hidden_layers=LAYERS,
                                     num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                                     num_local_experts=EXPERTS, num_experts_per_tok=TOP_K,
                                     intermediate_size=EXPERT_FFN, vocab_size=VOCAB,
                                     architectures=["MixtralForCausalLM"])).read_text())
    eager = _config(tmp_path, "eager", **fields, experts_implementation="eager")
    w = count(load_model(f"hf:{eager}", seq=8), batch=1, dtype="bf16")
    expert_flops = sum(op.flops for op in w.ops if ".experts" in op.module and op.kind == "matmul")
    assert expert_flops == LAYERS * 2 * 8 * TOP_K * H * EXPERT_FFN * 3
    assert any(n.kind == NoteKind.SOURCE and "grouped GEMM" in n.text for n in w.notes)


# --- other MoE families (shared experts, MLA) --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("family", ["qwen2_moe", "deepseek_v2"])
def test_other_moe_families_count_fully(tmp_path, family, dtype):
    common = dict(hidden_size=H, num_hidden_layers=LAYERS, num_attention_heads=HEADS, vocab_size=VOCAB,
                  num_experts_per_tok=TOP_K, moe_intermediate_size=32, intermediate_size=EXPERT_FFN)
    if family == "qwen2_moe":
        fields = dict(common, model_type=family, num_key_value_heads=KV_HEADS, num_experts=EXPERTS,
                      shared_expert_intermediate_size=EXPERT_FFN, architectures=["Qwen2MoeForCausalLM"])
    else:  # MLA attention, one shared expert, the first layer dense
        fields = dict(common, model_type=family, num_key_value_heads=HEADS, n_routed_experts=EXPERTS,
                      n_shared_experts=1, first_k_dense_replace=1, kv_lora_rank=32, q_lora_rank=48,
                      qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, architectures=["DeepseekV2ForCausalLM"])
    batch, seq = 1, 8
    w = count(load_model(f"hf:{_config(tmp_path, family, **fields)}", seq=seq), batch=batch, dtype=dtype)
    assert w.unsupported_ops == {}
    moe_layers = LAYERS if family == "qwen2_moe" else LAYERS - 1
    assert sum(op.flops for op in _grouped(w)) == moe_layers * 2 * batch * seq * TOP_K * H * 32 * 3


# --- the CLI ---------------------------------------------------------------------------------------------
UNKNOWN_OP_MODEL = """
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.fft.rfft(self.fc(x)).abs()

def build_model():
    return M()

def example_inputs(batch_size):
    return (torch.randn(batch_size, 16),)
"""


@pytest.mark.slow
def test_analyze_reports_unsupported_operators_in_its_output(tmp_path):
    """A real process (pytest would capture the warning): the operator must be named in a line of the output
    meant for people, not only in Python's warning format."""
    path = tmp_path / "fft_model.py"
    path.write_text(UNKNOWN_OP_MODEL)
    result = subprocess.run([sys.executable, "-m", "tops_advisor", "analyze", str(path), "-H", "h200-sxm",
                             "--dtype", "fp32"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "_fft_r2c" in result.stdout + result.stderr
    assert "UnsupportedOpWarning" not in result.stderr
