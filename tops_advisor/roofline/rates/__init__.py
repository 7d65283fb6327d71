"""What each operator can attain on a device: its compute rate, bandwidth share and floor, by operator class.

Every operator falls in one class (``op_classes``), and each class has one small function that returns its
rate from the device and the defaults. All are pure functions of one operator's own fields (vectorised over the
operators of that class): an operator's prediction never depends on the rest of the workload. Where several
kernels can run one operator, an ordered table of rules (``rules.Rule``: condition, value, why) picks the first
that applies, top to bottom.

    vector          elementwise, norms, softmax, pooling, copies: the vector rate (they are memory-bound)
    gemm            matmuls: the tensor-core peak x GEMM tile efficiency (``common.gemm_rate``)
    conv            convolutions on tensor cores: the GEMM of their implicit GEMM x the convolution factor;
                    grouped ones in NCHW as padded groups in tiles at least 64 channels wide
                    (``grouped_nchw_rate``), channels-last (inductor) as packed 64-channel tiles
                    (``grouped_channels_last_rate``); the whole table is ``conv.CONV_RATE_RULES``
    pointwise_conv  1x1 convolutions whose plane is aligned (``plain_gemm_plane``): plain GEMMs over the
                    channels, the GEMM rate and floor; misaligned ones are ``conv``
    depthwise       few output channels per group: direct kernels on the vector units (channels-last ones at
                    the copy bandwidth; ``conv.DEPTHWISE_RULES``)
    attention       fused attention: query blocks x heads in waves, head dims padded to a compiled tier; on
                    Hopper in 16 bits, tile by tile (``tiled_attention_rate``)

Modules: ``classes`` (the class table and compute rates), ``common`` (peaks, tile efficiency, GEMMs), ``conv``,
``attention``, ``memory`` (bandwidth shares, norm rows), ``floors``.
"""

from .attention import attention_rate, head_dim_use, tiled_attention_rate
from .classes import CLASS_RULES, CLASSES, compute_rates, op_classes
from .common import (
    SIMT_PRECISIONS,
    element_bytes,
    gemm_rate,
    matrix_precision,
    peak,
    simt_conv_k_half,
    tile_efficiency,
)
from .conv import (
    CONV_RATE_RULES,
    DEPTHWISE_RULES,
    conv_factor,
    conv_rate,
    depthwise_rate,
    grouped_channels_last_rate,
    grouped_nchw_rate,
    misaligned_pointwise,
    misaligned_pointwise_rate,
    padded_group_width,
    plain_gemm_plane,
    pointwise_conv_rate,
    tf32_cudnn_pointwise,
    thin_channels_last_rate,
    thin_conv_rate,
    thin_input,
    winograd_speedup,
)
from .floors import FIRST_KERNEL_RULES, floors
from .memory import (
    BANDWIDTH_RULES,
    bandwidth_factors,
    batch_norm_rows_s,
    bilinear_loop_s,
    group_norm_rows_s,
    layer_norm_rows_s,
)

__all__ = [
    "BANDWIDTH_RULES", "CLASSES", "CLASS_RULES", "CONV_RATE_RULES", "DEPTHWISE_RULES", "FIRST_KERNEL_RULES",
    "SIMT_PRECISIONS", "attention_rate", "bandwidth_factors", "bilinear_loop_s", "compute_rates", "conv_factor",
    "batch_norm_rows_s", "conv_rate", "depthwise_rate", "element_bytes", "floors", "gemm_rate", "group_norm_rows_s",
    "grouped_channels_last_rate", "grouped_nchw_rate", "head_dim_use", "layer_norm_rows_s", "matrix_precision",
    "misaligned_pointwise", "misaligned_pointwise_rate", "op_classes", "padded_group_width", "peak",
    "plain_gemm_plane", "pointwise_conv_rate", "simt_conv_k_half", "tf32_cudnn_pointwise",
    "thin_channels_last_rate", "thin_conv_rate", "thin_input", "tiled_attention_rate", "tile_efficiency",
    "winograd_speedup",
]
