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
# What the probe measures on the card where the kernel floor and gap above were measured (H200, probe
# kernel_graph_us / kernel_eager_us, hardware_db/calibrations/h200-sxm.json). A calibration of another card
# scales the floor, gap and eager operator cost by its own measurement over these.
TINY_KERNEL_REFERENCE_S = Default(0.87e-6, "H200 probe: trivial kernel replayed in a CUDA graph")
EAGER_LAUNCH_REFERENCE_S = Default(10.8e-6, "H200 probe: trivial operator launched eagerly from Python")
KERNEL_GAP_S = Default(1.0e-6, "see KERNEL_FLOOR_S")
KERNEL_FLOOR_S = Default(3.0e-6, "H200, graph mode: a trivial kernel alone takes 1.6-1.9 us "
                                 "(benchmarks/results/h200_primitives.json), but the small kernels of real models "
                                 "(convolutions, norms, GEMMs at batch 1) take 3-5 us; floor and gap were chosen by "
                                 "a 12-point sweep (floor 2.5-4 us x gap 0.5-1.5 us) on ResNet-50, BERT-Large, "
                                 "GPT-2 and the small CNN only (docs/roofline.md)")

# Host cost of one eager PyTorch operator (Python, dispatcher, kernel launch), and of each extra kernel it
# launches. Replaced by the probe's kernel_eager_us.
EAGER_OP_S = Default(22e-6, "H200 machine (16-core VM host), benchmarks/results/h200_models.json: eager "
                             "forwards at batch 1 cost 23-30 us per operator (ResNet-50, BERT-Large, GPT-2), "
                             "nn.Module calls and views included")
EAGER_EXTRA_KERNEL_S = Default(3e-6, "assumed: a plain cudaLaunchKernel costs ~2-4 us of host time")
EAGER_NO_KERNEL_OP_S = Default(2e-6, "assumed: a view or metadata op costs host time but no kernel")

# Compute efficiency of an operator kind relative to a plain GEMM of the same shape.
KIND_COMPUTE_FACTOR = {
    "matmul": Default(1.0, "by definition"),
    "conv": Default(0.40, "H200 primitives (fp16 NCHW, cuDNN 9): 3x3 convolutions at batch 32 reach 150-255 "
                          "TFLOPS against ~790 for cuBLAS GEMMs; TF32 convs 36% of the TF32 peak"),
    "attention": Default(0.70, "FlashAttention-2 forward reaches ~50-70% of dense peak (Dao 2023, Fig. 4-5); "
                               "H200 primitives: SDPA fp16 171-475 TFLOPS, rising with sequence and head dim"),
}

# Bandwidth efficiency of memory-bound kinds relative to the attainable copy bandwidth.
# From benchmarks/results/h200_primitives.json (large sizes, fp16 and fp32 averaged, relative to 85% of the
# datasheet bandwidth): relu/add/gelu 0.7-1.0, layer/batch norm 0.36-0.7, softmax 0.5, max pooling 0.15-0.3,
# depthwise convolution (CUDA cores) ~0.3.
KIND_BANDWIDTH_FACTOR = {
    "elementwise": 0.9, "norm": 0.5, "softmax": 0.55, "reduction": 0.8, "pool": 0.25, "embedding": 0.6,
    "copy": 0.9, "other": 0.8, "matmul": 1.0, "conv": 0.9, "attention": 1.0,
}
# Convolutions with at most this many output channels per group (depthwise) run as direct convolutions on
# the CUDA cores, memory-bound at DEPTHWISE_BANDWIDTH_FACTOR of the attainable bandwidth.
DEPTHWISE_MAX_CHANNELS_PER_GROUP = 4
DEPTHWISE_BANDWIDTH_FACTOR = 0.3
# ... and they are slow per operation too: H200, fp16 3x3 depthwise at batch 32 ran 5.6 TFLOPS (0.12 of the
# vector rate; fp32 1.9 TFLOPS, 0.04); ConvNeXt-T's 7x7 depthwise convs (batch 8, profiled) add up to ~290 us
# for 1.68 G operations, the same 5.6 TFLOPS. Whichever of this and the bandwidth limit is slower binds.
DEPTHWISE_VECTOR_FACTOR = 0.12
DEPTHWISE_VECTOR_FACTOR_FP32 = 0.04
# TF32 convolutions reach a larger share of their (lower) peak than fp16 NCHW ones, which pay for layout
# conversions: H200 primitives, 3x3 convs at batch 32: TF32 23-46% of the TF32 peak, fp16 19-32% of fp16's.
CONV_TF32_FACTOR = Default(0.55, "H200 primitives: TF32 3x3 convolutions 92-180 TFLOPS of 395 attainable")
# Memory-bound kernels reading an activation through a permuted/transposed view (the counter marks them
# ``strided``) move their bytes uncoalesced. H200 profiles: Whisper's adds on a transposed conv output ran
# 4.3x their contiguous time, Swin-T's window-partition copies ~4x, ConvNeXt-T's LayerNorm over an NHWC
# view 2.6x (benchmarks/results/h200_blind.json, h200_heldout_perop_b8.json).
STRIDED_BANDWIDTH_FACTOR = 0.3
# How far BLAS libraries split K for short-and-wide GEMMs (cuBLAS: yes, cuDNN convolutions: rarely).
MAX_SPLIT_K = {"matmul": 4.0, "attention": 1.0, "conv": 1.0}
MAX_SPLIT_K_SIMT = 2.0  # plain FP32 GEMMs split K less (H200 primitives, fp32 Linear on 128 tokens)

# Memory the runtime takes besides weights and activations (CUDA context, cuBLAS/cuDNN workspaces).
RUNTIME_MEMORY_BYTES = Default(1e9, "assumed: CUDA context ~300-600 MB, cuBLAS/cuDNN workspaces and "
                                          "allocator slack; one figure for models and LLMs")

# GEMM tiles a BLAS library picks from, with the fraction of the large-GEMM rate each reaches when full:
# smaller tiles reuse less data and run below peak (CUTLASS/cuBLAS tile configurations).
# The (8, 128) tile stands for the GEMV / skinny kernels libraries pick when m is tiny (LLM decode): they
# stream the weights at full bandwidth, so a batch-1 product is memory-bound, as measured.
GEMM_TILES = ((128, 256, 1.0), (128, 128, 0.92), (64, 128, 0.8), (64, 64, 0.6), (32, 32, 0.3), (8, 128, 0.6))
# Plain FP32 (no tensor cores) runs SIMT kernels with large tiles only: H200 primitives, fp32 Linear 4096->1024
# on 128 tokens took 86 us (a 64x64-tile model would predict 34 us).
GEMM_TILES_SIMT = ((128, 128, 1.0), (128, 64, 0.85))
# Probed GEMMs shorter than this are not used to correct predictions: the probe times one call with CUDA
# events after an L2 flush, which adds several microseconds (H200: a 1x1024x1024 GEMM read 7.7 us).
GEMM_SAMPLE_MIN_S = Default(25e-6, "H200 probe samples: times below ~20 us are flat in m (fixed cost)")
# K below which a GEMM's prologue/epilogue dominates: efficiency k / (k + K_HALF).
GEMM_K_HALF = 48.0
# Alignment (bytes common to the row lengths n and k) -> fraction of the aligned rate. NVIDIA's "Matrix
# Multiplication Background User's Guide" asks for multiples of 16 bytes; measured on the H200: GPT-2's LM head
# (n = 50257, fp16, 2-byte alignment) ran at 94 TFLOPS where aligned GEMMs of that size reach ~700.
GEMM_ALIGNMENT = {16.0: 1.0, 8.0: 0.5, 4.0: 0.3, 2.0: 0.15, 1.0: 0.1}
