"""BERT-Large for SQuAD question answering as MLPerf Inference runs it (``bert-99``): the 24-layer encoder of
``bert_large.py`` (hidden 1024, 16 heads, FFN 4096) at 384 tokens per sequence, with the span head (a linear
layer to start/end logits, 1024 -> 2) in place of the pooler. Plain torch, random weights.

MLPerf's reference (mlcommons/inference ``language/bert``) feeds SQuAD v1.1 padded to max_seq_length 384;
NVIDIA's TensorRT harness skips the padding (variable-length kernels), so this fixed-shape count is what a
padded engine computes: an upper bound on theirs (docs/tensorrt.md). ``example_inputs(batch, sequence=N)``
(``--seq N``) counts N tokens per sequence instead: a fixed-length engine built for N (TensorRT's BERT demo
runs 128 and 384), or a packed variable-length engine at its data's mean length."""

import torch
from _blocks import PostNormEncoderLayer
from bert_large import FFN, HEADS, HIDDEN, LAYERS, VOCAB, Embeddings
from torch import nn

SEQUENCE = 384


class BertSquad(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layers = nn.ModuleList(PostNormEncoderLayer(HIDDEN, HEADS, FFN, eps=1e-12) for _ in range(LAYERS))
        self.qa_outputs = nn.Linear(HIDDEN, 2)

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.qa_outputs(x)


def build_model() -> nn.Module:
    return BertSquad()


def example_inputs(batch_size: int, sequence: int = SEQUENCE) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch_size, sequence))
