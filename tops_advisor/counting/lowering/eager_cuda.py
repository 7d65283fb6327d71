"""The eager lowering: counted operators -> the kernels eager PyTorch launches on a CUDA GPU.

Eager PyTorch on a CUDA GPU runs cuDNN convolutions and fused SDPA kernels. :func:`lower_pytorch_cuda` makes
four rewrites, the first three measured on the H200:

1. **Convolution bias after cuDNN.** PyTorch runs cuDNN's convolution without its bias and adds the bias
   afterwards in a broadcast add over the whole output: one more pass over it, in the non-vectorised
   elementwise kernel (H200 sweep: conv1d 144->288 at batch 32, the add took 7.6 us of 25 us). Inserted
   after the convolution as its own ``aten.add`` (kind elementwise, one operation per output element),
   marked ``strided`` for that kernel and ``internal`` (launched inside the convolution's call: no host
   dispatch of its own).
2. **SDPA head-dim padding in half precision.** Fused attention pads a head dimension that is not a multiple
   of 8 before the kernel (PyTorch's ``pad_last_dim<8>`` in aten/src/ATen/native/transformers/attention.cpp):
   for each of query, key and value a fill of the padded tensor and a strided copy into it (2 kernels).
   Profiled on the H200: a head dim of 36 (Conformer-S) launches 7 kernels where 40 launches 2. Inserted
   before the attention as ``aten.constant_pad_nd`` (kind copy, strided, internal).
3. **Attention copy elision.** Fused attention on a GPU writes (batch, seq, heads, dim) memory behind its
   (b, h, s, d) shape, so the usual ``transpose(1, 2).reshape(b, s, h*d)`` after it is a view there, not a
   copy (the math path on meta/CPU tensors returns (b, h, s, d) memory and copies): the clone is dropped.
   (``Workload.activation_peak_bytes`` still counts its output: it sets the peak in none of the examples.)

4. **Convolution input made contiguous.** PyTorch hands cuDNN (and its own depthwise kernels) a dense input:
   ``at::native::_convolution`` and ``cudnn_convolution`` call ``input.contiguous(memory_format)``
   (aten/src/ATen/native/Convolution.cpp, cudnn/ConvShared.cpp). A convolution whose input is a strided view
   (a channel slice of a batch, as ``torch.split`` gives MixNet's and Res2Net's mixed convolutions: its batch
   stride is that of the whole tensor) first copies it: a read and a write of the input, one copy kernel,
   inserted before the convolution as ``aten.contiguous`` (kind copy, strided, internal). At batch 1 the
   slice is dense and there is no copy. Found after blind round 13 (MixNet-M, graph -16% to -31% at batch 8
   to 128, -28% to -50% compiled at batch 32 while batch 1 was +15%).

Choosing the fused kernels themselves (SDPA and RMS norm counted as one kernel, SDPA's math path when no
fused kernel takes the inputs) stays in the counter (``attention_choice.py``): it decides which ATen operators run at all, and a
decomposition cannot be undone from the operator list.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...kinds import OpKind
from ...workload import OpRecord
from .facts import CountedOp, OpFacts

HALF_DTYPES = ("fp16", "bf16")
HEAD_DIM_ALIGNMENT = 8  # pad_last_dim<8>: flash and memory-efficient kernels take multiples of 8


def lower_pytorch_cuda(ops: Iterable[CountedOp]) -> tuple[OpRecord, ...]:
    """Eager PyTorch on a CUDA GPU: the rewrites of the module docstring, in operator order."""
    out: list[OpRecord] = []
    for record, facts, _flow in ops:
        if facts is None:
            out.append(record)
        elif not facts.copies_attention_output:
            out.extend(conv_input_copy(record, facts))
            out.extend(_head_dim_padding(record, facts))
            out.append(record)
            out.extend(_conv_bias_add(record, facts))
    return tuple(out)


def conv_input_copy(conv: OpRecord, facts: OpFacts) -> list[OpRecord]:
    """Rewrite 4: the dense copy of a strided convolution input, launched inside the convolution's call
    (inductor's lowering inserts it too)."""
    if not facts.conv_input_copy_bytes:
        return []
    n = facts.conv_input_copy_bytes
    return [OpRecord(name="aten.contiguous", kind=OpKind.COPY, module=conv.module, flops=0.0, bytes_read=n,
                     bytes_written=n, dtype=conv.dtype, kernels=1, strided=True, internal=True, phase=conv.phase)]


def _conv_bias_add(conv: OpRecord, facts: OpFacts) -> list[OpRecord]:
    """Rewrite 1: the bias add PyTorch launches after cuDNN, one pass over the output."""
    if facts.conv_bias_bytes is None:
        return []
    return [OpRecord(
        name="aten.add", kind=OpKind.ELEMENTWISE, module=conv.module, flops=float(facts.conv_out_elements),
        bytes_read=facts.conv_out_bytes + facts.conv_bias_bytes, bytes_written=facts.conv_out_bytes,
        param_bytes=facts.conv_bias_bytes, dtype=conv.dtype, kernels=1, strided=True, internal=True,
        phase=conv.phase)]


def _head_dim_padding(attention: OpRecord, facts: OpFacts) -> list[OpRecord]:
    """Rewrite 2: a fill and a strided copy for each half-precision q/k/v whose head dim is not aligned."""
    inputs = facts.attention_inputs
    if not inputs or inputs[0].dtype not in HALF_DTYPES:
        return []
    pads = []
    for t in inputs:
        if t.last_dim % HEAD_DIM_ALIGNMENT == 0:
            continue
        padded_dim = -(-t.last_dim // HEAD_DIM_ALIGNMENT) * HEAD_DIM_ALIGNMENT
        padded_bytes = t.numel // t.last_dim * padded_dim * t.itemsize
        pads.append(OpRecord(
            name="aten.constant_pad_nd", kind=OpKind.COPY, module=attention.module, flops=0.0,
            bytes_read=float(t.numel * t.itemsize), bytes_written=float(2 * padded_bytes), dtype=t.dtype,
            kernels=2, strided=True, internal=True, phase=attention.phase))
    return pads
