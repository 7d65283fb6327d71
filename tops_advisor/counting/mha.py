"""``nn.MultiheadAttention`` as CUDA runs it: one fused attention kernel between two GEMMs.

``nn.MultiheadAttention.forward`` calls the composite ``F.multi_head_attention_forward``. In inference with
``need_weights=False`` (torchvision's ViTs, among others), PyTorch on CUDA runs it as
``torch._native_multi_head_attention`` (the "fast path") or through ``F.scaled_dot_product_attention``: the
in-projection GEMM, one fused attention kernel (flash or memory-efficient), the out-projection GEMM. On the
meta device neither path is taken and the composite decomposes into the math path (fp32 upcasts, bmm,
softmax), which a counter sees because a torch-function mode is not active inside the composite it
intercepts. So the counter runs the composite uncounted and records the three kernels here.

With ``need_weights=True`` the attention weights are materialised on CUDA too: that call is counted as it
decomposes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

MHA_FUNCTION = F.multi_head_attention_forward


def fused_on_cuda(args: tuple, kwargs: dict) -> bool:
    """Whether this ``F.multi_head_attention_forward`` call runs one fused attention kernel on CUDA: weights not
    asked for, one packed in-projection weight, no extra key/value bias rows."""
    def arg(i: int, name: str, default=None):
        return args[i] if len(args) > i else kwargs.get(name, default)

    return (not arg(15, "need_weights", True) and not arg(17, "use_separate_proj_weight", False)
            and arg(5, "in_proj_weight") is not None and arg(7, "bias_k") is None and not arg(9, "add_zero_attn"))


def record_fused(record, args: tuple, kwargs: dict, out) -> None:
    """Record the three kernels of a fused call with ``record(name, args, kwargs, out)`` (the counter's
    ``CountingRun.record``): in-projection addmm, scaled-dot-product attention, out-projection addmm. Inputs are
    (length, batch, embed) as the composite receives them."""
    query, key = args[0], args[1]
    heads, w_in, b_in, w_out, b_out = args[4], args[5], args[6], args[11], args[12]
    length, batch, embed = query.shape
    source = key.shape[0]
    mask = args[16] if len(args) > 16 else kwargs.get("attn_mask")

    def empty(*shape):
        return torch.empty(*shape, device="meta", dtype=query.dtype)

    qkv = empty(length * batch, 3 * embed)
    flat = query.reshape(length * batch, embed)
    record("aten.addmm" if b_in is not None else "aten.mm",
           (b_in, flat, w_in.t()) if b_in is not None else (flat, w_in.t()), {}, qkv)
    head_dim = embed // heads
    q, k, v = empty(batch, heads, length, head_dim), empty(batch, heads, source, head_dim), \
        empty(batch, heads, source, head_dim)
    attended = empty(batch, heads, length, head_dim)
    record("aten.scaled_dot_product_attention", (q, k, v, mask) if isinstance(mask, torch.Tensor) else (q, k, v),
           {}, attended)
    result = out[0] if isinstance(out, tuple) else out
    flat_out = empty(length * batch, embed)
    record("aten.addmm" if b_out is not None else "aten.mm",
           (b_out, flat_out, w_out.t()) if b_out is not None else (flat_out, w_out.t()), {},
           result.reshape(length * batch, embed))
