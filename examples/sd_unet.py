"""The Stable Diffusion 1.x UNet, plain torch, random weights: 859.52M parameters, one denoising step.

Model file for ``tops-advisor count examples/sd_unet.py --batch 2 --dtype fp16``.

The architecture of ``configs/stable-diffusion/v1-inference.yaml`` (CompVis/stable-diffusion, ``ldm``'s
``UNetModel``), written out by hand: 4-channel 64x64 latents (a 512x512 image / 8), model channels 320 with
multipliers 1, 2, 4, 4 (320 / 640 / 1280 / 1280), two ResBlocks per level, a SpatialTransformer (GroupNorm,
1x1 conv in, self-attention, cross-attention to the 77x768 CLIP text context, GEGLU feed-forward, 1x1 conv
out) after every ResBlock at the first three levels and in the middle, 8 heads, a 1280-wide timestep
embedding. Attention is ``F.scaled_dot_product_attention``. Published: 859.52M parameters (the ldm log
"DiffusionWrapper has 859.52 M params."); ``tests/accuracy/test_article_examples.py`` checks the count.

What one image costs. ``example_inputs(batch_size)`` is one UNet call on ``batch_size`` latents. A 512x512
image generated with 50 sampler steps (PLMS / DDIM, the SD 1.x default) and classifier-free guidance runs
the UNet 50 times on a batch of 2 (the conditional and the unconditional latent go through together, as
the reference scripts do): one image = 50 x (this model at batch 2), and N images at once = 50 x (batch 2N).
The text encoder (CLIP ViT-L/14, run once per prompt) and the VAE decoder (once per image, 64x64x4 to
512x512x3) are not modelled here, nor is the sampler's own arithmetic (a few elementwise operations on the
latents per step), so ``50 x`` a prediction from this file is a lower bound on the time per image.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

MODEL_CHANNELS = 320
CHANNEL_MULT = (1, 2, 4, 4)
ATTENTION_LEVELS = (0, 1, 2)  # downsample factors 1, 2, 4 in the config's attention_resolutions
NUM_RES_BLOCKS = 2
NUM_HEADS = 8
CONTEXT_DIM = 768
CONTEXT_TOKENS = 77
LATENT_CHANNELS = 4
LATENT_SIZE = 64
PUBLISHED_PARAMS = 859.52e6
# one 512x512 image with 50 steps and classifier-free guidance: 50 calls of this model at batch 2
STEPS = 50
CFG_BATCH = 2


def group_norm(channels: int, eps: float = 1e-5) -> nn.GroupNorm:
    return nn.GroupNorm(32, channels, eps=eps)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1).to(t.dtype)


class ResBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, emb_dim: int):
        super().__init__()
        self.in_layers = nn.Sequential(group_norm(c_in), nn.SiLU(), nn.Conv2d(c_in, c_out, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_dim, c_out))
        self.out_layers = nn.Sequential(group_norm(c_out), nn.SiLU(), nn.Conv2d(c_out, c_out, 3, padding=1))
        self.skip = nn.Identity() if c_in == c_out else nn.Conv2d(c_in, c_out, 1)

    def forward(self, x, emb):
        h = self.in_layers(x) + self.emb_layers(emb)[:, :, None, None]
        return self.skip(x) + self.out_layers(h)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, context_dim: int | None = None):
        super().__init__()
        self.heads = heads
        kv_dim = context_dim or dim
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(kv_dim, dim, bias=False)
        self.to_v = nn.Linear(kv_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        b, n, d = x.shape
        q, k, v = (t.view(b, -1, self.heads, d // self.heads).transpose(1, 2)
                   for t in (self.to_q(x), self.to_k(context), self.to_v(context)))
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class GEGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * hidden)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * F.gelu(gate)


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, heads: int, context_dim: int):
        super().__init__()
        self.norm1, self.attn1 = nn.LayerNorm(dim), Attention(dim, heads)
        self.norm2, self.attn2 = nn.LayerNorm(dim), Attention(dim, heads, context_dim)
        self.norm3 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(GEGLU(dim, 4 * dim), nn.Linear(4 * dim, dim))

    def forward(self, x, context):
        x = x + self.attn1(self.norm1(x))
        x = x + self.attn2(self.norm2(x), context)
        return x + self.ff(self.norm3(x))


class SpatialTransformer(nn.Module):
    def __init__(self, channels: int, heads: int, context_dim: int):
        super().__init__()
        self.norm = group_norm(channels, eps=1e-6)
        self.proj_in = nn.Conv2d(channels, channels, 1)
        self.block = TransformerBlock(channels, heads, context_dim)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x, context):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)   # (b, h*w, c)
        t = self.block(t, context)
        return x + self.proj_out(t.transpose(1, 2).reshape(b, c, h, w))


class Downsample(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.op = nn.Conv2d(channels, channels, 3, stride=2, padding=1)

    def forward(self, x):
        return self.op(x)


class Upsample(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Step(nn.Module):
    """One entry of the input/output block lists: ResBlock, then optionally attention and a resampler."""

    def __init__(self, res: ResBlock | None, attn: SpatialTransformer | None, resample: nn.Module | None):
        super().__init__()
        self.res, self.attn, self.resample = res, attn, resample

    def forward(self, x, emb, context):
        if self.res is not None:
            x = self.res(x, emb)
        if self.attn is not None:
            x = self.attn(x, context)
        if self.resample is not None:
            x = self.resample(x)
        return x


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        ch0, emb_dim = MODEL_CHANNELS, 4 * MODEL_CHANNELS
        self.time_embed = nn.Sequential(nn.Linear(ch0, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))
        self.conv_in = nn.Conv2d(LATENT_CHANNELS, ch0, 3, padding=1)
        skips, ch = [ch0], ch0
        self.down = nn.ModuleList()
        for level, mult in enumerate(CHANNEL_MULT):
            for _ in range(NUM_RES_BLOCKS):
                attn = SpatialTransformer(mult * ch0, NUM_HEADS, CONTEXT_DIM) if level in ATTENTION_LEVELS else None
                self.down.append(Step(ResBlock(ch, mult * ch0, emb_dim), attn, None))
                ch = mult * ch0
                skips.append(ch)
            if level != len(CHANNEL_MULT) - 1:
                self.down.append(Step(None, None, Downsample(ch)))
                skips.append(ch)
        self.mid_res1 = ResBlock(ch, ch, emb_dim)
        self.mid_attn = SpatialTransformer(ch, NUM_HEADS, CONTEXT_DIM)
        self.mid_res2 = ResBlock(ch, ch, emb_dim)
        self.up = nn.ModuleList()
        for level, mult in reversed(list(enumerate(CHANNEL_MULT))):
            for i in range(NUM_RES_BLOCKS + 1):
                res = ResBlock(ch + skips.pop(), mult * ch0, emb_dim)
                ch = mult * ch0
                attn = SpatialTransformer(ch, NUM_HEADS, CONTEXT_DIM) if level in ATTENTION_LEVELS else None
                up = Upsample(ch) if (level != 0 and i == NUM_RES_BLOCKS) else None
                self.up.append(Step(res, attn, up))
        self.out = nn.Sequential(group_norm(ch), nn.SiLU(), nn.Conv2d(ch, LATENT_CHANNELS, 3, padding=1))

    def forward(self, latents, timesteps, context):
        emb = self.time_embed(timestep_embedding(timesteps, MODEL_CHANNELS).to(latents.dtype))
        h = self.conv_in(latents)
        skips = [h]
        for step in self.down:
            h = step(h, emb, context)
            skips.append(h)
        h = self.mid_res2(self.mid_attn(self.mid_res1(h, emb), context), emb)
        for step in self.up:
            h = step(torch.cat([h, skips.pop()], dim=1), emb, context)
        return self.out(h)


def build_model() -> nn.Module:
    return UNet()


def example_inputs(batch_size: int):
    """Noisy latents (b, 4, 64, 64), one timestep per latent, and the (b, 77, 768) text context."""
    latents = torch.randn(batch_size, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE)
    timesteps = torch.full((batch_size,), 981.0)
    context = torch.randn(batch_size, CONTEXT_TOKENS, CONTEXT_DIM)
    return latents, timesteps, context
