"""BERT-base encoder (Devlin et al. 2018, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding") with its pooler, one forward over (batch, 128) token ids with a padding mask: 109,482,240
parameters (Hugging Face's ``BertModel`` of ``bert-base-uncased``), 10.87 GMACs of linear layers + 0.30 GMACs
of attention per sample; with "eager" attention.

Plain torch, written from the paper and Hugging Face's ``modeling_bert`` (no weights are loaded, no tokenizer:
the ids are made up). Shapes: vocabulary 30522, 512 positions, 2 token types, hidden 768, 12 layers, 12 heads
of 64, feed-forward 3072 with exact GELU, LayerNorm eps 1e-12, post-LayerNorm. Dropout does nothing in
inference and is left out.
- embeddings: word + position (0..127) + token type (all 0: ``token_type_ids`` is a buffer of zeros, as in
  HF) embeddings summed, then a LayerNorm.
- layer: x = LN(x + dense(attention(query, key, value projections of x))), then
  x = LN(x + dense(GELU(intermediate(x)))); every projection a Linear with bias.
- attention as HF's eager ``BertSelfAttention``: scores = q @ k.transpose(-1, -2) / sqrt(64) + extended_mask,
  probs = softmax(scores), ctx = probs @ v on (batch, 12, 128, 64) tensors, the (batch, 12, 128, 128) scores
  materialised; extended_mask = (1 - attention_mask[:, None, None, :]) * torch.finfo(dtype).min in the
  model's dtype (0 where a token is real, the most negative number where it is padding).
- pooler: tanh(Linear 768 -> 768) of the first token. The forward returns (sequence output, pooled output).

Parameter count, derived:
  word embedding 30522*768                                              = 23,440,896
  position embedding 512*768                                            =    393,216
  token type embedding 2*768                                            =      1,536
  embedding LayerNorm 2*768                                             =      1,536
  attention q, k, v, output 4*(768*768 + 768) + LayerNorm 2*768         =  2,363,904
  feed-forward 768*3072 + 3072 + 3072*768 + 768 + LayerNorm 2*768       =  4,723,968
  layer 2,363,904 + 4,723,968 = 7,087,872, x 12                         = 85,054,464
  pooler 768*768 + 768                                                  =    590,592
  total                                                                 = 109,482,240
Multiply-adds per sample (one per weight per token): layers 128 x 12 x (4*768*768 + 2*768*3072) =
10,871,635,968, pooler 768*768 = 589,824 on one token; 10,872,225,792 of linears. Attention (q @ k^T and
probs @ v): 12 layers x 12 heads x 2 x 128*128*64 = 301,989,888, over the full square (the mask is added, not
skipped).

Part of the ninth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import math

import torch
import torch.nn.functional as F
from _blocks import split_heads
from torch import nn

VOCAB, MAX_POSITIONS, TYPES = 30522, 512, 2
HIDDEN, LAYERS, HEADS, FFN = 768, 12, 12, 3072
HEAD_DIM = HIDDEN // HEADS
SEQ_LEN, PADDED = 128, 32
LN_EPS = 1e-12


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor, extended_mask: torch.Tensor) -> torch.Tensor:
        q = split_heads(self.query(x), HEADS, HEAD_DIM)                         # (b, 12, s, 64)
        k, v = split_heads(self.key(x), HEADS, HEAD_DIM), split_heads(self.value(x), HEADS, HEAD_DIM)
        scores = q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM) + extended_mask     # (b, 12, s, s)
        probs = F.softmax(scores, dim=-1)
        ctx = probs @ v
        return ctx.transpose(1, 2).reshape(x.shape)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.attention_output = nn.Linear(HIDDEN, HIDDEN)
        self.attention_norm = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.intermediate = nn.Linear(HIDDEN, FFN)
        self.output = nn.Linear(FFN, HIDDEN)
        self.output_norm = nn.LayerNorm(HIDDEN, eps=LN_EPS)

    def forward(self, x: torch.Tensor, extended_mask: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.attention_output(self.attention(x, extended_mask)))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertBase(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN, padding_idx=0)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.token_type_embeddings = nn.Embedding(TYPES, HIDDEN)
        self.embedding_norm = nn.LayerNorm(HIDDEN, eps=LN_EPS)
        self.register_buffer("position_ids", torch.arange(MAX_POSITIONS).unsqueeze(0), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, MAX_POSITIONS, dtype=torch.int64), persistent=False)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = input_ids.shape[1]
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(self.token_type_ids[:, :s])
             + self.position_embeddings(self.position_ids[:, :s]))
        x = self.embedding_norm(x)
        dtype = x.dtype
        extended_mask = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        for layer in self.layers:
            x = layer(x, extended_mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


def build_model() -> nn.Module:
    return BertBase().eval()


def example_inputs(batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Made-up ids (101 = [CLS] first) and a mask: the last 32 positions of every other sequence are padding."""
    input_ids = torch.randint(1000, VOCAB, (batch_size, SEQ_LEN), dtype=torch.int64)
    input_ids[:, 0] = 101
    attention_mask = torch.ones(batch_size, SEQ_LEN, dtype=torch.int64)
    attention_mask[1::2, SEQ_LEN - PADDED:] = 0
    input_ids[1::2, SEQ_LEN - PADDED:] = 0
    return input_ids, attention_mask
