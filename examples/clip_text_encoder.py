"""The text encoder of CLIP ViT-B/32 (Radford et al. 2021, "Learning Transferable Visual Models From Natural
Language Supervision"): (batch, 77) token ids -> (batch, 512) text embeddings. 63,428,096 parameters (the
published ~63M text tower), 2.91 GMACs of linear layers + 0.07 GMACs of attention per text.

Plain torch, written from the paper and the layout of OpenAI's ``clip/model.py`` (no weights are loaded, no
tokenizer: the ids are made up). Shapes: vocabulary 49408, context 77, width 512, 12 layers, 8 heads of 64.
- token embedding + a learned positional embedding (77 x 512).
- each residual block, pre-LayerNorm (eps 1e-5): x + out_proj(attention(LayerNorm(x))), then
  x + c_proj(QuickGELU(c_fc(LayerNorm(x)))), QuickGELU(x) = x * sigmoid(1.702 x), MLP width 2048. Attention:
  one packed Linear 512 -> 1536 with bias (``nn.MultiheadAttention``'s in_proj) split into q, k, v of
  (batch, 8, 77, 64), ``F.scaled_dot_product_attention(q, k, v, attn_mask=mask)`` with the causal mask as an
  additive float (77, 77) buffer (-inf above the diagonal, 0 elsewhere), out_proj 512 -> 512 with bias.
- a final LayerNorm; the features at the end-of-text token (the position of the largest token id, 49407, found
  with argmax over the ids as CLIP does) times the 512 x 512 ``text_projection`` (no bias).

Parameter count, derived:
  token embedding 49408*512                                    =  25,296,896
  positional embedding 77*512                                  =      39,424
  layer  two LayerNorms 2 x 2*512                              =       2,048
         in_proj 512*1536 + 1536, out_proj 512*512 + 512        =   1,050,624
         c_fc 512*2048 + 2048, c_proj 2048*512 + 512            =   2,099,712  -> 3,152,384, x 12 = 37,828,608
  final LayerNorm 2*512                                        =       1,024
  text_projection 512*512                                      =     262,144
  total                                                        =  63,428,096
The 12 layers alone are 37,828,608; the embeddings (25,336,320), the final LayerNorm
and the projection make the whole text tower, 63.4M (CLIP ViT-B/32 is 151,277,313 parameters with the 87.8M
image tower and the logit scale). Everything is counted here.
Multiply-adds per text: the linears 12 x 77 x 3,145,728 = 2,906,652,672 (one per weight, 77 tokens) + the
projection of one token 262,144; attention QK^T and PV over the full 77 x 77 square (an additive mask is a
dense mask): 12 x 8 heads x 2 x 77 x 77 x 64 = 72,855,552.

Part of the seventh blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, CONTEXT, WIDTH, LAYERS, HEADS, MLP_WIDTH = 49408, 77, 512, 12, 8, 2048
HEAD_DIM = WIDTH // HEADS
START_OF_TEXT, END_OF_TEXT, TEXT_TOKENS = 49406, 49407, 20


class QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.in_proj = nn.Linear(WIDTH, 3 * WIDTH)
        self.out_proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, MLP_WIDTH), QuickGELU(), nn.Linear(MLP_WIDTH, WIDTH))

    def attention(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.in_proj(x).view(b, s, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)   # 3 x (b, 8, 77, 64)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(y.transpose(1, 2).reshape(b, s, WIDTH))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class CLIPTextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB, WIDTH)
        self.positional_embedding = nn.Parameter(torch.empty(CONTEXT, WIDTH))
        nn.init.normal_(self.positional_embedding, std=0.01)
        self.blocks = nn.ModuleList(ResidualAttentionBlock() for _ in range(LAYERS))
        self.ln_final = nn.LayerNorm(WIDTH)
        self.text_projection = nn.Parameter(torch.empty(WIDTH, WIDTH))
        nn.init.normal_(self.text_projection, std=WIDTH ** -0.5)
        self.register_buffer("attn_mask", torch.full((CONTEXT, CONTEXT), float("-inf")).triu(1),
                             persistent=False)

    def forward(self, text: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(text) + self.positional_embedding
        for block in self.blocks:
            x = block(x, self.attn_mask)
        x = self.ln_final(x)
        eot = x[torch.arange(x.shape[0], device=x.device), text.argmax(dim=-1)]    # (batch, 512)
        return eot @ self.text_projection


def build_model() -> nn.Module:
    return CLIPTextEncoder().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    """Start-of-text, 20 random tokens, end-of-text, then zeros to 77 (CLIP's padding)."""
    ids = torch.zeros(batch_size, CONTEXT, dtype=torch.int64)
    ids[:, 0] = START_OF_TEXT
    ids[:, 1:TEXT_TOKENS + 1] = torch.randint(0, START_OF_TEXT, (batch_size, TEXT_TOKENS))
    ids[:, TEXT_TOKENS + 1] = END_OF_TEXT
    return ids
