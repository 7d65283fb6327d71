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
# Idle time between back-to-back kernels in a CUDA graph replay. H200: (graph latency - summed kernel time) /
# kernels = 0.6-0.9 us for forwards made of small kernels (benchmarks/results/h200_records.json.gz, 19 models at
# batch 1 and 8; it shrinks toward 0 when kernels are long enough to hide the next launch).
KERNEL_GAP_S = Default(0.75e-6, "H200 per-operator profiles: (graph latency - kernel time) / kernels")
# The shortest time one operator of each kind takes on the device, however little work it has: launch, ramp-up
# of one wave, the tail, and for library kernels their set-up (cuBLAS/cuDNN prologue and epilogue, cuDNN's
# layout conversions of NCHW tensors). Medians over every operator of that kind that moves < 1 MB and does
# < 0.2 GFLOP, in 19 models x batches 1-128 x fp16/fp32 on the H200 (benchmarks/results/h200_records.json.gz,
# docs/op-accuracy.md): elementwise 1.2 us (n=1677), copies 1.6-3.0, embedding 1.9-2.0, reduction 2.6-2.8,
# pooling 2.0-2.6, norms 3.6 (one kernel), GEMMs 3.5-3.7, convolutions 5.5-5.9 (2-3 kernels: cuDNN converts
# NCHW to NHWC and back), depthwise convolutions 2.6-3.4, fused attention 5.2 (n=20).
# Each kernel an operator launches beyond its first costs KERNEL_FLOOR_S more.
KIND_FLOOR_S = {
    "elementwise": 1.2e-6, "copy": 2.0e-6, "embedding": 1.9e-6, "reduction": 2.7e-6, "pool": 2.3e-6,
    "norm": 3.6e-6, "softmax": 2.7e-6, "matmul": 3.6e-6, "conv": 5.5e-6, "attention": 5.2e-6, "other": 2.0e-6,
}
DEPTHWISE_FLOOR_S = 3.0e-6
KERNEL_FLOOR_S = Default(1.2e-6, "H200: the median elementwise kernel moving < 1 MB (see KIND_FLOOR_S)")

# Host cost of one eager PyTorch operator (Python, dispatcher, kernel launch), and of each extra kernel it
# launches. Replaced by the probe's kernel_eager_us.
EAGER_OP_S = Default(29e-6, "H200 machine (16-core VM host): eager forwards at batch 1 whose CUDA-graph time is "
                             "under half the eager time (47 runs of 28 model families, benchmarks/results/"
                             "h200_models.json and h200_blind*.json) cost 20-49 us per operator (10th-90th "
                             "percentile), median 29, nn.Module calls and views included; the same model varies "
                             "up to 1.9x between runs on this shared host")
# Operators issued from plain functions, without an nn.Module call around each (the analytic LLM decoder, as
# benchmarks/llm_measure.py runs it): LLaMA-3-8B-shaped eager decode steps cost 26-28 ms for 1,297 operators on
# the same host, 20.5 us each (benchmarks/results/llm_h200.json).
EAGER_FUNCTIONAL_OP_S = Default(20.5e-6, "H200 machine: eager LLM decode, 26.5 ms / 1,297 operators")
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

# Bandwidth efficiency of memory-bound kinds relative to the attainable copy bandwidth: summed bytes over
# summed time of every operator of that kind moving > 8 MB in 19 models x batches 1-128 x fp16/fp32 on the
# H200 (benchmarks/results/h200_records.json.gz; fp16/fp32): elementwise 0.73/0.91, copies (cat, contiguous,
# layout changes) 0.57/0.69, norms 0.53/0.34, softmax 0.56, reductions 0.39/0.52, pooling 0.18/0.36.
# Embedding: too few large gathers measured (assumed 0.6). Where 16-bit and 32-bit elements differ clearly, the
# pair (16-bit, 32-bit) below replaces the single factor: PyTorch's half-precision elementwise, copy, pooling
# and reduction kernels move fewer bytes per thread and reach less of the bandwidth.
KIND_BANDWIDTH_FACTOR = {
    "elementwise": 0.85, "norm": 0.45, "softmax": 0.55, "reduction": 0.45, "pool": 0.25, "embedding": 0.6,
    "copy": 0.63, "other": 0.8, "matmul": 1.0, "conv": 0.9, "attention": 1.0,
}
KIND_BANDWIDTH_FACTOR_BY_WIDTH = {"elementwise": (0.73, 0.91), "copy": (0.57, 0.69), "pool": (0.18, 0.36),
                                  "reduction": (0.39, 0.52)}
# Convolutions with at most this many output channels per group (depthwise, channel multiplier <= 2) run as
# direct convolutions on the CUDA cores, limited by DEPTHWISE_BANDWIDTH_FACTOR of the attainable bandwidth and
# by a low operation rate, whichever is slower. H200 per-operator profiles at batch >= 32
# (benchmarks/results/h200_records.json.gz): 3x3 depthwise (MobileNetV2, EfficientNet-B0) ran at 1040-1077
# GB/s (0.25 of the copy bandwidth) in fp16 and fp32; ConvNeXt-T's 7x7 ran at 8.7 TFLOPS fp16 (0.19 of the
# vector rate) and 4.3 fp32 (0.09); 5x5 in between. ResNeXt's grouped convs with 4 channels per group
# run on tensor cores (10.6 TFLOPS fp16), so they are not depthwise here.
DEPTHWISE_MAX_CHANNELS_PER_GROUP = 2
DEPTHWISE_BANDWIDTH_FACTOR = 0.25
DEPTHWISE_VECTOR_FACTOR = 0.17
DEPTHWISE_VECTOR_FACTOR_FP32 = 0.085
# 1-D depthwise convolutions run cuDNN's conv1D_NCHW kernels instead: H200 sweep, 256 channels, 33 taps over
# 800 steps at batch 32: 13.2 TFLOPS fp16 (0.28 of the vector rate), 3.5 fp32 (0.075).
DEPTHWISE_1D_VECTOR_FACTOR = 0.28
DEPTHWISE_1D_VECTOR_FACTOR_FP32 = 0.075
# Pointwise (1x1) convolutions are GEMMs over the channels and run GEMM kernels (the sweep's 1x1 convolutions
# ran cuBLAS/CUTLASS GEMM kernels: 256->256 over 800 positions at batch 32 in 11.4 us fp16, where the
# convolution factor predicted 22.8): they take the GEMM rate, not the convolution factor (roofline/predict.py).
# TF32 convolutions reach a larger share of their (lower) peak than fp16 NCHW ones, which pay for layout
# conversions: H200 primitives, 3x3 convs at batch 32: TF32 23-46% of the TF32 peak, fp16 19-32% of fp16's.
CONV_TF32_FACTOR = Default(0.55, "H200 primitives: TF32 3x3 convolutions 92-180 TFLOPS of 395 attainable")
# Norms differ by operator more than by anything else (same profiles, summed bytes over summed time, 16-bit /
# 32-bit elements): batch norm 0.73 / 0.65 (fp16: PyTorch's native kernel plus a copy; fp32: cuDNN's inference
# kernel, which the GPU dispatches as aten.cudnn_batch_norm; over all eight profiled sets, 3,688 calls each),
# layer norm 0.24 / 0.37, group norm 0.07 / 0.20.
NORM_BANDWIDTH_FACTOR = {"aten.native_batch_norm": (0.73, 0.65), "aten.native_layer_norm": (0.24, 0.37),
                         "aten.layer_norm": (0.24, 0.37), "aten.native_group_norm": (0.07, 0.2),
                         "aten.group_norm": (0.07, 0.2)}
# fp32 batch norm is one light cuDNN kernel: median 2.2 us for calls moving < 1 MB (536 calls), where the
# norms' floor is 3.6 us (fp16 batch norm, 3 kernels: 5.1 us, which floor + extra kernel gives).
BATCH_NORM_FP32_FLOOR_S = 2.2e-6
# Memory-bound kernels reading an activation through a permuted/transposed view (the counter marks them
# ``strided``) move their bytes uncoalesced. Fraction of the copy bandwidth they reach, summed bytes over
# summed time of operators moving > 8 MB (same profiles as above; fp16/fp32): elementwise 0.34/0.46, copies
# 0.36/0.44, norms 0.10/0.16 (LayerNorm over a permuted view: PyTorch first copies it contiguous, then
# normalises). Other kinds: their contiguous factor x STRIDED_BANDWIDTH_FACTOR.
STRIDED_KIND_BANDWIDTH_FACTOR = {"elementwise": 0.4, "copy": 0.4, "norm": 0.13}
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
# Plain FP32 (no tensor cores) runs SIMT kernels: large tiles when there is work for them; for few rows cuBLAS
# takes smaller tiles and GEMV-like kernels (gemv2T, gemmSN), which stream the weights. H200 sweep
# (benchmarks/results/h200_sweep.json, `benchmarks/sweep_kernels.py report`): with the large tiles only, fp32
# Linear layers on 1, 8 and 197 rows were predicted 1.4-5x too slow (median +91%); with the 64x64 tile at 0.55
# of the large-tile rate and 8- and 1-row GEMV tiles, median 24% (an fp32 Linear 4096->1024 on 128 rows, 86 us
# measured, is predicted 78 us).
GEMM_TILES_SIMT = ((128, 128, 1.0), (128, 64, 0.85), (64, 64, 0.55), (8, 128, 0.6), (1, 128, 0.6))
# Tiles of at most SKINNY_TILE_ROWS rows stand for GEMV-like kernels: used only up to SKINNY_MAX_ROWS rows.
SKINNY_TILE_ROWS = 8
SKINNY_MAX_ROWS = 32
# Probed GEMMs shorter than this are not used to correct predictions: the probe times one call with CUDA
# events after an L2 flush, which adds several microseconds (H200: a 1x1024x1024 GEMM read 7.7 us).
GEMM_SAMPLE_MIN_S = Default(100e-6, "H200: probe samples of 25-50 us (one call after an L2 flush) ran 25-35%% below the same shapes inside models (benchmarks/results/h200_records.json.gz: 8192x1024x1024 fp16 probed at 502 TOPS, 16384x4096x1024 in BERT-Large at 694)")
# K below which a GEMM's prologue/epilogue dominates: efficiency k / (k + K_HALF).
GEMM_K_HALF = 48.0
# Alignment (bytes common to the row lengths n and k) -> fraction of the aligned rate. NVIDIA's "Matrix
# Multiplication Background User's Guide" asks for multiples of 16 bytes; measured on the H200: GPT-2's LM head
# (n = 50257, fp16, 2-byte alignment) ran at 94 TFLOPS where aligned GEMMs of that size reach ~700.
GEMM_ALIGNMENT = {16.0: 1.0, 8.0: 0.5, 4.0: 0.3, 2.0: 0.15, 1.0: 0.1}
