"""The optimizer part of a training step as PyTorch runs it on a CUDA device, from the trainable tensors' sizes
alone (pure: an analytic build uses it; a counted step sees the same kernels run):

* foreach AdamW / Adam / SGD (torch.optim's default on CUDA): one multi-tensor-apply pass per line of the
  update (torch/optim/adam.py ``_multi_tensor_adam``, sgd.py ``_multi_tensor_sgd``), each pass launching
  kernels over chunks of 65,536 elements (``multi_tensor_launches``);
* fused AdamW (``torch._fused_adamw_``): the whole update in one pass;
* bitsandbytes' 8-bit AdamW: one blockwise kernel per tensor (``optimizer_update_8bit_blockwise``);
* GradScaler (``--dtype amp``): one found-inf check and unscale pass over the gradients, one scale update.

Steady state: the moments exist (made by the first step), the step counts of foreach optimizers live on the
host (a CPU ``_foreach_add_``, no kernel), those of fused ones on the device. State is kept at the parameter's
dtype (``torch.zeros_like(param)``), so bf16 training keeps bf16 moments."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import opcosts as O
from ..kinds import Phase
from ..workload import MULTI_TENSOR_FAMILY, OpRecord
from .setup import TrainSetup

CHUNK_ELEMENTS = 65536   # kChunkSize, aten/src/ATen/native/cuda/MultiTensorApply.cuh


@dataclass(frozen=True)
class LaunchLimits:
    """How many tensors and blocks (chunks) one multi-tensor-apply launch takes, by depth (tensor lists)."""

    max_tensors: tuple[int, ...]
    max_tensors_scalar_list: tuple[int, ...]
    max_blocks: int
    source: str


# aten/src/ATen/native/cuda/MultiTensorApply.cuh, ``depth_to_max_tensors`` / ``_scalarlist`` /
# ``depth_to_max_blocks``: the 4 KB kernel-argument tables, which the H200 profiles of the training-step study
# launched (torch 2.11+cu130: the launches of AdamW's eight foreach passes and GradScaler's unscale for its
# twelve models, 96 of 96 equal; TinyLlama's 201 fp32 tensors 53 a pass, benchmarks/studies/training-step/),
# and the 32 KB-argument ones (7x the tensors, 2240 blocks) that torch 2.14's header builds for CUDA >= 13.
LAUNCH_LIMITS = LaunchLimits((110, 64, 48, 36, 30), (96, 64, 48, 36, 30), 320,
                             "MultiTensorApply.cuh (torch <= 2.13, or CUDA < 13)")
LAUNCH_LIMITS_CUDA13 = LaunchLimits((770, 448, 336, 252, 210), (672, 448, 336, 252, 210), 2240,
                                    "MultiTensorApply.cuh (torch 2.14, CUDART_VERSION >= 13000)")


def multi_tensor_launches(numels: Sequence[int], depth: int, scalar_list: bool = False,
                          limits: LaunchLimits = LAUNCH_LIMITS) -> int:
    """Kernels one multi-tensor-apply pass launches over tensors of ``numels`` elements with ``depth``
    tensor lists, exactly as ``multi_tensor_apply`` packs them: chunks of 65,536 elements fill a launch's
    blocks, a launch goes when its blocks are full (the tensor in progress carries over) or when its tensor
    slots are full at the end of a tensor, and the rest goes in a last launch."""
    max_tensors = (limits.max_tensors_scalar_list if scalar_list else limits.max_tensors)[min(max(depth, 1), 5) - 1]
    launches = blocks = tensors = 0
    for numel in numels:
        if numel <= 0:
            continue
        tensors += 1
        full, blocks = divmod(blocks + math.ceil(numel / CHUNK_ELEMENTS), limits.max_blocks)
        if full:
            launches += full
            tensors = 1 if blocks else 0
            if not blocks:
                continue
        if tensors == max_tensors:
            launches, blocks, tensors = launches + 1, 0, 0
    return launches + (1 if blocks else 0)


@dataclass(frozen=True)
class Pass:
    """One multi-tensor-apply operator of an update: the tensor lists it reads (each read once, as listed:
    ``addcmul_(v, g, g)`` reads g twice) and writes (``param``, ``grad``, ``exp_avg``, ``exp_avg_sq``,
    ``momentum``, ``denom``: one element per parameter element), its operations per element (opcosts: the
    plain operator's count) and its depth (lists walked, an out-of-place output included)."""

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    flops_per_elem: float
    depth: int
    scalar_list: bool = False


_WEIGHT_DECAY = Pass("aten._foreach_mul_", ("param",), ("param",), O.MUL, 1)   # AdamW: p *= 1 - lr * wd
_ADAM = (
    Pass("aten._foreach_lerp_", ("exp_avg", "grad"), ("exp_avg",), O.LERP, 2),                 # m += (1-b1)(g - m)
    Pass("aten._foreach_mul_", ("exp_avg_sq",), ("exp_avg_sq",), O.MUL, 1),                    # v *= b2
    Pass("aten._foreach_addcmul_", ("exp_avg_sq", "grad", "grad"), ("exp_avg_sq",), O.ADDCMUL, 3),  # v += (1-b2)g g
    Pass("aten._foreach_sqrt", ("exp_avg_sq",), ("denom",), O.ELEMENTWISE, 2),                 # sqrt(v): a new list
    Pass("aten._foreach_div_", ("denom",), ("denom",), O.ELEMENTWISE, 1, scalar_list=True),    # / sqrt(bias corr. 2)
    Pass("aten._foreach_add_", ("denom",), ("denom",), O.ADD, 1),                              # + eps
    Pass("aten._foreach_addcdiv_", ("param", "exp_avg", "denom"), ("param",), O.ADDCDIV, 3, scalar_list=True),
)
_SGD = (
    Pass("aten._foreach_mul_", ("momentum",), ("momentum",), O.MUL, 1),                        # buf *= momentum
    Pass("aten._foreach_add_", ("momentum", "grad"), ("momentum",), O.ADD, 2),                 # buf += (1-d) g
    Pass("aten._foreach_add_", ("param", "momentum"), ("param",), O.ADD, 2),                   # p += -lr buf
)
# torch._fused_adamw_ (aten/src/ATen/native/cuda/fused_adam_utils.cuh, adam_math): the update and the decoupled
# weight decay (AdamW's default 0.01) in one pass
_FUSED_ADAMW = Pass("aten._fused_adamw_", ("param", "grad", "exp_avg", "exp_avg_sq"),
                    ("param", "exp_avg", "exp_avg_sq"), O.ADAM_STEP + O.ADAM_WEIGHT_DECAY, 4)
PASSES: dict[str, tuple[Pass, ...]] = {"adamw": (_WEIGHT_DECAY, *_ADAM), "adam": _ADAM, "sgd": _SGD,
                                       "adamw-fused": (_FUSED_ADAMW,)}
STATE_TENSORS = {"adamw": 2, "adam": 2, "sgd": 1, "adamw-fused": 2}   # moments (or momentum) per parameter
UNSCALE = "aten._amp_foreach_non_finite_check_and_unscale_"
BNB_BLOCK = 256                # bitsandbytes' blockwise quantisation: one fp32 scale per 256 elements per moment
BNB_ADAMW_8BIT = "bnb.optimizer_update_8bit_blockwise"
BNB_FLOPS = O.ADAM_STEP + O.ADAM_WEIGHT_DECAY + 4.0   # the update, and dequantising and requantising two moments


@dataclass(frozen=True)
class OptimizerStep:
    """The optimizer part of a step: its operators, the state it keeps and the largest temporary it makes."""

    ops: tuple[OpRecord, ...]
    state_bytes: float
    temporary_bytes: float      # foreach Adam's sqrt(v) list, alive during its last four passes
    tensors: int                # parameters updated (host work per tensor in eager mode)


def _pass_op(p: Pass, numels: Sequence[int], elem_bytes: float, dtype: str, limits: LaunchLimits) -> OpRecord:
    n = float(sum(numels))
    return OpRecord(name=p.name, kind="elementwise", module="optimizer", flops=p.flops_per_elem * n,
                    bytes_read=len(p.reads) * n * elem_bytes, bytes_written=len(p.writes) * n * elem_bytes,
                    dtype=dtype, kernels=max(1, multi_tensor_launches(numels, p.depth, p.scalar_list, limits)),
                    family=MULTI_TENSOR_FAMILY, phase=Phase.OPTIMIZER)


def grad_scaler_ops(numels: Sequence[int], grad_bytes: float, limits: LaunchLimits = LAUNCH_LIMITS
                    ) -> tuple[OpRecord, ...]:
    """GradScaler.unscale_ (one pass reading and writing every gradient) and ``_amp_update_scale_``."""
    n = float(sum(numels))
    unscale = OpRecord(name=UNSCALE, kind="elementwise", module="grad_scaler", flops=O.NON_FINITE_CHECK * n,
                       bytes_read=n * grad_bytes, bytes_written=n * grad_bytes, dtype="fp32",
                       kernels=max(1, multi_tensor_launches(numels, 1, False, limits)), family=MULTI_TENSOR_FAMILY,
                       phase=Phase.OPTIMIZER)
    update = OpRecord(name="aten._amp_update_scale_", kind="elementwise", module="grad_scaler", flops=4.0,
                      bytes_read=12.0, bytes_written=8.0, dtype="fp32", phase=Phase.OPTIMIZER)
    return unscale, update


def _eight_bit(numels: Sequence[int], param_bytes: float, dtype: str) -> OptimizerStep:
    """bitsandbytes' AdamW8bit: per tensor one kernel reading the parameter, its gradient, two uint8 moments
    and their block scales, writing the parameter, the moments and the scales."""
    ops = []
    state = 0.0
    for n in numels:
        scales = 2 * 4.0 * math.ceil(n / BNB_BLOCK)
        state += 2 * n + scales
        ops.append(OpRecord(name=BNB_ADAMW_8BIT, kind="elementwise", module="optimizer", flops=BNB_FLOPS * n,
                            bytes_read=2 * n * param_bytes + 2 * n + scales,
                            bytes_written=n * param_bytes + 2 * n + scales, dtype=dtype, phase=Phase.OPTIMIZER))
    return OptimizerStep(tuple(ops), state, 0.0, len(numels))


def optimizer_step(numels: Sequence[int], setup: TrainSetup, param_bytes: float, dtype: str = "fp32",
                   limits: LaunchLimits = LAUNCH_LIMITS) -> OptimizerStep:
    """The optimizer part of one steady-state step over trainable tensors of ``numels`` elements stored at
    ``param_bytes`` each (gradients and state alike), GradScaler's passes first under ``amp``."""
    numels = [int(n) for n in numels if n > 0]
    scaler = grad_scaler_ops(numels, param_bytes, limits) if setup.grad_scaler else ()
    if setup.optimizer == "adamw-8bit":
        step = _eight_bit(numels, param_bytes, dtype)
        return OptimizerStep((*scaler[:1], *step.ops, *scaler[1:]), step.state_bytes, 0.0, step.tensors)
    passes = PASSES[setup.optimizer]
    ops = [_pass_op(p, numels, param_bytes, dtype, limits) for p in passes]
    if setup.optimizer == "adamw-fused":   # the step counts live on the device: one small foreach add
        steps = OpRecord(name="aten._foreach_add_", kind="elementwise", module="optimizer.state_steps",
                         flops=float(len(numels)), bytes_read=4.0 * len(numels), bytes_written=4.0 * len(numels),
                         dtype="fp32", kernels=multi_tensor_launches([1] * len(numels), 1, False, limits),
                         family=MULTI_TENSOR_FAMILY, phase=Phase.OPTIMIZER)
        ops.insert(0, steps)
    elif setup.optimizer != "sgd":         # foreach Adam: the host increments its CPU step counts, no kernel
        ops.insert(0, OpRecord(name="aten._foreach_add_", kind="other", module="optimizer.state_steps (host)",
                               flops=0.0, bytes_read=0.0, bytes_written=0.0, kernels=0, phase=Phase.OPTIMIZER))
    total = float(sum(numels))
    temporary = total * param_bytes if any(p.name == "aten._foreach_sqrt" for p in passes) else 0.0
    ops = [*scaler[:1], *ops, *scaler[1:]]
    return OptimizerStep(tuple(ops), STATE_TENSORS[setup.optimizer] * total * param_bytes, temporary, len(numels))
