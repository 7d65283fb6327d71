"""Which attention kernels a GPU runs for a ``scaled_dot_product_attention`` call, read from its inputs.

A fused kernel (flash, memory-efficient, cuDNN) is counted as the one kernel it is; a call no fused kernel
takes runs PyTorch's math path, counted kernel by kernel. Also here: the heads/sequence transpose of a fused
attention output, which is a view on a GPU (the eager lowering drops the copy after it).
"""

from __future__ import annotations

import torch

SDPA = "aten.scaled_dot_product_attention"
_FLASH_MAX_HEAD_DIM = 256


def qkv(args: tuple, kwargs: dict) -> tuple:
    """query, key and value of an SDPA call, by position or keyword."""
    return tuple(args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(("query", "key", "value")))


def swaps_heads_and_sequence(name: str, args: tuple) -> bool:
    """transpose(1, 2) or permute(0, 2, 1, 3) of a 4-D tensor."""
    if name == "aten.transpose" and len(args) >= 3:
        return {int(args[1]) % 4, int(args[2]) % 4} == {1, 2}
    if name == "aten.permute" and len(args) >= 2:
        return [int(d) % 4 for d in args[1]] == [0, 2, 1, 3]
    return False


def fused_sdpa_possible(args: tuple, kwargs: dict) -> bool:
    """Whether a fused SDPA kernel (flash, memory-efficient, cuDNN) can take these inputs on CUDA.

    PyTorch's kernel selection (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) rejects every fused
    kernel when query/key/value are not 4-D or when the last dimension of query, key, value or attn_mask does
    not have stride 1, and falls back to the math path. A contiguous mask (boolean or float) is taken by the
    memory-efficient kernel. Measured on the H200: DistilBERT's (batch, 1, 1, seq) boolean mask ran fused;
    Swin-T (5-D windows) and T5 (a permuted position bias) ran the math path.

    Head dimension (``check_head_dim_size_flash``, ``check_head_dim_size_mem_efficient``): flash takes 16-bit
    inputs without a mask up to 256 (it pads the head dimension to a multiple of 8); the memory-efficient and
    cuDNN kernels need it divisible by 16 bytes' worth of elements (8 in 16 bits, 4 in fp32). So a masked or
    fp32 call with an odd head dimension runs the math path: TinyBERT (head dimension 26) under CUDA-graph
    capture, where transformers passes its mask (H200, blind round 18: 1.22 ms replayed at b32, 0.48 ms of
    eager kernels).
    """
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    tensors = [t for t in qkv(args, kwargs) if isinstance(t, torch.Tensor)]
    if len(tensors) < 3 or any(t.dim() != 4 for t in tensors):
        return False
    masked = isinstance(mask, torch.Tensor)
    if masked:
        tensors.append(mask)
    if not all(t.size(-1) == 1 or t.stride(-1) == 1 for t in tensors):
        return False
    q, k, v = tensors[:3]
    half = q.dtype in (torch.float16, torch.bfloat16)
    flash = half and not masked and q.size(-1) == k.size(-1) == v.size(-1) <= _FLASH_MAX_HEAD_DIM
    align = 8 if half else 4
    return flash or (q.size(-1) == k.size(-1) and q.size(-1) % align == 0 and v.size(-1) % align == 0)
