"""The host costs of an eager training step that inference does not have, each with its source. Values are
for the reference host of ``roofline.defaults`` (the eager host model's unit) and follow a calibration's host
scale as the inference host costs do."""

from __future__ import annotations

from dataclasses import dataclass

from ..roofline.defaults.base import Default

# Fitted through the H200's shipped calibration, whose host scale is that machine's (0.68x the reference host:
# roofline/defaults/device_level.py, eager host cost), so the values are the reference host's.
_FIT = ("least squares on the host-bound points of benchmarks/studies/training-step (12 models, H200 machine, "
        "2026-12-01; `python benchmarks/studies/training-step/host_fit.py`)")


@dataclass(frozen=True)
class TrainingDefaults:
    """Host work per piece of a training step (seconds on the reference host)."""

    # autograd records a node and saves its inputs for every forward operator that needs a gradient
    forward_grad_op_s: Default[float] = Default(6.0e-6, "assumed until fitted: " + _FIT)
    # the autograd engine runs each node: its C++ dispatch, the gradient's kernels' launches
    backward_node_s: Default[float] = Default(12.0e-6, "assumed until fitted: " + _FIT)
    # torch.optim's Python per parameter in step(): _init_group's checks and list building, the host-side
    # step count (a CPU tensor per parameter, updated by one CPU foreach call)
    optimizer_tensor_s: Default[float] = Default(4.0e-6, "assumed until fitted: " + _FIT)
    # one multi-tensor-apply launch of a foreach or fused optimizer kernel
    optimizer_launch_s: Default[float] = Default(5.0e-6, "assumed until fitted: " + _FIT)


TRAINING_DEFAULTS = TrainingDefaults()
