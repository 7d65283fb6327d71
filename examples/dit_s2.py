"""DiT-S/2 (Peebles & Xie 2023, "Scalable Diffusion Models with Transformers"), the class-conditional
diffusion transformer for 256x256 images: one denoising call on (batch, 4, 32, 32) VAE latents, a timestep and
a class label per latent -> (batch, 8, 32, 32) (predicted noise and the learned variance). 32,865,056
parameters (the published "33M"), 6.06 GMACs per call.

Plain torch, written from the paper and the layout of facebookresearch/DiT ``models.py`` (no weights are
loaded; PyTorch's default initialisation instead of DiT's, which zeroes the adaLN and output layers: the
shapes and the arithmetic are the same). Shapes: hidden 384, 12 blocks, 6 heads of 64, MLP ratio 4.
- patch embedding: Conv2d 4 -> 384, kernel 2, stride 2, with bias (32x32 -> 16x16 = 256 tokens), plus a
  fixed 2-D sin-cos positional embedding (256 x 384, a buffer: half the channels encode the column, half the
  row, each [sin, cos] over 96 frequencies 1/10000^(i/96)).
- conditioning c = t_emb + y_emb (batch, 384): t_emb = Linear 256 -> 384, SiLU, Linear 384 -> 384 on the
  sinusoidal frequency embedding of t ([cos, sin] of t * 10000^(-i/128), i < 128); y_emb from a
  1001 x 384 table (1000 classes + the null class of classifier-free guidance; no label dropout in inference).
- each block (adaLN-Zero): SiLU(c) -> Linear 384 -> 6*384 gives shift, scale, gate for attention and for the
  MLP; x = x + gate_msa * attn(LN(x) * (1 + scale_msa) + shift_msa), x = x + gate_mlp * mlp(LN(x) * (1 +
  scale_mlp) + shift_mlp); the LayerNorms have no affine parameters (eps 1e-6). Attention: one packed Linear
  384 -> 1152 with bias, ``F.scaled_dot_product_attention`` without mask, proj 384 -> 384 with bias. MLP
  384 -> 1536, GELU (tanh approximation), 1536 -> 384.
- final layer: SiLU(c) -> Linear 384 -> 2*384 (shift, scale), LN without affine, modulate, Linear 384 ->
  2*2*8 = 32; unpatchify (batch, 256, 32) -> (batch, 8, 32, 32).

Parameter count, derived:
  patch embedding 4*384*2*2 + 384                                        =      6,528
  timestep MLP 256*384 + 384 + 384*384 + 384                             =    246,528
  class table 1001*384                                                   =    384,384
  block  qkv 384*1152 + 1152, proj 384*384 + 384                        =    591,360
         MLP 384*1536 + 1536 + 1536*384 + 384                            =  1,181,568
         adaLN 384*2304 + 2304                                           =    887,040  -> 2,659,968, x 12
                                                                         = 31,919,616
  final layer: adaLN 384*768 + 768, linear 384*32 + 32                   =    308,000
  total                                                                  = 32,865,056
DiT's own count (``sum(p.numel() for p in model.parameters())``) is 32,963,360: its positional embedding is
an ``nn.Parameter`` with ``requires_grad=False``, 256*384 = 98,304 more; here it is a buffer.
Multiply-adds per call: patch embedding 256 x 6,144 = 1,572,864; timestep MLP 245,760; block linears
256 tokens x 12 x 1,769,472 = 5,435,817,984; adaLN 12 x 884,736 + 294,912 (one vector per sample) =
10,911,744; attention 12 x 6 x 2 x 256*256*64 = 603,979,776; final linear 256 x 12,288 = 3,145,728:
6,055,673,856 in all (the paper's Table 4 lists 6.06 Gflops, multiply-adds).

Part of the eighth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

LATENT_CHANNELS, LATENT_SIZE, PATCH = 4, 32, 2
HIDDEN, DEPTH, HEADS, MLP_RATIO = 384, 12, 6, 4
NUM_CLASSES, FREQUENCY_DIM = 1000, 256
OUT_CHANNELS = 2 * LATENT_CHANNELS                          # learned sigma: noise and variance
GRID = LATENT_SIZE // PATCH                                 # 16 x 16 tokens
HEAD_DIM = HIDDEN // HEADS


def timestep_embedding(t: torch.Tensor, dim: int = FREQUENCY_DIM, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def sincos_pos_embed_2d(dim: int, grid: int) -> torch.Tensor:
    """DiT's ``get_2d_sincos_pos_embed`` in torch: (grid*grid, dim), [column half, row half]."""
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim // 4))
    coords = torch.arange(grid, dtype=torch.float64)
    rows, cols = torch.meshgrid(coords, coords, indexing="ij")

    def one_axis(pos: torch.Tensor) -> torch.Tensor:
        out = pos.reshape(-1)[:, None] * omega[None]
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)

    return torch.cat([one_axis(cols), one_axis(rows)], dim=1).float()


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)    # 3 x (b, 6, 256, 64)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, n, HIDDEN))


class DiTBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(HIDDEN, elementwise_affine=False, eps=1e-6)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(HIDDEN, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, MLP_RATIO * HIDDEN), nn.GELU(approximate="tanh"),
                                 nn.Linear(MLP_RATIO * HIDDEN, HIDDEN))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(HIDDEN, 6 * HIDDEN))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))


class FinalLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_final = nn.LayerNorm(HIDDEN, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(HIDDEN, PATCH * PATCH * OUT_CHANNELS)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(HIDDEN, 2 * HIDDEN))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class DiT(nn.Module):
    def __init__(self):
        super().__init__()
        self.x_embedder = nn.Conv2d(LATENT_CHANNELS, HIDDEN, PATCH, stride=PATCH)
        self.t_embedder = nn.Sequential(nn.Linear(FREQUENCY_DIM, HIDDEN), nn.SiLU(), nn.Linear(HIDDEN, HIDDEN))
        self.y_embedder = nn.Embedding(NUM_CLASSES + 1, HIDDEN)                     # + the null class
        self.register_buffer("pos_embed", sincos_pos_embed_2d(HIDDEN, GRID)[None], persistent=False)
        self.blocks = nn.ModuleList(DiTBlock() for _ in range(DEPTH))
        self.final_layer = FinalLayer()

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        x = x.reshape(b, GRID, GRID, PATCH, PATCH, OUT_CHANNELS).permute(0, 5, 1, 3, 2, 4)   # n c h p w q
        return x.reshape(b, OUT_CHANNELS, GRID * PATCH, GRID * PATCH)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed              # (b, 256, 384)
        # the frequency embedding is computed in fp32 and cast to the model's dtype (as DiT's TimestepEmbedder)
        c = self.t_embedder(timestep_embedding(t).to(x.dtype)) + self.y_embedder(y)
        for block in self.blocks:
            x = block(x, c)
        return self.unpatchify(self.final_layer(x, c))


def build_model() -> nn.Module:
    return DiT().eval()


def example_inputs(batch_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Noisy latents, one timestep in [0, 1000) and one ImageNet class per latent."""
    x = torch.randn(batch_size, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE)
    t = torch.randint(0, 1000, (batch_size,), dtype=torch.int64)
    y = torch.randint(0, NUM_CLASSES, (batch_size,), dtype=torch.int64)
    return x, t, y
