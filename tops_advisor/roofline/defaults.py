"""Every number the roofline uses without a measurement, in one frozen object, each with where it comes from.

``DEFAULTS`` is what predictions use; a calibration replaces the device-level ones (peaks, bandwidth, floors,
host cost: see ``device.py``). Tests and experiments build their own ``RooflineDefaults`` (round numbers, one
field changed with ``dataclasses.replace``) and pass it to ``device_perf(..., defaults=...)``: nothing reads a
tuned constant from anywhere else. Accuracy with and without calibration: docs/accuracy.md.

Most per-operator factors were measured on one H200 (benchmarks/results/h200_records.json.gz: 19 models x
batches 1-128 x fp16/fp32, the device time of every counted operator call). They are ratios to the card's own
attainable copy bandwidth, GEMM rate or trivial-kernel time, so a calibration of another card carries them
over in proportion; how well that holds on other cards is issue 17's subject.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Default:
    value: float
    source: str


def _d(**kw):
    return field(default_factory=lambda: dict(kw))


@dataclass(frozen=True)
class RooflineDefaults:
    # --- device level: replaced by a calibration ---------------------------------------------------------
    # Fraction of the datasheet dense matrix peak that the best large GEMM reaches ("maximum achievable matmul
    # FLOPS", MAMF). Source: S. Bekman, ml-engineering, compute/accelerator/README.md, "Maximum Achievable
    # Matmul FLOPS comparison table" (BF16, torch 2.5-2.7): A100 SXM 86.9%, A100 PCIe 81.1%, H100 SXM 80.3%,
    # GH200 83.6%, MI300X 60.1%.
    matmul_fraction: dict = _d(
        NVIDIA=Default(0.80, "ml-engineering MAMF table: H100 SXM 80.3%, A100 PCIe 81.1% of dense BF16 peak"),
        AMD=Default(0.60, "ml-engineering MAMF table: MI300X 60.1% of dense BF16 peak (ROCm 6.2)"))
    matmul_fraction_other: Default = Default(0.70, "assumed: between the NVIDIA and AMD MAMF figures")
    # Per architecture, where the same MAMF table has that architecture (checked before the vendor's figure).
    matmul_fraction_by_architecture: dict = _d(
        Ampere=Default(0.84, "ml-engineering MAMF table: A100 SXM 86.9%, A100 PCIe 81.1% of dense BF16 peak "
                             "(mean 84%)"))
    # Per (architecture, precision), where a measurement of that architecture's best torch.matmul exists
    # (checked first). Volta has one card in the catalog (V100 SXM2), so these are that card's: the
    # torch-performance-test-data table (github.com/zzc0721/torch-performance-test-data, issue #140: Tesla
    # V100-SXM2-16GB, PyTorch 2.7.0+cu128, best of square matmuls 1024-10240) gives FP32 14.51 of 15.7 TFLOPS
    # (92%; SIMT SGEMM) and FP16 97.36 of 125 (78%). A V100 PCIe reaches ~101 TFLOPS FP16 in cuBLAS
    # (forums.developer.nvidia.com/t/79781): the same ~100 TFLOPS, so the SXM2's 125 is not reached.
    matmul_fraction_by_architecture_precision: dict = field(default_factory=lambda: {
        ("Volta", "fp32"): Default(0.92, "torch-performance-test-data #140: V100-SXM2 FP32 matmul 14.51 of "
                                         "15.7 TFLOPS"),
        ("Volta", "fp16"): Default(0.78, "torch-performance-test-data #140: V100-SXM2 FP16 matmul 97.36 of "
                                         "125 TFLOPS")})
    # GeForce tensor paths at half rate. GeForce cards run FP32-accumulate tensor products (fp16/bf16/fp8) at
    # half their FP16-accumulate rate (whitepapers: RTX 4090 'FP16 Tensor with FP32 Accumulate 165.2' vs 'with
    # FP16 Accumulate 330.3'); a precision counts as half rate when the catalog's *_fp16acc peak is twice its
    # own. The same operand feed (shared memory, registers) then serves half the math, so cuBLAS gets closer
    # to the (halved) peak than data-centre parts get to theirs (MAMF 80-87%). Per clock, from the RTX 4090 at
    # the clock that benchmark runs at: github.com/zzc0721/torch-performance-test-data test.py times 30 torch.mm
    # calls per size, one to two seconds per precision, shorter than a GeForce card takes to reach its power limit
    # (an RTX 5090 under gpu_burn reached its 575 W cap after about 4 s: hardware_db/rtx-5090.toml), so the card
    # runs at its burst clock, 2850 MHz for the 4090 (hardware_db/rtx-4090.toml, TweakTown: stock FE 2810-2850
    # MHz while cool). fp16 peak there 128 SMs x 512 x 2.85 GHz = 186.8 TFLOPS; database.md at 078586871da3, the
    # four 'NVIDIA RTX 4090 24GB' rows, fp16 165.08 / 171.06 / 162.35 / 167.80 and bf16 170.06 / 173.31 / 162.39
    # / 163.09 TFLOPS (best torch.mm, square 1024-10240): median 166.4 / 186.8 = 0.89. (Fitted at the 4090's
    # sustained 2730 MHz instead, it was 0.93, which put the RTX 5090's rows of the same table 20% faster than
    # predicted at its rated clock.) Cross-check, not fitted: the table's three RTX 3090 rows (fp16 75.5-75.9 of
    # 71 at the rated 1695 MHz) need 2.02 GHz at 0.89, the same clock the FP32 rows below need for theirs.
    half_rate_matmul_fraction: Default = Default(0.89, "torch-performance-test-data database.md: RTX 4090 24GB "
                                                       "fp16/bf16 torch.mm median 166.4 TFLOPS of 186.8 at "
                                                       "its 2850 MHz burst clock")
    # Plain FP32 (SIMT) GEMMs where half of the FP32 lanes are shared with INT32 (GA10x, AD10x, GB20x). The
    # GA102 whitepaper (nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf, 'GA10x SM'): each SM
    # partition has one datapath of 16 FP32 units and one of 16 units that run FP32 or INT32, so the datasheet
    # FP32 peak (128 lanes per SM) counts every lane doing FP32 every clock. An SGEMM inner loop also issues
    # shared-memory loads and integer address arithmetic, which take the shared datapath's slots, so it
    # reaches less of this doubled peak than data-centre parts with dedicated FP32 lanes reach of theirs
    # (V100 SXM2 92%, H100/H200 77% in the same table). Per clock, RTX 4090 at its 2850 MHz burst clock (93.4
    # TFLOPS; why the burst clock: above): the same four rows, FP32 55.01 / 54.77 / 46.48 / 54.67, median
    # 54.72 / 93.4 = 0.59. Cross-check, not fitted: RTX 3090 FP32 24.5-24.8 of 35.6 at 1695 MHz needs 2.00 GHz
    # at 0.59. Such cards are found by their lanes: FP32 peak / (2 x SMs x boost clock) = 128 on an architecture
    # named here (GA100 and Volta have 64 per SM; Hopper's 128 are dedicated FP32 units, not shared with INT32, so Hopper is not named).
    shared_int32_fp32_matmul_fraction: Default = Default(0.59, "torch-performance-test-data database.md: RTX "
                                                               "4090 24GB FP32 torch.mm median 54.72 TFLOPS "
                                                               "of 93.4 at its 2850 MHz burst clock")
    shared_int32_fp32_architectures: tuple = ("Ampere", "Ada Lovelace", "Blackwell")
    shared_int32_fp32_lanes_per_unit: int = 128
    # Fraction of datasheet DRAM bandwidth that a large copy reaches, by (architecture, memory type): the first
    # rule whose architecture (None: any) and memory-type prefix match the card wins; else the family below.
    # The memory controller sets it, so it is per generation, not per card.
    bandwidth_fraction_rules: tuple = (
        # Volta HBM2: anchored to PyTorch's own fp32 elementwise kernel, not to cudaMemcpy. The per-kind factors
        # below are ratios to the H200 probe's copy_, which there runs as fast as its torch.add (4,298 vs 4,374
        # GB/s, add/copy 1.017: hardware_db/calibrations/h200-sxm.json). On a V100 the two differ: torch.add of
        # two fp32 8192x8192 tensors moves 818.5 GB/s (0.91 of 900; github.com/ml-explore/mlx/pull/2330, "in
        # PyTorch the same op has throughput of 818.5 GB/s", V100), cudaMemcpy device-to-device 739.8 GB/s
        # (0.82; CUDA samples bandwidthTest on a Tesla V100-SXM2-16GB, github.com/router-gao/cuda-demo,
        # cuda-samples/02-cuda-bandwidth.md). The models' memory-bound operators are SM kernels like torch.add,
        # so the copy these factors refer to is the add's rate / 1.017 = 805 GB/s = 0.894 of 900.
        ("Volta", "HBM2", Default(0.894, "V100 torch.add fp32 818.5 GB/s (ml-explore/mlx PR 2330) / the H200 "
                                         "probe's add/copy ratio 1.017 (calibrations/h200-sxm.json), of 900 "
                                         "GB/s; cudaMemcpy D2D reaches 739.8 (bandwidthTest, V100-SXM2-16GB)")),
        ("Ampere", "HBM2", Default(0.89, "github.com/xytpai/nvbench README, global_memory_bandwidth: A100-40GB "
                                         "1336-1380 GB/s of 1555 (HBM2; the 80GB HBM2e card shares the memory "
                                         "controller)")),
        (None, "GDDR6X", Default(0.91, "github.com/xytpai/nvbench README: RTX 4090 905-922 GB/s of 1008; "
                                       "github.com/ashalliants/ninfer-3090 PR 72: RTX 3090 '854.2 GB/s "
                                       "achievable' of 936")),
    )
    # Fraction of datasheet DRAM bandwidth that a large device-to-device copy reaches, by memory family (cards
    # no rule above covers).
    bandwidth_fraction: dict = _d(
        HBM=Default(0.85, "typical large-copy efficiency of HBM2e/HBM3 parts (H100 SXM: ~2.8-3.0 of 3.35 TB/s "
                          "in nvbandwidth/STREAM-style copies); replaced by the probe's measured copy"),
        GDDR=Default(0.85, "assumed like HBM; replaced by the probe's measured copy"),
        LPDDR=Default(0.70, "assumed lower for LPDDR5 shared with the CPU (Jetson); replaced by a probe"))
    # Fraction of the dense FP32 (non-tensor) rate that vector work (elementwise, norms) reaches when it is
    # compute-bound; it almost never is.
    vector_fraction: Default = Default(0.70, "assumed")
    # Compute units (SMs/CUs) when the catalog does not list them: only wave quantisation depends on it.
    compute_units_unknown: Default = Default(100, "assumed: the order of a data-centre GPU (A100 108 SMs, "
                                                  "H100 SXM 132); only wave quantisation depends on it")

    # --- per-kernel device time (graph replay) ------------------------------------------------------------
    # What the probe measures on the card where the floors and gap below were measured (H200, probe
    # kernel_graph_us / kernel_eager_us, hardware_db/calibrations/h200-sxm.json). A calibration of another card
    # scales the floors, gap and eager operator cost by its own measurement over these.
    tiny_kernel_reference_s: Default = Default(0.87e-6, "H200 probe: trivial kernel replayed in a CUDA graph")
    eager_launch_reference_s: Default = Default(10.8e-6, "H200 probe: trivial operator launched eagerly")
    # The host time per nn.Module call of the probe's stack of tiny Linear layers (probe.overhead.module_call_s)
    # at which the eager host costs below hold. A probe that measures it scales them in proportion: the stack
    # is module call + dispatcher + launch, what a model's eager time is made of. Derived, not fitted to a
    # round: 88 eager batch-1 timings of 18 library models on the H200 machine, each beside a stack probe
    # (benchmarks/harness/host_drift.py; rounds/round-15/measured and round-23/measured/host_drift.json, the host in its fast state at
    # 16-17 us and its slow one at 25-28 us): measured / predicted-at-reference = stack time / 17.8 us at the
    # median (per session: 21.0 us in round 15's, 16.5 us in round 23's; `benchmarks/studies/host-stack-fit/host_stack_fit.py`).
    eager_module_call_reference_s: Default = Default(17.8e-6, "H200 machine: 88 timings of 18 models beside "
                                                               "the module-stack probe (host_drift.json)")
    # Idle time between back-to-back kernels in a CUDA graph replay. H200: (graph latency - summed kernel
    # time) / kernels = 0.6-0.9 us for forwards made of small kernels (19 models at batch 1 and 8).
    kernel_gap_s: Default = Default(0.75e-6, "H200 per-operator profiles: (graph latency - kernel time) / kernels")
    # The shortest time one operator of each kind takes however little work it has: launch, ramp-up of one
    # wave, the tail, library set-up (cuBLAS/cuDNN prologue and epilogue, cuDNN's NCHW<->NHWC conversions).
    # Medians over every operator of that kind moving < 1 MB and doing < 0.2 GFLOP (docs/reports/op-accuracy.md):
    # elementwise 1.2 us (n=1677), copies 1.6-3.0, embedding 1.9-2.0, reduction 2.6-2.8, pooling 2.0-2.6,
    # norms 3.6 (one kernel), GEMMs 3.5-3.7, convolutions 5.5-5.9 (2-3 kernels), depthwise convolutions
    # 2.6-3.4, fused attention 5.2 (n=20); fp32 batch norm is one light cuDNN inference kernel: 2.2 us
    # (536 calls), where fp16 batch norm (3 kernels) takes 5.1. Autocast's batch norm (half input, fp32
    # weights) runs the same cuDNN kernel (Normalization.cpp _batch_norm_impl_index) and takes its floor. A pointwise (1x1) convolution with an aligned
    # plane runs as a plain GEMM and takes the GEMM floor.
    # The floor is added to the operator's work, so it is the fixed time of a kernel with no work: the median
    # of measured minus predicted work over single-kernel operators under 20 MFLOP and 1 MB (H200 profiles of
    # 48 models, benchmarks/results/*records*, 2026-12-01). Matmuls 2.37 us (n=275; 1x1 convolutions 2.69,
    # n=119), depthwise convolutions 1.92 (n=224), softmax 1.57 (n=36) were below the medians above (3.6,
    # 3.0, 2.7: those include the work of a median small operator) and take the residual; elementwise 1.13,
    # copies 1.67, reductions 2.57, pooling 2.27, embedding 1.66 and cuDNN batch norm 2.05 agree with theirs.
    # Norms keep 3.6: fp16 batch norm is three kernels (5.1 us measured), where the residual of one-kernel
    # norms is 2.72; a one-kernel layer norm takes 2.9: layer norms under 4 us measure 3.2-3.5 (n=993) where
    # the constant of the row fit over larger ones (norm_bandwidth_factor) is 1.8-2.1. A grouped convolution
    # in NCHW launches 4 kernels (layout in, a memset or weight transform, the convolution, layout out): the
    # residual of the 58 under 50 MFLOP is 7.9 us (RegNetY-800MF and ResNeXt-50 at batch 1, fp16 and fp32).
    kind_floor_s: dict = _d(
        elementwise=1.2e-6, copy=2.0e-6, embedding=1.9e-6, reduction=2.7e-6, pool=2.3e-6, norm=3.6e-6,
        softmax=1.6e-6, matmul=2.4e-6, conv=5.5e-6, attention=5.2e-6, other=2.0e-6,
        depthwise=1.9e-6, batch_norm_cudnn=2.2e-6, layer_norm=2.9e-6, grouped_conv=7.9e-6)
    # Each kernel an operator launches beyond its first.
    kernel_floor_s: Default = Default(1.2e-6, "H200: the median elementwise kernel moving < 1 MB")

    # --- eager host cost ----------------------------------------------------------------------------------
    # Host time of an eager forward = per operator + per nn.Module call + per other Python call (library code
    # beside the operators: attention-mask helpers, output classes, config lookups; counting/pycalls.py).
    # Least squares on relative error over 37 models (5 hand-written files, 12 timm, 6 torchvision, 14
    # transformers) at batch 1 on the H200 machine, 2026-11-30 (benchmarks/results/h200_host_cost_b1.json,
    # host times; Python calls counted with the versions measured there, transformers 5.17 and timm 1.0.29;
    # whisper-tiny left out, its host time exceeded its eager latency; `python benchmarks/studies/host-cost-fit/host_cost_fit.py`):
    # 7.5 us per operator, 10.1 us per module call that runs operators, 3.8 us per module call that runs none
    # (nn.Identity, Dropout in eval: the call machinery alone), 4.0 us per Python call; 10.4% median |error|,
    # p90 21%, worst 32%, where operators + module calls alone gave 11.8%, p90 28%, worst 62% (transformers
    # models 16.6% -> 10.0%). The Python-call cost is identified by the transformers models: left out, it
    # cannot be fitted. That host ran the hand-written files in 0.68x the reference host's time (4 of 5
    # common models), so the reference-host values are the fit / 0.68.
    eager_op_s: Default = Default(11.0e-6, "7.5 us / 0.68: 37 batch-1 forwards on the H200 machine "
                                           "(benchmarks/results/h200_host_cost_b1.json), scaled to the "
                                           "reference host")
    eager_module_call_s: Default = Default(14.8e-6, "10.1 us / 0.68: the same fit, per nn.Module call that "
                                                    "runs operators")
    eager_empty_module_call_s: Default = Default(5.6e-6, "3.8 us / 0.68: the same fit, per nn.Module call "
                                                         "that runs none")
    eager_python_call_s: Default = Default(5.8e-6, "4.0 us / 0.68: the same fit, per Python call the model's "
                                                   "code makes outside torch (counting/pycalls.py)")
    # How the eager host cost follows the probe's launch time: host cost = eager_op_s x (f + (1 - f) x launch /
    # reference launch). A bare launch (driver + dispatcher) is not all of a module's host time: part of it is
    # interpreter work that moved less between the two hosts measured. Reference host: launch 10.8 us, host
    # cost 1.0; 2026-11-30 host: launch 6.0 us (blind round 10 probe, 6.2/6.0/5.8 us through the run) and
    # host cost 0.68 of the reference (host_cost.py, 4 of 5 common models): f = (0.68 - 0.556) / (1 - 0.556).
    eager_host_fixed_share: Default = Default(0.28, "two H200 hosts: launch 10.8 -> 6.0 us (0.556x) moved the "
                                                    "measured host cost 0.68x (benchmarks/results/"
                                                    "h200_host_cost_b1.json, rounds/round-10/measured/launch_*.json)")
    eager_functional_op_s: Default = Default(20.5e-6, "H200 machine: eager LLM decode, 26.5 ms / 1,297 operators")
    eager_extra_kernel_s: Default = Default(3e-6, "assumed: a plain cudaLaunchKernel costs ~2-4 us of host time")
    eager_no_kernel_op_s: Default = Default(2e-6, "assumed: a view or metadata op costs host time, no kernel")

    # --- tensor-core operators ----------------------------------------------------------------------------
    # Compute efficiency of convolutions and fused attention relative to a plain GEMM of the same shape.
    conv_factor: Default = Default(0.40, "H200 primitives (fp16 NCHW, cuDNN 9): 3x3 convolutions at batch 32 "
                                         "reach 150-255 TFLOPS against ~790 for cuBLAS GEMMs")
    # TF32 convolutions reach a larger share of their (lower) peak than fp16 NCHW ones, which pay for layout
    # conversions: H200 primitives, 3x3 convs at batch 32: TF32 23-46% of the TF32 peak, fp16 19-32%.
    conv_tf32_factor: Default = Default(0.55, "H200 primitives: TF32 3x3 convolutions 92-180 of 395 TFLOPS")
    # The two factors above were measured on one card at two operations-per-byte ratios (datasheet peak over
    # datasheet bandwidth): fp16 989.5 TFLOPS / 4.8 TB/s = 206 flop/B, TF32 494.5 / 4.8 = 103 flop/B. A
    # convolution pays, beside its GEMM, work that scales with bytes (layout conversions, im2col loads, the
    # filter transform), so its share of the GEMM rate is A / (1 + c x intensity); the two H200 points fix A
    # (0.88) and c (0.0058 B/flop): ``conv_factor_at``. On the H200 it returns 0.40 and 0.55 exactly; a card
    # with fewer operations per byte (V100 FP32 17 flop/B, A100 TF32 77) gets a larger share. 16-bit and
    # 8-bit convolutions start from the fp16 point, TF32 and plain FP32 (SIMT) ones from the TF32 point.
    conv_reference_intensity: dict = _d(
        fp16=Default(989.5 / 4.8, "H200 SXM datasheet: 989.5 TFLOPS dense fp16 / 4.8 TB/s (flop per byte)"),
        tf32=Default(494.5 / 4.8, "H200 SXM datasheet: 494.5 TFLOPS dense tf32 / 4.8 TB/s (flop per byte)"))
    conv_intensity_scaling: bool = True
    # Plain FP32 convolutions on cards without TF32 (Volta, Turing) run cuDNN's SIMT implicit-GEMM kernels in
    # NCHW (volta/maxwell_scudnn_128x128_*, implicit_convolve_sgemm in the nvprof traces of PyTorch issue
    # #13412): no NCHW<->NHWC conversions, which the tensor-core paths pay (PyTorch issue #81940, A100 TF32:
    # nchwToNhwc 16.6% and nhwcToNchw 15.7% of the time beside the implicit GEMM's 58.8%). Their share of the
    # GEMM rate is that of a GEMM: xuqiantong/CUDA-Winograd README, cuDNN GEMM + BN + ReLU, ResNet layers at
    # one stage: the 3x3 128->128 convolution (2.25x the multiply-adds of the 1x1 512->128 one) takes 214 us
    # against 119 us, 1.8x: at least the GEMM's rate per operation.
    conv_simt_factor: Default = Default(1.0, "cuDNN SIMT FP32 convolutions run in NCHW without layout "
                                             "conversions (PyTorch #13412 traces); 3x3 vs 1x1 cuDNN GEMM "
                                             "time 1.8x for 2.25x the work (xuqiantong/CUDA-Winograd)")
    # cuDNN's Winograd algorithms for 3x3, stride-1, ungrouped 2-D convolutions in plain FP32 (SIMT: cards
    # without TF32, Volta and Turing and older, where PyTorch's fp32 convolutions do not use tensor cores).
    # F(2x2, 3x3) computes a 2x2 output tile with 16 multiplies instead of 36, 2.25x fewer (Lavin & Gray,
    # "Fast Algorithms for Convolutional Neural Networks", CVPR 2016, arXiv:1509.09308), and cuDNN's fused
    # FP32 Winograd kernels run that batched product at SGEMM-like speed: PyTorch issue #13412 and
    # ryujaehun/pytorch-gpu-benchmark issue #8 show volta/maxwell_scudnn_winograd_128x128 kernels carrying
    # FP32 ResNet work on V100/P100 (#13412's P100 trace is without benchmark mode: cuDNN's heuristics pick
    # it too); under cudnn.benchmark (DeepLearningExamples' main.py sets it) cuDNN times every algorithm and
    # keeps the fastest. Measured: xuqiantong/CUDA-Winograd README, ResNet 3x3
    # layers in cuDNN, GEMM + BN + ReLU 214 us vs Winograd + BN + ReLU 95 us (2.25x) at 128 channels, 384 vs
    # 155 us (2.48x) at 256 (the BN and ReLU time is in both, so the convolutions alone gain at least this;
    # the README as read does not name its GPU or batch).
    # The speed-up applies to the convolution's time at the implicit-GEMM rate. Tensor-core paths (fp16,
    # TF32) keep implicit GEMM: their GEMM rate is 8-16x the SIMT rate, so the Winograd transforms' memory
    # passes do not pay (the H200 primitives' fp16 and TF32 3x3 convolutions run implicit GEMM kernels).
    winograd_speedup: Default = Default(2.25, "F(2x2,3x3) multiply count (Lavin & Gray 2016); cuDNN "
                                              "Winograd over its GEMM on ResNet 3x3 layers 2.25-2.48x "
                                              "(xuqiantong/CUDA-Winograd README)")
    attention_factor: Default = Default(0.70, "FlashAttention-2 forward reaches ~50-70% of dense peak (Dao "
                                              "2023, Fig. 4-5); H200 primitives: SDPA fp16 171-475 TFLOPS")
    # Fused attention: query blocks x heads run in waves (FlashAttention-2: 128-row blocks; PyTorch's fp32
    # memory-efficient kernel: 64). Kernels are compiled for a few head dims and run the next one up:
    # FlashAttention (16-bit) multiples of 32 up to 256; the memory-efficient kernel (fp32) 64, 128, then any.
    # H200 sweep (benchmarks/results/h200_sweep.json): fp32 head dims 36, 40 and 64 at batch 32 all take 80 us.
    # Hopper, 16 bits, tile by tile (rates.tiled_attention_rate). H200 sweep of F.scaled_dot_product_attention
    # over 6 sequence lengths x 5 head dims x 2 batch sizes (benchmarks/studies/sdpa/sdpa_sweep.py ->
    # benchmarks/studies/sdpa/h200_sdpa_sweep.json): with 128 x 128 tiles, one block per SM, exponentials at 16 per
    # clock per SM, cuDNN's kernel fits a 1.1 us block cost and products at the GEMM rate (head dim 64: 1.22 us
    # per tile predicted, 1.23 measured; 128: 1.92 against 1.9); FlashAttention-2's kernel (head dim 36)
    # reaches 0.31 of it at 1,024 tokens (FlashAttention-3's paper: FA2 reaches ~35% of H100's peak).
    attention_block_s: Default = Default(1.1e-6, "H200 SDPA sweep: blocks of one query tile and one key tile "
                                                 "(<= 64 tokens) take 2.32 us (head dim <= 64), 3.02 (128)")
    attention_hopper_native_fraction: Default = Default(1.0, "H200 SDPA sweep: cuDNN's products at the GEMM rate")
    attention_hopper_fa2_fraction: Default = Default(0.31, "H200 SDPA sweep, head dim 36, 1,024 tokens; "
                                                          "FlashAttention-3 paper: FA2 ~35% of H100 peak")
    # PyTorch's NCHW bilinear upsampling kernel loops over batch x channels in each thread (rates.bilinear_loop_s).
    bilinear_iteration_s: Default = Default(320e-9, "H200 sweep of F.interpolate(mode='bilinear'), 14 shapes: "
                                                    "190-570 ns per loop iteration, median 320 "
                                                    "(benchmarks/studies/slow-ops/h200_slow_ops_sweep.json)")
    # Convolutions whose input has fewer channels than a tensor-core fragment (the image stem: 1, 3 or 4
    # channels) cannot run cuDNN's tensor-core kernels on NCHW data without padding (cuDNN Legacy API guide,
    # "Tensor Core operations": channels a multiple of 8 for 16-bit data); cuDNN picks CUDA-core kernels
    # (implicit_convolve_sgemm, or sm80 indexed implicit GEMMs behind layout conversions, named in the traces).
    # Each output element pays a fixed cost (index arithmetic, the write) beside its K = channels x window
    # multiply-adds, so the share of the FP32 CUDA-core peak is e x K / (K + K0). Fitted in log space on 25 H200
    # fp16 points with 3 input channels: the stem sweep (3x3/s2, 7x7/s4, 4x4/s4 at batch 8 and 128;
    # h200_slow_ops_sweep.json), DeiT-S's 16x16/s16 patch embedding (batch 8, 32, 128; h200_blind5_records)
    # and, after blind round 11 (AlexNet's 11x11/4 stem came out 36-45% too slow), 3x3/s1, 5x5/s2, 7x7/s2,
    # 8x8/s8, 11x11/s4, 14x14/s14 and 16x16/s16 at batch 8 and 128 (h200_conv_channels_sweep.json): 6.3-29
    # TFLOPS; e = 0.279, K0 = 29, median error 22%, worst 85% (a single constant: 22%, the first 11-point fit
    # on all 25: 24%). The tensor-core model had predicted them 1.5-11x too fast. The share is of the
    # CUDA-core peak, the unit most of these kernels run on; e and K0 are measured on Hopper only.
    # Applied where measured: Hopper. Other architectures keep the tensor-core convolution model for stems
    # (unmeasured there; the published T4/V100/A100 AMP ResNet-50 rows, run channels-last, do not say which).
    thin_conv_channels: int = 8
    thin_conv_architectures: tuple = ("Hopper",)
    thin_conv_fp32_factor: Default = Default(0.279, "H200: 3-channel fp16 convolutions, 25 points "
                                                    "(h200_slow_ops_sweep.json 'stem', h200_conv_channels_"
                                                    "sweep.json 'stems', h200_blind5_records DeiT-S)")
    thin_conv_k0: Default = Default(29.0, "the same fit: the fixed cost per output element, in multiply-adds")
    # One exception has a kernel of its own: the ResNet stem (7x7, stride 2, 64 outputs, <= 4 channels) runs
    # cuDNN's tensor-core "image_first_layer ... k64c4r7s7_stride2x2" kernel (named in the same sweep's trace):
    # 36 and 46 TFLOPS at batch 8 and 128, median 41 = 0.041 of the 989.5 TFLOPS fp16 peak.
    first_layer_conv_factor: Default = Default(0.041, "H200 sweep: cuDNN image_first_layer kernel, 7x7/s2 3->64, "
                                                      "36 and 46 of 989.5 fp16 TFLOPS (h200_slow_ops_sweep.json)")
    # Channels-last (inductor's layout, ``family == "channels_last"``) thin-input stems run other cuDNN kernels
    # than NCHW ones. H200 compiled traces at batch 32 fp16 (benchmarks/results/h200_compiled.json,
    # h200_compiled_run2.json, rounds/round-11/measured/post/compiled_deeplab.json; fitting models, not a blind round):
    # overlapping windows run the tensor-core ``sm80_xmma_fprop_implicit_gemm_indexed_wo_smem ... nhwc
    # tilesize128x32x16`` kernel: VGG-16 25.5 TFLOPS, ConvNeXt-T 26.8, MobileNetV2 24.4, EfficientNet-B0 24.2,
    # Inception-v3 23.8, ShuffleNet-V2 18.5 (24 outputs), UNet 23.3, AlexNet's 11x11/4 39.1, DeepLabV3-MNV3
    # 12.3 (16 outputs). The NCHW form K / (K + K0) with the NCHW K0 and the kernel's 32-output tile
    # (outputs / (32 x ceil(outputs / 32))) leaves 42-53 TFLOPS, median 50.2 = 0.0507 of the 989.5 fp16 peak
    # (worst: AlexNet predicted 19% fast, ConvNeXt 17%). Where that was 3-channel 3x3 stems at the NCHW rule's
    # 9 TFLOPS, compiled VGG-16 b32 was predicted 17% slow. The ResNet stem (7x7/s2/64) runs the
    # ``image_first_layer ... nhwc ... k64c4r7s7`` kernel behind two ``nhwcAddPadding`` kernels: 74.1 us for
    # 7.55 GFLOP (ResNet-50 fp16 and AMP, ResNeXt-50: 74.2-74.9 us), 102 TFLOPS = 0.103 of the fp16 peak,
    # where its NCHW form reaches 0.041. Patch embeddings in graphs inductor keeps NCHW (ViT, DiT) keep the
    # NCHW rule (their traces run the CUDA-core implicit_convolve_sgemm kernel at its rate).
    thin_conv_channels_last_factor: Default = Default(
        0.0507, "H200 compiled traces, 9 channels-last stems at batch 32 fp16: 42-53 TFLOPS after the K / (K + "
                "K0) and 32-output-tile terms, median 50.2 of 989.5")
    thin_conv_channels_last_tile: int = 32
    first_layer_channels_last_factor: Default = Default(
        0.103, "H200 compiled traces: channels-last image_first_layer 7x7/s2 3->64 plus its padding kernels, "
               "7.55 GFLOP in 74.1-74.9 us (ResNet-50 fp16/AMP, ResNeXt-50)")
    resident_threads_per_unit: float = 2048.0  # threads resident per SM (Volta, Ampere A100, Hopper; GA10x/Ada 1536)
    special_function_per_clock: float = 16.0  # exp2 per clock per SM, compute capability 5.x-9.0 (CUDA guide)
    attention_block_rows: float = 128.0
    attention_block_rows_fp32: float = 64.0
    attention_head_dim_step: float = 32.0
    attention_head_dim_max: float = 256.0
    attention_head_dim_tiers_fp32: tuple = (64.0, 128.0)
    # How far BLAS libraries split K for short-and-wide GEMMs (cuBLAS: yes; cuDNN convolutions: rarely);
    # plain FP32 GEMMs split less (H200 primitives, fp32 Linear on 128 tokens).
    max_split_k: dict = _d(matmul=4.0, attention=1.0, conv=1.0)
    max_split_k_simt: float = 2.0
    # Each split keeps at least this much of K. Assumed (not measured): four 64-deep K tiles, enough for the
    # split's main loop to amortise its prologue and the reduction of the partial results.
    split_k_min_depth: float = 256.0
    # GEMM tiles a BLAS library picks from, with the fraction of the large-GEMM rate each reaches when full
    # (CUTLASS/cuBLAS tile configurations). The (8, 128) tile stands for the GEMV / skinny kernels libraries
    # pick when m is tiny (LLM decode): they stream the weights, so a batch-1 product is memory-bound.
    gemm_tiles: tuple = ((128, 256, 1.0), (128, 128, 0.92), (64, 128, 0.8), (64, 64, 0.6), (32, 32, 0.3),
                         (8, 128, 0.6))
    # Plain FP32 runs SIMT kernels: large tiles when there is work, smaller tiles and GEMV-like kernels
    # (gemv2T, gemmSN) for few rows. H200 sweep (`benchmarks/studies/kernel-sweep/sweep_kernels.py report`): with the large tiles
    # only, fp32 Linear layers on 1, 8 and 197 rows were predicted 1.4-5x too slow; with these, median 24%.
    gemm_tiles_simt: tuple = ((128, 128, 1.0), (128, 64, 0.85), (64, 64, 0.55), (8, 128, 0.6), (1, 128, 0.6))
    # Tiles of at most skinny_tile_rows rows stand for GEMV-like kernels: used only up to skinny_max_rows rows.
    skinny_tile_rows: int = 8
    skinny_max_rows: int = 32
    # K below which a GEMM's prologue/epilogue dominates: efficiency k / (k + gemm_k_half).
    gemm_k_half: float = 48.0
    # The K ramp is a fixed time per tile (prologue: the first loads' DRAM latency; epilogue: the write) over
    # the time of one K step, so in K it shrinks as a tile's K step gets slower. gemm_k_half is for a 128 x
    # 256 tensor-core tile at the H200's fp16 GEMM rate (probe: 794.4 TFLOPS / 132 SMs, hardware_db/
    # calibrations/h200-sxm.json): one K step = 2 x 128 x 256 / 6.02e12 = 10.9 ns, so the fixed time is 48 x
    # 10.9 ns = 0.52 us. A SIMT FP32 128 x 128 tile on a V100 (14.4 TFLOPS / 80 SMs) takes 182 ns per K step:
    # k_half 2.9, where the constant 48 cost a 64-deep 1x1 convolution 43% of its rate. Applied to SIMT
    # convolutions (``rates.simt_conv_k_half``): cards without TF32 (Volta, Turing), a class no H200 number
    # was fitted on (the H200 runs fp32 convolutions in TF32). SIMT matmuls keep the constant: the SIMT tile
    # set above was fitted on the H200 with it (H200 sweep, fp32 Linear layers).
    gemm_k_half_reference_tile: tuple = (128.0, 256.0)
    gemm_k_half_reference_rate_per_unit: Default = Default(
        794.4e12 / 132, "H200 probe: fp16 GEMM 794.4 TFLOPS over 132 SMs (hardware_db/calibrations/h200-sxm.json)")
    # Alignment (bytes common to the row lengths n and k) -> fraction of the aligned rate. NVIDIA's "Matrix
    # Multiplication Background User's Guide" asks for multiples of 16 bytes; H200: GPT-2's LM head (n = 50257,
    # fp16, 2-byte alignment) ran at 94 TFLOPS where aligned GEMMs of that size reach ~700.
    gemm_alignment: dict = field(default_factory=lambda: {16.0: 1.0, 8.0: 0.5, 4.0: 0.3, 2.0: 0.15, 1.0: 0.1})

    # --- depthwise convolutions ---------------------------------------------------------------------------
    # Convolutions with at most this many output channels per group (depthwise, channel multiplier <= 2) run
    # as direct convolutions on the CUDA cores, limited by a share of the bandwidth and a low operation rate,
    # whichever is slower. H200 profiles at batch >= 32: 3x3 depthwise (MobileNetV2, EfficientNet-B0) ran at
    # 1040-1077 GB/s (0.25 of the copy bandwidth) in fp16 and fp32; ConvNeXt-T's 7x7 at 8.7 TFLOPS fp16 (0.19
    # of the vector rate) and 4.3 fp32 (0.09). ResNeXt's grouped convs with 4 channels per group run on tensor
    # cores, so they are not depthwise here. 1-D depthwise convolutions run cuDNN's conv1D_NCHW kernels: H200
    # sweep, 256 channels, 33 taps over 800 steps at batch 32: 13.2 TFLOPS fp16 (0.28), 3.5 fp32 (0.075).
    depthwise_max_channels_per_group: int = 2
    # A pointwise (1x1) convolution in NCHW is, per image, a plain GEMM (C_out x C_in) @ (C_in x H*W) whose
    # contiguous row is the spatial plane H_out*W_out. cuDNN hands it to the GEMM kernels (nvjet, as cuBLAS)
    # only when that row is a multiple of 16 bytes (the tensor cores' vector load: NVIDIA's "Matrix
    # Multiplication Background" guide); otherwise it runs it as a convolution: NCHW<->NHWC conversions around
    # an implicit GEMM, low-alignment CUTLASS GEMMs (cutlass_75_*_align1, cutlass_80_*_align2) or CUDA-core
    # implicit_convolve_sgemm, all of them slower. H200 per-operator profiles (benchmarks/results/*records*,
    # 20 CNNs, fp16, 1x1 convolutions over 1 GFLOP): aligned planes (56x56, 28x28) predicted/measured 0.98
    # (n=653), 8-byte planes (14x14, 10x10) 0.36 (n=278), 2-byte planes (7x7, 19x19) 0.32 (n=230); 1-D
    # convolutions the same (Conformer's length 249: 0.17-0.44; QuartzNet's 800: 0.9-1.3). Misaligned ones
    # take the convolution class (its factor and floor). Channels-last (NHWC) ones have the channels as the
    # row and stay plain GEMMs.
    pointwise_plane_alignment_bytes: Default = Default(
        16.0, "H200 per-operator profiles: 1x1 convolutions whose H_out*W_out*element bytes is not a multiple "
              "of 16 run cuDNN's convolution kernels, not its GEMM ones (benchmarks/results/*records*)")
    depthwise_bandwidth_factor: float = 0.25
    depthwise_vector_factor: tuple = (0.17, 0.085)        # (16-bit, 32-bit) share of the vector rate
    depthwise_1d_vector_factor: tuple = (0.28, 0.075)
    # Channels-last (NHWC) depthwise convolutions, as inductor runs them (``OpRecord.family ==
    # "channels_last"``): cuDNN's direct NHWC kernels (``conv2d_c1_k1_nhwc_specialized``) read each pixel's
    # channels contiguously, as a copy does, so they move their bytes at the copy bandwidth (the copy factor
    # of ``kind_bandwidth_factor_by_width``) where NCHW's reach 0.25 of it. H200 compiled traces
    # (benchmarks/results/h200_compiled.json, matched kernel by kernel by benchmarks/studies/compiled-conv-kernels/compiled_conv_kernels.py,
    # minus the 3.0 us depthwise floor): MobileNetV2 b32 fp16's 17 3x3 depthwise convolutions moved
    # 2,366 GB/s (0.55 of the copy bandwidth), EfficientNet-B0's seven 2,369 GB/s (0.55); fp16 copies reach
    # 0.57. Arithmetic: ConvNeXt-T b32 fp16's 18 7x7 depthwise convolutions ran at 10.9 TFLOPS, 0.23 of the
    # vector rate (0.22 under autocast; EfficientNet's 5x5 0.22), where NCHW reaches 0.17. 32-bit: none
    # measured channels-last; NCHW's share is kept.
    depthwise_channels_last_vector_factor: tuple = (0.23, 0.085)
    # Dilated depthwise convolutions channels-last have no NHWC depthwise kernel: cuDNN runs its generic
    # ``conv2d_grouped_direct_kernel`` (H200 trace of compiled DeepLabV3-MobileNetV3-L b32 fp16, the three
    # 5x5 dilation-2 depthwise convolutions of its last stage at 65x65: 1,670 us for 672 channels, 3,577 and
    # 3,573 us for 960; 0.70, 0.47, 0.47 TFLOPS, 20x slower than the NHWC depthwise rate; benchmarks/results/
    # rounds/round-11/measured/post/compiled_deeplab.json, measured after blind round 11). Median 0.47 TFLOPS = 0.010 of the
    # vector rate. Eager NCHW dilated depthwise convolutions are not known to be slow (unmeasured).
    depthwise_dilated_channels_last_vector_factor: Default = Default(
        0.010, "H200, compiled DeepLabV3-MobileNetV3-L b32: cuDNN conv2d_grouped_direct_kernel, 0.47-0.70 TFLOPS")
    # Channels-last grouped convolutions: cuDNN's NHWC grouped kernels put several groups in one tile of this
    # many output channels (H200 trace of ResNeXt-50 32x4d b32 fp16, h200_compiled_run2.json: kernel names
    # ``..._g16`` / ``_g8`` / ``_g4`` / ``_g2`` at 4 / 8 / 16 / 32 channels per group, 16 x 4 = 8 x 8 =
    # 4 x 16 = 2 x 32 = 64). The tile multiplies a block-diagonal weight: it runs the dense GEMM of 64 channels
    # and keeps channels-per-group / 64 of it (``rates.grouped_channels_last_rate``). Measured: 43.4, 26.8,
    # 13.1, 10.2 us for the 0.92 GFLOP grouped 3x3 convolutions of the four stages, where NCHW's rate
    # predicts 187, 71, 32 and 18 us.
    grouped_channels_last_tile_channels: int = 64
    # An NCHW grouped convolution (eager PyTorch, cuDNN) computes each group in an NHWC tile at least 64
    # channels wide: cuDNN's kernels for 4-32 channels per group are 64x64 implicit-GEMM tiles (sm80/sm90
    # xmma "tilesize64x64x64"), and the time of one shape is nearly the same at 4, 8, 16, 32 and 64 channels
    # per group (H200 sweep, studies/grouped-conv/h200_grouped_conv_groups.json, fp16 batch 64 at 56x56: 183-202 TFLOPS at
    # 64 per group, 10-11 at 4, 44-51 at 16). ``rates.grouped_nchw_rate``.
    grouped_nchw_tile_channels: int = 64

    # --- memory-bound operators ---------------------------------------------------------------------------
    # Bandwidth efficiency relative to the attainable copy bandwidth: summed bytes over summed time of every
    # operator of that kind moving > 8 MB in the H200 profiles (fp16/fp32): elementwise 0.73/0.91, copies
    # 0.57/0.69, norms 0.53/0.34, softmax 0.56, reductions 0.39/0.52, pooling 0.18/0.36. Embedding: too few
    # large gathers measured (assumed 0.6). "other": assumed 0.8 (operators without a formula).
    kind_bandwidth_factor: dict = _d(
        elementwise=0.85, norm=0.45, softmax=0.55, reduction=0.45, pool=0.25, embedding=0.6, copy=0.63,
        other=0.8, matmul=1.0, conv=0.9, attention=1.0)
    # (16-bit, 32-bit) where they differ clearly: PyTorch's half-precision kernels move fewer bytes per thread.
    kind_bandwidth_factor_by_width: dict = _d(elementwise=(0.73, 0.91), copy=(0.57, 0.69), pool=(0.18, 0.36),
                                              reduction=(0.39, 0.52))
    # Norms differ by operator more than by anything else (16-bit / 32-bit): batch norm 0.73 / 0.65 (fp32:
    # cuDNN's inference kernel; over all eight profiled sets, 3,688 calls each), layer norm 0.24 / 0.37,
    # group norm 0.07 / 0.20 (both now modelled per row, below).
    # Layer norm: PyTorch's CUDA kernel (vectorized_layer_norm_kernel) runs one thread block per row, so a row
    # costs a fixed time (its Welford reductions and barriers) beside its bytes: time = bytes / (factor x
    # bandwidth) + rows / SMs x layer_norm_row_s (+ the floor). Least squares over every contiguous one-kernel
    # layer norm above 8 us in the H200 profiles (benchmarks/results/*records*, 2026-12-01; rows of 64 to 1,536
    # elements): fp16 factor 0.73, 0.135 us per row per SM, 2.05 us constant (n=905, median error 2.5% where the
    # bytes-only share 0.24 was off by 42%: 3.8x too fast at 64 elements, 1.7x too slow at 1,024); fp32 1.06
    # (taken as 1.0), 0.184 us, 1.76 us (n=668, 3.2%). The per-row time is clock cycles: other cards scale it by
    # the H200's clock over theirs.
    # Group norm: PyTorch's CUDA kernels reduce each (sample, group) row in one thread block (RowwiseMoments),
    # fold the statistics into scales (ComputeFusedParams) and apply them elementwise: 3 kernels in all 481
    # profiled calls. The reduction streams a row at about one element per clock per block, so a row of n
    # elements costs n x group_norm_element_s, in waves of one row per SM (rows / SMs, at least one); the apply
    # pass moves the bytes at the elementwise share (0.73 / 0.91). H200 profiles (SD-UNet, ViT-L/R50 hybrid,
    # SHViT, wav2vec 2.0; rows of 1-65,536, 1,536-122,880 elements): median 0.50 ns (fp16, n=123) and 0.46 ns
    # (fp32, n=124) per element per row wave, where the bytes-only shares (0.07 / 0.20) were 2.9x too slow at
    # batch 32 and 1.5x too fast at batch 1 (ViT-L/R50, blind round 22).
    norm_bandwidth_factor: dict = _d(batch_norm=(0.73, 0.65), layer_norm=(0.73, 1.0), group_norm=(0.73, 0.91))
    group_norm_element_s: tuple = (0.50e-9, 0.46e-9)   # (16-bit, 32-bit) per element of a row, at the H200's clock
    layer_norm_row_s: tuple = (0.135e-6, 0.184e-6)   # (16-bit, 32-bit) per row per SM at the H200's clock
    layer_norm_reference_clock_mhz: float = 1980.0   # H200 SXM boost clock (hardware_db/h200-sxm.toml)
    # Memory-bound kernels reading an activation through a permuted/transposed view (``strided``) move their
    # bytes uncoalesced (operators moving > 8 MB, fp16/fp32): elementwise 0.34/0.46, copies 0.36/0.44, norms
    # 0.10/0.16 (LayerNorm over a permuted view: PyTorch copies it contiguous first). Other kinds: their
    # contiguous factor x strided_bandwidth_factor (assumed).
    strided_kind_bandwidth_factor: dict = _d(elementwise=0.4, copy=0.4, norm=0.13)
    strided_bandwidth_factor: float = 0.3

    # --- calibration samples ------------------------------------------------------------------------------
    # Probed GEMMs shorter than this do not correct predictions: the probe times one call with CUDA events
    # after an L2 flush, which adds several microseconds (H200: a 1x1024x1024 GEMM read 7.7 us).
    gemm_sample_min_s: Default = Default(100e-6, "H200: probe samples of 25-50 us ran 25-35% below the same "
                                                 "shapes inside models (benchmarks/results/h200_records.json.gz)")
    # A probed GEMM corrects the model's time by at most this factor either way (a bad sample cannot swamp it).
    gemm_sample_clip: float = 3.0

    # --- memory -------------------------------------------------------------------------------------------
    runtime_memory_bytes: Default = Default(1e9, "assumed: CUDA context ~300-600 MB, cuBLAS/cuDNN workspaces "
                                                 "and allocator slack; one figure for models and LLMs")


DEFAULTS = RooflineDefaults()

# The one default the LLM memory model shares with the roofline.
RUNTIME_MEMORY_BYTES = DEFAULTS.runtime_memory_bytes
