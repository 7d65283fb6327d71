"""Cost formulas of the operators that run on tensor cores: matrix products, convolutions, fused attention,
and the grouped GEMMs of mixture-of-experts layers (with their routing's vector work).

Two operations per multiply-add; each formula also reports the GEMM it runs (:class:`GemmShape`), which the
roofline reads for its efficiency curves.
"""

from __future__ import annotations

import math

from ... import opcosts as O
from ...kinds import OpKind
from ...workload import GemmShape
from .registry import Cost, OpCall, TensorInfo, int_tuple, register
from .vector import reduction


# Matrix products: 2 operations per multiply-add; the bias add of addmm is not counted (as in torch and
# fvcore: it is fused into the GEMM epilogue and negligible next to 2*m*n*k).
@register("aten.mm")
def mm(c: OpCall) -> Cost:
    (m, k), n = c.args[0].shape, c.args[1].shape[1]
    return Cost(OpKind.MATMUL, 2.0 * m * n * k, gemm=GemmShape(m, n, k))


@register("aten.addmm")
def addmm(c: OpCall) -> Cost:
    (m, k), n = c.args[1].shape, c.args[2].shape[1]
    return Cost(OpKind.MATMUL, 2.0 * m * n * k, gemm=GemmShape(m, n, k))


@register("aten.bmm")
def bmm(c: OpCall) -> Cost:
    (b, m, k), n = c.args[0].shape, c.args[1].shape[2]
    return Cost(OpKind.MATMUL, 2.0 * b * m * n * k, gemm=GemmShape(m, n, k, b))


@register("aten.baddbmm")
def baddbmm(c: OpCall) -> Cost:
    (b, m, k), n = c.args[1].shape, c.args[2].shape[2]
    return Cost(OpKind.MATMUL, 2.0 * b * m * n * k, gemm=GemmShape(m, n, k, b))


@register("aten.matmul")
def matmul(c: OpCall) -> Cost:
    a, b = c.args[0].shape, c.args[1].shape
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    m, k, n = a2[-2], a2[-1], b2[-1]
    batch = math.prod(c.out.shape) // max(1, (m if len(a) > 1 else 1) * (n if len(b) > 1 else 1))
    return Cost(OpKind.MATMUL, 2.0 * batch * m * n * k, gemm=GemmShape(m, n, k, batch))


@register("aten.dot", "aten.vdot")
def dot(c: OpCall) -> Cost:
    n = c.args[0].shape[0]
    return Cost(OpKind.MATMUL, 2.0 * n, gemm=GemmShape(1, 1, n))


@register("aten.mv")
def mv(c: OpCall) -> Cost:
    m, k = c.args[0].shape
    return Cost(OpKind.MATMUL, 2.0 * m * k, gemm=GemmShape(m, 1, k))


@register("aten.addmv")
def addmv(c: OpCall) -> Cost:
    m, k = c.args[1].shape
    return Cost(OpKind.MATMUL, 2.0 * m * k, gemm=GemmShape(m, 1, k))


# --------------------------------------------------------------------------------------------------------
# Convolution of every kind: aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
# output_padding, groups). Reported as its implicit GEMM.
@register("aten.convolution", "aten._convolution")
def convolution(c: OpCall) -> Cost:
    x, w = c.args[0], c.args[1]
    transposed, groups = bool(c.arg(6, "transposed", False)), int(c.arg(8, "groups", 1))
    batch = x.shape[0] if len(x.shape) == len(w.shape) else 1
    kernel = math.prod(w.shape[2:])
    if not transposed:
        # out[N, C_out, *S_out]: each output element is C_in/groups * kernel multiply-adds.
        m = batch * math.prod(c.out.shape[-(len(w.shape) - 2):])
        n, k = w.shape[0] // groups, w.shape[1] * kernel
    else:
        # weight[C_in, C_out/groups, *K]: each input element scatters into C_out/groups * kernel outputs.
        m = batch * math.prod(x.shape[-(len(w.shape) - 2):])
        n, k = w.shape[1] * kernel, w.shape[0] // groups
    # The convolution alone: PyTorch on CUDA adds the bias afterwards in a broadcast add over the output,
    # which the lowering inserts as an operator of its own (lowering.lower_pytorch_cuda, rewrite 1).
    return Cost(OpKind.CONV, 2.0 * m * n * k * groups, bytes_read=x.nbytes + w.nbytes,
                param_bytes=sum(t.nbytes for t in (x, w) if t.is_param),
                gemm=GemmShape(m, n, k, groups, window=kernel, spatial_dims=len(w.shape) - 2,
                               stride=max(int_tuple(c.arg(3, "stride", 1))), dilation=max(int_tuple(c.arg(5, "dilation", 1))),
                               plane=m // max(batch, 1)))


# --------------------------------------------------------------------------------------------------------
# Scaled-dot-product attention as ONE fused kernel (flash / memory-efficient): the operations of QK^T and
# PV over the query-key pairs computed (those the causal mask keeps when causal, O.causal_pairs); the bytes of
# Q, K, V, the mask and the output, nothing of the score matrix.
def _attention(c: OpCall, q: TensorInfo, k: TensorInfo, v: TensorInfo, causal: bool) -> Cost:
    *lead, lq, e = q.shape
    lk, ev = k.shape[-2], v.shape[-1]
    bh = math.prod(lead)
    pairs = O.causal_pairs(lq, lk) if causal else lq * lk
    flops = 2.0 * bh * pairs * e + 2.0 * bh * pairs * ev
    mask_bytes = sum(t.nbytes for t in c.inputs if all(t is not x for x in (q, k, v)))
    read = q.nbytes + k.nbytes + v.nbytes + mask_bytes
    return Cost(OpKind.ATTENTION, flops, bytes_read=read, bytes_written=c.out.nbytes,
                gemm=GemmShape(lq, lk, e, bh))


@register("aten.scaled_dot_product_attention")
def sdpa(c: OpCall) -> Cost:
    # (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(5, "is_causal", False)))


@register("aten._scaled_dot_product_flash_attention")
def sdpa_flash(c: OpCall) -> Cost:  # (query, key, value, dropout_p, is_causal, return_debug_mask, scale)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(4, "is_causal", False)))


@register("aten._scaled_dot_product_flash_attention_for_cpu")
def sdpa_flash_cpu(c: OpCall) -> Cost:  # (query, key, value, dropout_p, is_causal, *, attn_mask, scale)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(4, "is_causal", False)))


@register("aten._scaled_dot_product_efficient_attention")
def sdpa_efficient(c: OpCall) -> Cost:  # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(6, "is_causal", False)))


@register("aten._scaled_dot_product_cudnn_attention")
def sdpa_cudnn(c: OpCall) -> Cost:  # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(6, "is_causal", False)))


# --------------------------------------------------------------------------------------------------------
# Mixture of experts. transformers 5.x runs a MoE block's experts as grouped GEMMs by default
# (``config._experts_implementation`` "grouped_mm", transformers/integrations/moe.py): the router's top-k, a
# sort of the (token, expert) pairs by expert, histc of the expert ids and a cumsum for the offsets, a
# gather of the routed rows, then one grouped GEMM per projection (gate_up, down) over all experts at once.
#
# Routing assumption: on tensors without values the rows each expert gets are unknown; their total is not.
# ``mat_a`` holds all S = tokens * top_k routed rows, so the operations are exact: 2 * S * K * N. Which
# experts receive rows decides the weight bytes: an expert with no rows is skipped (CUTLASS's grouped kernel
# gives an empty problem no tiles; the fallback's mm of zero rows launches nothing), so only the experts hit
# are read. With each routed row on an expert drawn uniformly and independently, the expected number hit is
# E * (1 - (1 - 1/E)^S): all E when S >> E (prefill), about k at one decoded token. The LLM builder
# (``llm.builder.expected_experts_touched``) draws a token's k experts without repeats, E * (1 - (1 - k/E)^T);
# the two agree as S grows and differ most at one token (top-2 of 8: 1.875 here, 2 there). Real routers are
# skewed, which hits fewer experts: the uniform figure is the upper side of what a trained model reads.
def experts_hit(experts: int, rows: int) -> float:
    """Expected distinct experts among ``experts`` that ``rows`` uniform, independent picks hit."""
    if experts <= 0 or rows <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - 1.0 / experts) ** rows)


@register("aten._grouped_mm", "aten._scaled_grouped_mm")
def grouped_mm(c: OpCall) -> Cost:
    """_grouped_mm(mat_a, mat_b, offs=None, ...). The MoE forward is 2-D x 3-D: mat_a (S, K) are the routed
    rows sorted by expert, mat_b (E, K, N) every expert's matrix, offs (E,) where each expert's rows end.

    Flops: each row multiplies one expert's K x N matrix, 2 * S * K * N (exact). Bytes: mat_a, offs and the
    output, plus the matrices of the experts hit (``experts_hit``, the routing assumption above); a 3-D x 3-D
    call (a batched product) reads all of mat_b. Kernels: 2 on the GPU in bf16 (CUTLASS's
    prepare_grouped_gemm_data and the grouped GEMM, profiled on the H200, torch 2.11+cu130). fp16 and fp32 run
    PyTorch's fallback there instead (offsets copied to the host, then one mm per expert): the handle cannot
    tell fp16 from bf16 (it sees bytes per element), so that is left to the lowering (docs/counting.md, MoE).
    """
    a, b = c.args[0], c.args[1]
    if len(a.shape) == 2 and len(b.shape) == 2:      # weight gradients: (M, sum K) @ (sum K, N) -> (G, M, N)
        flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        groups, m = c.out.shape[0], a.shape[0]
        return Cost(OpKind.MATMUL, flops, gemm=GemmShape(m, b.shape[1], max(1, a.shape[1] // max(1, groups)), groups))
    k = a.shape[-1]
    flops = 2.0 * c.out.numel * k                    # every output element is a K-long dot product
    if len(a.shape) == 2 and len(b.shape) == 3:      # the MoE forward
        experts, rows, n = b.shape[0], a.shape[0], b.shape[-1]
        hit = experts_hit(experts, rows)
        weights = b.nbytes * hit / experts
        gemm = GemmShape(max(1, round(rows / hit)) if hit else 0, n, k, max(1, round(hit)))
    else:                                           # 3-D x 3-D (batched) or 3-D x 2-D: every operand read
        weights = b.nbytes
        gemm = GemmShape(a.shape[-2], c.out.shape[-1], k, a.shape[0] if len(a.shape) == 3 else 1)
    others = sum(t.nbytes for t in c.inputs if t is not b)
    return Cost(OpKind.MATMUL, flops, bytes_read=others + weights, param_bytes=weights if b.is_param else 0.0,
                kernels=2, gemm=gemm)


# Routing's vector work: histc/bincount count the pairs per expert (one accumulate per element), searchsorted
# does a binary search per element, scatter_reduce/index_reduce one reduction per source element.
register("aten.histc", "aten.bincount")(reduction(O.REDUCTION))
register("aten.argsort")(reduction(O.REDUCTION))


@register("aten.searchsorted")
def searchsorted(c: OpCall) -> Cost:
    # searchsorted(sorted_sequence, values): log2(len) comparisons per value
    seq, values = c.args[0], c.args[1]
    per = max(1.0, math.log2(max(2, seq.shape[-1]))) if seq.shape else 1.0
    n = values.numel if isinstance(values, TensorInfo) else 1
    return Cost(OpKind.REDUCTION, O.REDUCTION * per * n)


@register("aten.scatter_reduce", "aten.scatter_reduce_", "aten.index_reduce", "aten.index_reduce_")
def scatter_reduce(c: OpCall) -> Cost:
    # (self, dim, index, src/source, reduce, ...): one reduction per source element
    return Cost(OpKind.COPY, O.INDEX_ADD * c.args[3].numel)

