"""Output tensors for operators whose meta kernel refuses a dtype the GPU runs them in.

Counting runs every operator on tensors without values (meta or fake), so each operator's *meta kernel* (its
shape function) runs instead of its CUDA kernel. A few meta kernels check more than shapes and refuse inputs
the CUDA kernel takes. The counter (``dispatch.OperatorCounter``) asks :func:`lookup` before calling an
operator; an operator listed here gets its output from the shape function below, which checks the shapes the
CUDA kernel checks and nothing about dtypes. The cost is still the handle's (``handles/``): this table only
lets the forward pass go on.

``aten._grouped_mm`` (the grouped GEMM of mixture-of-experts layers; transformers 5.x calls it through
``torch.nn.functional.grouped_mm`` by default, ``transformers/integrations/moe.py``). Its meta kernel in torch
2.14 (``torch/_meta_registrations.py``, ``_meta_grouped_mm_common``) accepts bf16, accepts fp16 only where a
CUDA >= 13.3 build runs on a GPU of compute capability 9 to 11 (cuBLASLt's grouped GEMM), and refuses fp32
("Expected mat_a to be BFloat16 or supported Float16 matrix"). The CUDA operator takes all three
(``_grouped_mm_validate_inputs`` in aten/src/ATen/native/GroupedMMUtils.h: "Float32, BFloat16 or Float16"):
bf16 runs CUTLASS's grouped kernel on SM90, fp16 and fp32 a fallback that loops over the experts with one
``mm`` each (``_grouped_mm_fallback``). Measured on the H200 (torch 2.11+cu130, transformers 5.17, a tiny
Mixtral): all three dtypes run. The shape function is used in every dtype, so a count does not depend on the
CUDA version of the machine that counts.

``aten._fused_sgd_`` (``torch.optim.SGD(fused=True)``) has no meta kernel at all in torch 2.14 ("no fake impl or
Meta kernel registered"), where ``_fused_adam_`` and ``_fused_adamw_`` have one. It updates its lists in place and
returns nothing; the stand-in checks the lists' lengths and returns nothing, so a fused SGD step can be counted.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

ShapeFunction = Callable[..., torch.Tensor | None]


def grouped_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: torch.Tensor | None = None,
               bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """``aten._grouped_mm``'s output (torch's ``_create_grouped_mm_output_tensor``, without its dtype checks).

    2-D x 3-D (the MoE forward: routed rows of all experts @ each expert's matrix, ``offs`` marking where each
    expert's rows end): (rows, N). 3-D x 2-D: (M, total N). 2-D x 2-D (weight gradients): (groups, M, N).
    3-D x 3-D: a batched product, (groups, M, N).
    """
    a2, b2 = mat_a.dim() == 2, mat_b.dim() == 2
    if a2 or b2:
        torch._check(offs is not None, lambda: "grouped_mm: offs is needed with a 2-D operand")
    if mat_a.size(-1) != mat_b.size(-2) and not (a2 and b2):
        raise RuntimeError(f"grouped_mm: contraction dimensions differ, {tuple(mat_a.shape)} @ {tuple(mat_b.shape)}")
    if a2 and b2:
        size = (offs.size(0), mat_a.size(0), mat_b.size(1))
    elif a2:
        size = (mat_a.size(0), mat_b.size(-1))
    elif b2:
        size = (mat_a.size(1), mat_b.size(1))
    else:
        size = (mat_a.size(0), mat_a.size(1), mat_b.size(-1))
    return torch.empty(size, dtype=out_dtype or mat_a.dtype, device=mat_a.device)


def fused_sgd_(params: list[torch.Tensor], grads: list[torch.Tensor], momentum_buffer_list: list[torch.Tensor],
               **hyperparameters) -> None:
    """``aten._fused_sgd_``: in place, no output (FusedSgdKernel.cu checks the lists match)."""
    torch._check(len(params) == len(grads), lambda: "_fused_sgd_: params and grads differ in length")
    torch._check(not momentum_buffer_list or len(momentum_buffer_list) == len(params),
                 lambda: "_fused_sgd_: momentum buffers and params differ in length")


SHAPE_FUNCTIONS: dict[str, ShapeFunction] = {
    "aten._grouped_mm": grouped_mm,
    "aten._fused_sgd_": fused_sgd_,
}


def lookup(name: str) -> ShapeFunction | None:
    """The shape function that replaces operator ``name``'s meta kernel while counting, or None."""
    return SHAPE_FUNCTIONS.get(name)
