"""TinyLlama-1.1B (Zhang et al. 2024, "TinyLlama: An Open-Source Small Language Model"; the LLaMA-2
architecture of Touvron et al. 2023) as a plain model file: the prefill of 256 tokens,
(batch, 256) token ids -> (batch, 256, 32000) logits. 1,100,048,384 parameters (the published count of
TinyLlama/TinyLlama-1.1B), 264.8 GMACs of linear layers + 2.95 GMACs of causal attention per sequence.

Plain torch, written from the paper and the layout of Hugging Face's ``LlamaForCausalLM`` (no weights are
loaded, no KV cache: one forward over the whole prompt). Shapes: 22 decoder layers, hidden 2048, 32 query
heads and 4 key/value heads of 64 (grouped-query attention, 8 query heads per KV head), SwiGLU MLP of
intermediate size 5632, vocabulary 32000, untied input embedding and LM head, no biases anywhere.
- RMSNorm written out by hand (eps 1e-5): x * rsqrt(mean(x^2 over the hidden size) + eps) * weight.
- Rotary position embeddings in the "rotate-half" form (theta 10000), computed in forward from the
  position ids 0..255: angles = position * theta^(-2i/64), cos/sin of the 64-wide (angles, angles).
- each layer: x + o_proj(attention(q_proj, k_proj, v_proj of RMSNorm(x))), then
  x + down_proj(silu(gate_proj(h)) * up_proj(h)) with h = RMSNorm(x). Attention: rotary on q and k, K and V
  repeated from 4 to 32 heads (expand + reshape, as Hugging Face's ``repeat_kv``: a real copy), then
  ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` on (batch, 32, 256, 64) tensors.
- a final RMSNorm and the LM head Linear 2048 -> 32000.

Parameter count, derived:
  embedding 32000*2048                                       =    65,536,000
  layer  q 2048*2048 + k, v 2 x 2048*256 + o 2048*2048        =     9,437,184
         gate, up, down 3 x 2048*5632                         =    34,603,008
         two RMSNorm weights 2 x 2048                         =         4,096  -> 44,044,288, x 22 = 968,974,336
  final RMSNorm 2048                                         =         2,048
  LM head 2048*32000                                         =    65,536,000
  total                                                      = 1,100,048,384
Multiply-adds per token of the linear layers: 22 x (9,437,184 + 34,603,008) + 65,536,000 = 1,034,420,224;
x 256 tokens = 264,811,577,344. Causal attention, QK^T and PV over the lower triangle (counted as half of the
square): 22 x 32 heads x 2 x 256 x 256 x 64 / 2 = 2,952,790,016.

Part of the sixth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE, VOCAB = 22, 2048, 32, 4, 64, 5632, 32000
SEQUENCE, EPS, ROPE_THETA = 256, 1e-5, 10000.0


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x: torch.Tensor, times: int) -> torch.Tensor:
    """(batch, kv_heads, seq, d) -> (batch, kv_heads * times, seq, d), each KV head next to its query heads."""
    b, h, s, d = x.shape
    return x[:, :, None].expand(b, h, times, s, d).reshape(b, h * times, s, d)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)          # (batch, 32, seq, 64)
        k = self.k_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)       # (batch, 4, seq, 64)
        v = self.v_proj(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, HEADS // KV_HEADS), repeat_kv(v, HEADS // KV_HEADS)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down_proj = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyLlama(nn.Module):
    def __init__(self, layers: int = LAYERS):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(layers))
        self.norm = RMSNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None]          # (1, seq)
        inv_freq = ROPE_THETA ** -(torch.arange(0, HEAD_DIM, 2, device=input_ids.device, dtype=torch.float32)
                                   / HEAD_DIM)
        angles = position_ids[..., None].to(torch.float32) * inv_freq                         # (1, seq, 32)
        angles = torch.cat((angles, angles), dim=-1)[:, None]                                 # (1, 1, seq, 64)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def build_model(layers: int = LAYERS) -> nn.Module:
    """The full 22-layer model; ``layers`` gives a shallower one of the same widths (for quick checks)."""
    return TinyLlama(layers).eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    """256 random token ids per item (batch, 256)."""
    return torch.randint(0, VOCAB, (batch_size, SEQUENCE))
