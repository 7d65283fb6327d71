"""Which class each operator falls in (``CLASS_RULES``), and each class's compute rate (``compute_rates``)."""

from __future__ import annotations

import numpy as np

from ...kinds import OpKind
from ..arrays import OpArrays
from ..defaults import RooflineDefaults
from ..device import DevicePerf
from ..rules import Rule, always, first_match
from . import attention, common, conv

CLASSES = ("vector", "gemm", "conv", "pointwise_conv", "depthwise", "attention")


def _index(name: str):
    position = CLASSES.index(name)
    return lambda a, d: position


def _depthwise(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    return (a.is_kind(OpKind.CONV) & (a.groups > 1) & (a.n > 0)
            & (a.n <= d.depthwise_max_channels_per_group.value))


def _pointwise(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    return (a.is_kind(OpKind.CONV) & (a.window == 1) & conv.plain_gemm_plane(a, d)
            & ~conv.tf32_cudnn_pointwise(a))


CLASS_RULES: tuple[Rule[RooflineDefaults], ...] = (
    Rule("depthwise", _depthwise, _index("depthwise"),
         "few output channels per group: direct kernels on the vector units (depthwise_max_channels_per_group)"),
    Rule("pointwise_conv", _pointwise, _index("pointwise_conv"),
         "1x1 convolutions whose plane is a plain GEMM row (not TF32 in NCHW): GEMM kernels"),
    Rule("conv", lambda a, d: a.is_kind(OpKind.CONV), _index("conv"), "implicit GEMM on tensor cores"),
    Rule("attention", lambda a, d: a.is_kind(OpKind.ATTENTION), _index("attention"), "fused attention kernels"),
    Rule("gemm", lambda a, d: a.is_kind(OpKind.MATMUL), _index("gemm"), "GEMM library kernels"),
    Rule("vector", always, _index("vector"), "everything else runs on the vector units (memory-bound)"),
)


def op_classes(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    """The class (index into CLASSES) of each operator, from its kind and GEMM shape alone."""
    return first_match(CLASS_RULES, a, d, dtype=np.int64)


_RATE = {"gemm": common.gemm_rate, "conv": conv.conv_rate, "pointwise_conv": conv.pointwise_conv_rate,
         "depthwise": conv.depthwise_rate, "attention": attention.attention_rate}
_CLASS_KIND = {"gemm": OpKind.MATMUL, "conv": OpKind.CONV, "pointwise_conv": OpKind.CONV,
               "attention": OpKind.ATTENTION}


def compute_rates(a: OpArrays, cls: np.ndarray, perf: DevicePerf, tf32_matmul: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per operator: the compute rate (ops/s) and the peak it runs at ("vector" for the vector units)."""
    rate = np.full(cls.shape[0], perf.vector_ops_per_s)
    precision = np.array(["vector"] * cls.shape[0], dtype=object)
    working = a.flops > 0
    for name, fn in _RATE.items():
        in_class = (cls == CLASSES.index(name)) & (working | (name == "depthwise"))
        for dt in np.unique(a.dtype[in_class]):
            rows = np.flatnonzero(in_class & (a.dtype == dt))
            kind = _CLASS_KIND.get(name)
            prec = common.matrix_precision(str(dt), kind, perf.hardware, tf32_matmul) if kind else str(dt)
            rate[rows] = fn(a.take(rows), perf, prec)
            if kind:
                precision[rows] = prec
    return rate, precision
