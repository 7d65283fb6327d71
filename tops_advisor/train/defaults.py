"""The host costs of an eager training step that inference does not have, each with its source. Values are
for the reference host of ``roofline.defaults`` (the eager host model's unit) and follow a calibration's host
scale as the inference host costs do."""

from __future__ import annotations

from dataclasses import dataclass

from ..roofline.defaults.base import Default

# Fitted through the H200's shipped calibration, whose host scale is that machine's (0.68x the reference host:
# roofline/defaults/device_level.py, eager host cost), so the values are the reference host's.
_FIT = ("coordinate descent on the median and mean |log error| of the step and its parts over the 74 eager and "
        "checkpointed points of benchmarks/studies/training-step (12 models, H200 machine, 2026-12-01; "
        "`python benchmarks/studies/training-step/host_fit.py`): 21.9% median |error| of the step on those points")

_COMPILED_FIT = ("least squares of the forward's span against its kernels over the 8 host-bound forwards (span over "
                 "1.6x the predicted device time) among the 9 compiled points of benchmarks/studies/training-compiled/"
                 "h200/train_points.json and benchmarks/studies/training-step/h200_train_points.json (7 models, H200 "
                 "machines, 2026-12-01 and -02, host "
                 "scale 0.99): 40.5 us per kernel and 0.25 ms per call, 8.4% median |error| of those spans")


@dataclass(frozen=True)
class TrainingDefaults:
    """Host work per piece of a training step (seconds on the reference host)."""

    # autograd records a node and saves its inputs for every forward operator that needs a gradient
    forward_grad_op_s: Default[float] = Default(2.489e-05, "24.9 us: " + _FIT)
    # the autograd engine runs each node: its C++ dispatch, the gradient's kernels' launches
    backward_node_s: Default[float] = Default(3.005e-05, "30.1 us: " + _FIT)
    # torch.optim's Python per parameter in step(): _init_group's checks and list building, the host-side
    # step count (a CPU tensor per parameter, updated by one CPU foreach call)
    optimizer_tensor_s: Default[float] = Default(1.872e-05, "18.7 us: " + _FIT)
    # one multi-tensor-apply launch of a foreach or fused optimizer kernel
    optimizer_launch_s: Default[float] = Default(5.770e-05, "57.7 us: " + _FIT)
    # Gradient checkpointing (torch.utils.checkpoint, non-reentrant: timm's default, transformers' since 4.35)
    # runs Python saved-tensor hooks (torch/utils/checkpoint.py, _checkpoint_hook: pack in the forward, with the
    # metadata the determinism check keeps; in the backward the recompute's pack into the frame and the unpack):
    # three hook calls per tensor a checkpointed operator saves, priced per recomputed operator (its saved
    # tensors on average) once in the forward and twice in the backward.
    checkpoint_hook_s: Default[float] = Default(
        3.0e-05, "30 us per recomputed operator and hook pass: least mean |log error| of the step over the 10 "
                 "checkpointed points of benchmarks/studies/training-step (ConvNeXt-T, ViT-S/16) and scored blind "
                 "rounds train-01..03 (ConvNeXt-nano, Swin-T, SE-ResNeXt-26d, ResNeXt-26ts, DeiT-S, DeiT-B), a flat "
                 "minimum from 20 to 40 us (H200 machines, 2026-12-01; `python benchmarks/studies/training-step/"
                 "host_fit.py --checkpoint-hook --points` with benchmarks/rounds/train-01/measured/train_points.json and "
                 "train-02's and train-03's)")

    # torch.compile (inductor, default mode: no CUDA graphs) runs the forward and the backward as two compiled
    # graphs whose Python wrapper launches each kernel itself (a triton kernel's launcher, an extern kernel's
    # ATen call, the output buffers' allocations), and calls each graph through dynamo's guards and AOTAutograd's
    # runtime wrappers. The backward's gradients then reach the parameters through one AccumulateGrad node each
    # (the autograd engine's ``backward_node_s``).
    compiled_kernel_s: Default[float] = Default(4.0e-05, "40 us per kernel: " + _COMPILED_FIT)
    compiled_graph_call_s: Default[float] = Default(2.5e-04, "0.25 ms per graph call: " + _COMPILED_FIT)

# cuBLAS workspaces are allocated through PyTorch's caching allocator (so torch.cuda.max_memory_allocated counts
# them), one per (cuBLAS handle, stream), and handles are per thread: a training step has two, the forward's and
# the autograd engine's device thread. Size: at::cuda::getChosenWorkspaceSize (aten/src/ATen/cuda/
# CublasHandlePool.cpp): 32 MiB on compute capability 9.0 and newer, else 4096 KiB x 2 + 16 KiB x 8 (the
# CUBLAS_WORKSPACE_CONFIG default); H200 check: allocated after the steps minus the step's tensors was ~70 MB
# for TinyLlama and the small CNN (benchmarks/studies/training-step/README.md).
CUBLAS_WORKSPACE_BYTES = Default({"9.0+": 32 * 2**20, "older": 4096 * 1024 * 2 + 16 * 1024 * 8},
                                 "aten/src/ATen/cuda/CublasHandlePool.cpp getChosenWorkspaceSize")
SM90_AND_NEWER = frozenset({"Hopper", "Blackwell"})
WORKSPACE_THREADS = 2   # the forward's thread and the autograd engine's device thread


def workspace_bytes(architecture: str) -> float:
    """The cuBLAS workspaces a training step holds on a device of this architecture."""
    size = CUBLAS_WORKSPACE_BYTES.value["9.0+" if architecture in SM90_AND_NEWER else "older"]
    return float(WORKSPACE_THREADS * size)


TRAINING_DEFAULTS = TrainingDefaults()
