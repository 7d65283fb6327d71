"""PyTorch's multi_tensor_apply packing loop written out chunk by chunk, to check the launch counts against."""

from __future__ import annotations

from tops_advisor.train.optimizer import CHUNK_ELEMENTS, LAUNCH_LIMITS


def reference_launches(numels, depth, scalar_list=False, limits=LAUNCH_LIMITS):
    """multi_tensor_apply's packing loop (aten/src/ATen/native/cuda/MultiTensorApply.cuh) chunk by chunk."""
    max_tensors = (limits.max_tensors_scalar_list if scalar_list else limits.max_tensors)[depth - 1]
    launches = loc_block = loc_tensor = 0
    for numel in numels:
        if numel == 0:
            continue
        loc_tensor += 1
        chunks = numel // CHUNK_ELEMENTS + (numel % CHUNK_ELEMENTS != 0)
        for chunk in range(chunks):
            loc_block += 1
            tensors_full = loc_tensor == max_tensors and chunk == chunks - 1
            if tensors_full or loc_block == limits.max_blocks:
                launches += 1
                loc_block = 0
                loc_tensor = 0 if chunk == chunks - 1 else 1
    return launches + (1 if loc_block else 0)
