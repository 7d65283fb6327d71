"""BERT-Large encoder (24 layers, hidden 1024, 16 heads, FFN 4096) with pooler, sequence 128, plain torch,
random weights: 335,141,888 parameters (Hugging Face ``BertModel`` for bert-large-uncased).
Attention is ``F.scaled_dot_product_attention`` (one fused kernel on a GPU)."""

import torch
from _blocks import PostNormEncoderLayer
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, FFN, MAX_POSITIONS, SEQUENCE = 30522, 1024, 24, 16, 4096, 512, 128


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.position = nn.Embedding(MAX_POSITIONS, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        types = torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(positions) + self.token_type(types)
        return self.norm(x)


class BertLarge(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layers = nn.ModuleList(PostNormEncoderLayer(HIDDEN, HEADS, FFN, eps=1e-12) for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


def build_model() -> nn.Module:
    return BertLarge()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch_size, SEQUENCE))
