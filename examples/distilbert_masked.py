"""DistilBERT-base (Sanh et al. 2019, "DistilBERT, a distilled version of BERT: smaller, faster, cheaper and
lighter") without a head, sequence 128 with a padding attention mask: (input_ids, attention_mask) ->
(batch, 128, 768). 66,362,880 parameters (Hugging Face ``DistilBertModel`` of ``distilbert-base-uncased``,
"66M" in the paper).

Plain torch, written from the paper and Hugging Face's ``modeling_distilbert`` (no weights are loaded): word
(30522 x 768) and learned position (512 x 768) embeddings, summed and LayerNorm'd (no token-type embedding),
then 6 post-LN transformer layers (width 768, 12 heads of 64, q/k/v/out projections with bias, feed-forward
768 -> 3072 -> 768 with GELU). No pooler, no final norm. Dropout does nothing in inference and is left out.

Padding: ``example_inputs`` marks the last 32 of the 128 positions of every second sequence as padding
(attention_mask 0). The model turns the (batch, seq) mask into a boolean (batch, 1, 1, seq) ``attn_mask``
(True = attend), broadcast over heads and queries, and passes it to ``F.scaled_dot_product_attention``:
padded keys get no attention weight. Padded positions are still computed (as Hugging Face does).

Parameter count, derived:
  word embedding 30522*768                                   = 23,440,896
  position embedding 512*768                                 =    393,216
  embedding LayerNorm 2*768                                  =      1,536  -> 23,835,648
  layer  q, k, v, out 4*(768*768 + 768)                      =  2,362,368
         feed-forward 768*3072 + 3072 + 3072*768 + 768       =  4,722,432
         2 LayerNorms 2*2*768                                =      3,072  -> 7,087,872, x 6 = 42,527,232
  total                                                      = 66,362,880

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import PostNormEncoderLayer
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, FFN, MAX_POSITIONS = 30522, 768, 6, 12, 3072, 512
SEQUENCE, PADDING = 128, 32


class DistilBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.embedding_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(PostNormEncoderLayer(HIDDEN, HEADS, FFN, eps=1e-12) for _ in range(LAYERS))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.embedding_norm(self.word_embeddings(input_ids) + self.position_embeddings(positions))
        attn_mask = (attention_mask != 0)[:, None, None, :]      # (batch, 1, 1, seq), True = attend
        for layer in self.layers:
            x = layer(x, attn_mask)
        return x


def build_model() -> nn.Module:
    return DistilBert()


def example_inputs(batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids and a padding mask: the last 32 positions of sequences 1, 3, 5, ... are padding."""
    input_ids = torch.randint(0, VOCAB, (batch_size, SEQUENCE))
    attention_mask = torch.ones(batch_size, SEQUENCE, dtype=torch.long)
    attention_mask[1::2, SEQUENCE - PADDING:] = 0
    return input_ids, attention_mask
