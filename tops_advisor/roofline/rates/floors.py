"""The shortest device time each operator can take: its first kernel's floor (``FIRST_KERNEL_RULES``), then
one kernel floor per further kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kinds import OpKind
from ...workload import CHANNELS_LAST_FAMILY
from ..arrays import OpArrays
from ..device import DevicePerf
from ..rules import Rule, always, first_match
from .classes import CLASSES
from .memory import bilinear_loop_s


@dataclass(frozen=True)
class FloorContext:
    floor_s: dict[str, float]   # DevicePerf.kind_floor_s: per kind, and the named kernels below
    cls: np.ndarray             # each operator's class (index into CLASSES)


def _one_kernel(a: OpArrays, family: str) -> np.ndarray:
    return (a.family == family) & (a.kernels == 1)


FIRST_KERNEL_RULES: tuple[Rule[FloorContext], ...] = (
    Rule("one-kernel layer norm", lambda a, c: _one_kernel(a, "layer_norm"),
         lambda a, c: c.floor_s.get("layer_norm", c.floor_s[OpKind.NORM]),
         "PyTorch's one-kernel layer norm (its rows are timed apart: layer_norm_row_s)"),
    Rule("one-kernel batch norm", lambda a, c: _one_kernel(a, "batch_norm"),
         lambda a, c: c.floor_s["batch_norm_cudnn"],
         "cuDNN's inference kernel: fp32, and autocast's half input with fp32 weights (counting.handles."
         "batch_norm); fp16 with half weights runs PyTorch's native kernel and a copy: 2 kernels"),
    Rule("grouped NCHW convolution",
         lambda a, c: (c.cls == CLASSES.index("conv")) & (a.groups > 1) & (a.family != CHANNELS_LAST_FAMILY),
         lambda a, c: c.floor_s.get("grouped_conv", c.floor_s[OpKind.CONV]),
         "4 kernels: layout in, a memset or weight transform, the convolution, layout out"),
    Rule("depthwise", lambda a, c: c.cls == CLASSES.index("depthwise"), lambda a, c: c.floor_s["depthwise"],
         "direct depthwise kernels"),
    Rule("1x1 convolution",
         lambda a, c: (c.cls == CLASSES.index("pointwise_conv")) | (a.is_kind(OpKind.CONV) & (a.window == 1)),
         lambda a, c: c.floor_s[OpKind.MATMUL],
         "every 1x1 convolution, GEMM or not, is one kernel without layout conversions at this size (H200 "
         "profiles: misaligned ones under 20 MFLOP 2.9-6.0 us, the GEMM floor's range)"),
    Rule("kind", always,
         lambda a, c: np.array([c.floor_s.get(k, c.floor_s[OpKind.OTHER]) for k in OpKind])[a.kind],
         "the kind's floor (kind_floor_s)"),
)


def floors(a: OpArrays, cls: np.ndarray, perf: DevicePerf) -> np.ndarray:
    """Per operator: the shortest device time it can take (its first kernel's floor, then one kernel floor
    for each further kernel); 0 for operators that launch nothing."""
    first = first_match(FIRST_KERNEL_RULES, a, FloorContext(perf.kind_floor_s, cls))
    # PyTorch's NCHW bilinear upsampling takes at least its threads' loop over batch x channels
    first = np.where(a.family == "bilinear_upsample", np.maximum(first, bilinear_loop_s(a, perf)), first)
    k = a.kernels
    return np.where(k >= 1, first + np.maximum(k - 1, 0) * perf.kernel_floor_s, 0.0)
