"""Documented defaults for devices without a calibration, each with where it comes from.

These are the numbers a prediction uses when no probe has measured the device. They are deliberately few,
and every one is replaced by a measurement when a calibration exists (see ``device.py``). Accuracy with and
without calibration is reported in docs/accuracy.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Default:
    value: float
    source: str


# Fraction of the datasheet dense matrix peak that the best large GEMM reaches ("maximum achievable matmul
# FLOPS", MAMF). Source: S. Bekman, ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul
# FLOPS comparison table" (BF16, torch 2.5-2.7): A100 SXM 86.9%, A100 PCIe 81.1%, H100 SXM 80.3%,
# GH200 83.6%, MI300X 60.1%.
MATMUL_FRACTION = {
    "NVIDIA": Default(0.80, "ml-engineering MAMF table: H100 SXM 80.3%, A100 PCIe 81.1% of dense BF16 peak"),
    "AMD": Default(0.60, "ml-engineering MAMF table: MI300X 60.1% of dense BF16 peak (ROCm 6.2)"),
}
MATMUL_FRACTION_OTHER = Default(0.70, "assumed: between the NVIDIA and AMD MAMF figures")

# Fraction of datasheet DRAM bandwidth that a large device-to-device copy reaches, by memory type.
BANDWIDTH_FRACTION = {
    "HBM": Default(0.85, "typical large-copy efficiency of HBM2e/HBM3 parts (H100 SXM: ~2.8-3.0 of 3.35 TB/s "
                         "in nvbandwidth/STREAM-style copies); replaced by the probe's measured copy"),
    "GDDR": Default(0.85, "assumed like HBM; replaced by the probe's measured copy"),
    "LPDDR": Default(0.70, "assumed lower for LPDDR5 shared with the CPU (Jetson); replaced by a probe"),
}

# Fraction of the dense FP32 (non-tensor) rate that vector work (elementwise, norms) reaches when it is
# compute-bound; it almost never is.
VECTOR_FRACTION = Default(0.70, "assumed")

# Device-side cost per kernel when kernels are replayed back to back (CUDA graph): launch, ramp-up of the
# first wave and the tail. Replaced by the probe's kernel_graph_us.
KERNEL_DEVICE_S = Default(2.5e-6, "assumed from CUDA graph replays of tiny kernels on Hopper (~2-3 us)")

# Host cost of one eager PyTorch operator (Python, dispatcher, kernel launch), and of each extra kernel it
# launches. Replaced by the probe's kernel_eager_us.
EAGER_OP_S = Default(9e-6, "assumed: eager PyTorch runs on the order of 100k small ops/s on a fast host")
EAGER_EXTRA_KERNEL_S = Default(3e-6, "assumed: a plain cudaLaunchKernel costs ~2-4 us of host time")
EAGER_NO_KERNEL_OP_S = Default(2e-6, "assumed: a view or metadata op costs host time but no kernel")

# Compute efficiency of an operator kind relative to a plain GEMM of the same shape.
KIND_COMPUTE_FACTOR = {
    "matmul": Default(1.0, "by definition"),
    "conv": Default(0.80, "assumed: cuDNN implicit GEMM trails cuBLAS on the same GEMM shape"),
    "attention": Default(0.55, "FlashAttention-2 forward reaches ~50-70% of dense peak (Dao 2023, Fig. 4-5)"),
}

# Bandwidth efficiency of memory-bound kinds relative to the attainable copy bandwidth.
KIND_BANDWIDTH_FACTOR = {
    "elementwise": 1.0, "norm": 0.9, "softmax": 0.9, "reduction": 0.9, "pool": 0.8, "embedding": 0.6,
    "copy": 0.85, "other": 0.8, "matmul": 1.0, "conv": 0.9, "attention": 1.0,
}

# Memory the runtime takes besides weights and activations (CUDA context, cuBLAS/cuDNN workspaces).
RUNTIME_MEMORY_BYTES = Default(0.5e9, "assumed: CUDA context ~300-500 MB plus library workspaces")

# GEMM tiles a BLAS library picks from, with the fraction of the large-GEMM rate each reaches when full:
# smaller tiles reuse less data and run below peak (CUTLASS/cuBLAS tile configurations).
GEMM_TILES = ((128, 256, 1.0), (128, 128, 0.92), (64, 128, 0.8), (64, 64, 0.6), (32, 32, 0.3))
# K below which a GEMM's prologue/epilogue dominates: efficiency k / (k + K_HALF).
GEMM_K_HALF = 48.0
