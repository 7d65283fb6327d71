"""The optimizer part of a training step from tensor sizes: multi-tensor-apply's launches, each optimizer's
passes, bytes, state and temporaries, GradScaler's passes."""

from __future__ import annotations

import math

import pytest

from tests.train.launch_reference import reference_launches
from tops_advisor.kinds import Phase
from tops_advisor.train import TrainSetup
from tops_advisor.train.optimizer import (
    CHUNK_ELEMENTS,
    LAUNCH_LIMITS,
    LAUNCH_LIMITS_CUDA13,
    UNSCALE,
    multi_tensor_launches,
    optimizer_step,
)

CASES = [
    [], [1], [65536], [65537], [320 * 65536], [320 * 65536 + 1], [1] * 110, [1] * 111, [1] * 97,
    [4096] * 500, [10 ** 7, 1, 3, 10 ** 6] * 20, [0, 5, 0, 65536 * 319, 65536, 7],
    [2048 * 2048, 2048 * 256, 2048 * 256, 2048 * 2048, 2048 * 5632, 2048 * 5632, 5632 * 2048, 2048, 2048] * 22,
]


@pytest.mark.parametrize("numels", CASES)
@pytest.mark.parametrize("depth,scalar_list", [(1, False), (2, False), (3, False), (4, False), (1, True),
                                               (3, True)])
@pytest.mark.parametrize("limits", [LAUNCH_LIMITS, LAUNCH_LIMITS_CUDA13])
def test_launches_follow_multi_tensor_apply_packing(numels, depth, scalar_list, limits):
    assert multi_tensor_launches(numels, depth, scalar_list, limits) == reference_launches(numels, depth,
                                                                                            scalar_list, limits)


def test_tinyllama_foreach_passes_launch_53_kernels():
    """The training-step study (benchmarks/studies/training-step/README.md, "Optimizer step"): 53 launches per
    foreach pass over TinyLlama's 1.1e9 parameters (201 tensors, 16,796 chunks -> ceil(16,796 / 320))."""
    layer = [2048 * 2048, 2048 * 256, 2048 * 256, 2048 * 2048, 2048 * 5632, 2048 * 5632, 5632 * 2048, 2048, 2048]
    numels = [32000 * 2048] + layer * 22 + [2048, 32000 * 2048]
    assert sum(numels) == 1_100_048_384
    chunks = sum(math.ceil(n / CHUNK_ELEMENTS) for n in numels)
    assert math.ceil(chunks / 320) == 53
    assert {multi_tensor_launches(numels, d) for d in (1, 2, 3)} == {53}


def test_foreach_adamw_runs_the_study_passes():
    numels = [1000, 3000, 70000]
    n = sum(numels)
    step = optimizer_step(numels, TrainSetup(optimizer="adamw"), 4.0)
    names = [op.name for op in step.ops if op.kernels]
    # the eight passes the study lists for AdamW (GradScaler's unscale is the ninth under amp)
    assert sorted(names) == sorted(["aten._foreach_mul_", "aten._foreach_lerp_", "aten._foreach_mul_",
                                    "aten._foreach_addcmul_", "aten._foreach_sqrt", "aten._foreach_div_",
                                    "aten._foreach_add_", "aten._foreach_addcdiv_"])
    lerp = next(op for op in step.ops if op.name == "aten._foreach_lerp_")
    assert (lerp.bytes_read, lerp.bytes_written, lerp.flops) == (2 * n * 4, n * 4, 3 * n)  # m, g -> m
    addcdiv = next(op for op in step.ops if op.name == "aten._foreach_addcdiv_")
    assert (addcdiv.bytes_read, addcdiv.bytes_written) == (3 * n * 4, n * 4)              # p, m, denom -> p
    assert step.state_bytes == 2 * n * 4 and step.temporary_bytes == n * 4 and step.tensors == 3
    assert all(op.phase == Phase.OPTIMIZER for op in step.ops)
    host = [op for op in step.ops if not op.kernels]
    assert len(host) == 1 and host[0].bytes == 0           # the CPU step counts: host work, no kernel


def test_adam_has_no_weight_decay_pass_and_amp_adds_the_unscale():
    numels = [4096, 4096]
    adam = [op.name for op in optimizer_step(numels, TrainSetup(optimizer="adam"), 4.0).ops if op.kernels]
    adamw = [op.name for op in optimizer_step(numels, TrainSetup(optimizer="adamw"), 4.0).ops if op.kernels]
    assert len(adamw) == len(adam) + 1
    amp = optimizer_step(numels, TrainSetup(precision="amp"), 4.0).ops
    assert amp[0].name == UNSCALE and amp[0].bytes_read == amp[0].bytes_written == 8192 * 4
    assert amp[-1].name == "aten._amp_update_scale_"


def test_fused_sgd_and_eight_bit():
    numels = [1000, 513]
    n = 1513
    fused = optimizer_step(numels, TrainSetup(optimizer="adamw-fused"), 2.0)
    main = [op for op in fused.ops if op.name == "aten._fused_adamw_"]
    assert len(main) == 1 and main[0].bytes_read == 4 * n * 2 and main[0].bytes_written == 3 * n * 2
    assert fused.temporary_bytes == 0 and fused.state_bytes == 2 * n * 2
    sgd = optimizer_step(numels, TrainSetup(optimizer="sgd"), 4.0)
    assert len(sgd.ops) == 3 and sgd.state_bytes == n * 4          # one momentum buffer per parameter
    bnb = optimizer_step(numels, TrainSetup(optimizer="adamw-8bit"), 2.0)
    assert len(bnb.ops) == 2                                       # one kernel per tensor
    # two uint8 moments plus an fp32 scale per 256 elements of each: 1000 -> 4 blocks, 513 -> 3
    assert bnb.state_bytes == 2 * n + 2 * 4 * (4 + 3)
