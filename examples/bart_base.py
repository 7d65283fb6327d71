"""BART-base (Lewis et al. 2019, "BART: Denoising Sequence-to-Sequence Pre-training for Natural Language
Generation, Translation, and Comprehension"), one full encoder-decoder forward as in training-free scoring:
(batch, 256) source ids and (batch, 64) decoder ids -> (batch, 64, 50265) logits. 139,420,416 parameters
(Hugging Face's ``BartForConditionalGeneration`` of ``facebook/bart-base``, the shared embedding counted
once), 18.33 GMACs of linear layers + 0.79 GMACs of attention per sample.

Plain torch, written from the paper and Hugging Face's ``modeling_bart`` (no weights are loaded, no
tokenizer: the ids are made up). Shapes: vocabulary 50265, d_model 768, 6 encoder and 6 decoder layers,
12 heads of 64, feed-forward 3072 with GELU (exact), LayerNorm eps 1e-5, no embedding scaling
(``scale_embedding`` is false for bart-base). Dropout does nothing in inference and is left out; no padding
mask (every token is real).
- one token embedding of 50265 x 768 shared by the encoder, the decoder and the output projection (tied);
  learned positional embeddings of 1026 x 768 for each side, indexed with position + 2 (HF's offset), added
  to the token embeddings, then a LayerNorm (``layernorm_embedding``).
- encoder layer, post-LayerNorm: x = LN(x + out_proj(attention(q, k, v projections of x))), then
  x = LN(x + fc2(GELU(fc1(x)))). Every projection is a Linear with bias; attention is
  ``F.scaled_dot_product_attention`` (default 1/sqrt(64) scale, HF scales q by the same).
- decoder layer: causal self-attention (``is_causal=True``) + LN, cross-attention (queries from the decoder,
  keys and values projected from the final encoder output, SDPA without mask) + LN, feed-forward + LN.
- logits = decoder output @ shared embedding^T + ``final_logits_bias`` (a (1, 50265) buffer of zeros in HF).

Parameter count, derived:
  shared embedding 50265*768                                            = 38,603,520
  positional embeddings 2 x 1026*768                                    =  1,575,936
  embedding LayerNorms 2 x 2*768                                        =      3,072
  attention block q, k, v, out 4*(768*768 + 768) + LayerNorm 2*768      =  2,363,904
  feed-forward 768*3072 + 3072 + 3072*768 + 768 + LayerNorm 2*768       =  4,723,968
  encoder layer 2,363,904 + 4,723,968 = 7,087,872, x 6                  = 42,527,232
  decoder layer 2 x 2,363,904 + 4,723,968 = 9,451,776, x 6              = 56,710,656
  total                                                                 = 139,420,416
Multiply-adds per sample (one per weight per token): encoder linears 256 x 6 x 7,077,888 = 10,871,635,968;
decoder self-attention and feed-forward linears 64 x 6 x 7,077,888 = 2,717,908,992; cross-attention q and out
on 64 tokens 64 x 6 x 2*768*768 = 452,984,832, k and v on the 256 encoder tokens 256 x 6 x 2*768*768 =
1,811,939,328; logits 64 x 768 x 50265 = 2,470,625,280; 18,325,094,400 of linears. Attention (QK^T and PV):
encoder 6 x 12 x 2 x 256*256*64 = 603,979,776, decoder self 6 x 12 x 2 x 64*64*64 = 37,748,736 over the full
square (half of it under the causal mask), cross 6 x 12 x 2 x 64*256*64 = 150,994,944.

Part of the eighth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from _blocks import GeluMlp, split_heads
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, FFN = 50265, 768, 6, 12, 3072
MAX_POSITIONS, POSITION_OFFSET = 1024, 2
HEAD_DIM = D_MODEL // HEADS
SOURCE_LEN, TARGET_LEN = 256, 64
BOS, EOS, DECODER_START = 0, 2, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D_MODEL, D_MODEL)
        self.k_proj = nn.Linear(D_MODEL, D_MODEL)
        self.v_proj = nn.Linear(D_MODEL, D_MODEL)
        self.out_proj = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        source = x if memory is None else memory
        q = split_heads(self.q_proj(x), HEADS, HEAD_DIM)                        # (b, 12, s, 64)
        k, v = split_heads(self.k_proj(source), HEADS, HEAD_DIM), split_heads(self.v_proj(source), HEADS, HEAD_DIM)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out_proj(y.transpose(1, 2).reshape(x.shape))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.self_attn_layer_norm = nn.LayerNorm(D_MODEL)
        self.ffn = GeluMlp(D_MODEL, FFN)
        self.final_layer_norm = nn.LayerNorm(D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.self_attn_layer_norm(x + self.self_attn(x))
        return self.final_layer_norm(x + self.ffn(x))


class DecoderLayer(EncoderLayer):
    """The encoder layer with a cross-attention over the encoder's output between its two parts."""

    def __init__(self):
        super().__init__()
        self.encoder_attn = Attention()
        self.encoder_attn_layer_norm = nn.LayerNorm(D_MODEL)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        x = self.self_attn_layer_norm(x + self.self_attn(x, causal=True))
        x = self.encoder_attn_layer_norm(x + self.encoder_attn(x, memory))
        return self.final_layer_norm(x + self.ffn(x))


class Stack(nn.Module):
    """The encoder or the decoder: positional embedding, embedding LayerNorm, 6 layers."""

    def __init__(self, layer: type[nn.Module]):
        super().__init__()
        self.embed_positions = nn.Embedding(MAX_POSITIONS + POSITION_OFFSET, D_MODEL)
        self.layernorm_embedding = nn.LayerNorm(D_MODEL)
        self.layers = nn.ModuleList(layer() for _ in range(LAYERS))

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device) + POSITION_OFFSET
        return self.layernorm_embedding(tokens + self.embed_positions(positions))


class BartBase(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(VOCAB, D_MODEL)
        self.encoder = Stack(EncoderLayer)
        self.decoder = Stack(DecoderLayer)
        self.register_buffer("final_logits_bias", torch.zeros(1, VOCAB))

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        memory = self.encoder.embed(self.shared(input_ids))
        for layer in self.encoder.layers:
            memory = layer(memory)
        x = self.decoder.embed(self.shared(decoder_input_ids))
        for layer in self.decoder.layers:
            x = layer(x, memory)
        return F.linear(x, self.shared.weight) + self.final_logits_bias               # tied output projection


def build_model() -> nn.Module:
    return BartBase().eval()


def example_inputs(batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source: <s>, 254 random tokens, </s>; decoder: the start token </s>, <s>, 62 random tokens (the
    target shifted right, as HF's ``shift_tokens_right`` makes it)."""
    input_ids = torch.randint(4, VOCAB, (batch_size, SOURCE_LEN), dtype=torch.int64)
    input_ids[:, 0], input_ids[:, -1] = BOS, EOS
    decoder_input_ids = torch.randint(4, VOCAB, (batch_size, TARGET_LEN), dtype=torch.int64)
    decoder_input_ids[:, 0], decoder_input_ids[:, 1] = DECODER_START, BOS
    return input_ids, decoder_input_ids
