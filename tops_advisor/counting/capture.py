"""Count a forward as it runs under CUDA-graph capture (graph mode) or torch.compile (compiled mode).

Some library code asks whether it is being captured and takes another path when it is. Hugging Face
transformers (5.x, ``utils.import_utils.is_tracing``: ``torch.cuda.is_current_stream_capturing()`` or dynamo
compiling) skips the attention mask only outside capture and compilation
(``masking_utils._ignore_bidirectional_mask_sdpa``, ``_ignore_causal_mask_sdpa``): a captured or compiled
forward hands ``scaled_dot_product_attention`` a materialised mask, which rules out the flash kernels and,
when its last dimension is broadcast (a vision model's all-true mask), every fused kernel. Measured on the
H200 (2026-12-01, transformers 5.17, torch 2.11): HF DeiT-tiny at batch 32 in fp16 ran cuDNN flash attention
eagerly (1.08 ms of kernels) and the fp32 math path once captured (cutlass SIMT SGEMM, fp32 softmax; the
graph replay took 2.81 ms); timm's DeiT-tiny, which never asks, ran the same kernels both ways (1.04 ms).

``capture_state(True)`` answers "yes" to that question for the length of a counted forward; either way it
notes whether the forward asked, so a model that never asks is counted once for every mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ..kinds import Mode


@dataclass
class CaptureProbe:
    """Whether the counted forward asked if it was being captured."""

    asked: bool = False


@contextmanager
def capture_state(captured: bool) -> Iterator[CaptureProbe]:
    """Within the block ``torch.cuda.is_current_stream_capturing()`` returns ``captured`` and records that
    it was called (the counted forward runs on the meta device or the CPU, where it would say False)."""
    probe = CaptureProbe()
    real = torch.cuda.is_current_stream_capturing

    def is_capturing() -> bool:
        probe.asked = True
        return captured

    torch.cuda.is_current_stream_capturing = is_capturing
    try:
        yield probe
    finally:
        torch.cuda.is_current_stream_capturing = real


def captured_for(mode: str) -> bool:
    """Whether a prediction mode's forward runs captured: graph (CUDA-graph capture) and compiled (dynamo
    traces it, then inductor's graph is captured) do, eager does not."""
    return mode != Mode.EAGER
