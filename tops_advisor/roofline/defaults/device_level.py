"""Device-level defaults (replaced by a calibration), per-kernel device time, eager host cost, calibration
samples and the runtime memory reserve."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Default, table


@dataclass(frozen=True)
class DeviceDefaults:
    # --- device level: replaced by a calibration ---------------------------------------------------------
    # Fraction of the datasheet dense matrix peak that the best large GEMM reaches ("maximum achievable matmul
    # FLOPS", MAMF). Source: S. Bekman, ml-engineering, compute/accelerator/README.md, "Maximum Achievable
    # Matmul FLOPS comparison table" (BF16, torch 2.5-2.7): A100 SXM 86.9%, A100 PCIe 81.1%, H100 SXM 80.3%,
    # GH200 83.6%, MI300X 60.1%.
    matmul_fraction: Default[dict[str, Default[float]]] = table(
        "ml-engineering MAMF table, per vendor (each entry's source)", {
            "NVIDIA": Default(0.80, "ml-engineering MAMF table: H100 SXM 80.3%, A100 PCIe 81.1% of dense BF16 "
                                    "peak"),
            "AMD": Default(0.60, "ml-engineering MAMF table: MI300X 60.1% of dense BF16 peak (ROCm 6.2)")})
    matmul_fraction_other: Default[float] = Default(0.70, "assumed: between the NVIDIA and AMD MAMF figures")
    # Per architecture, where the same MAMF table has that architecture (checked before the vendor's figure).
    matmul_fraction_by_architecture: Default[dict[str, Default[float]]] = table(
        "ml-engineering MAMF table, per architecture (each entry's source)", {
            "Ampere": Default(0.84, "ml-engineering MAMF table: A100 SXM 86.9%, A100 PCIe 81.1% of dense BF16 "
                                    "peak (mean 84%)")})
    # Per (architecture, precision), where a measurement of that architecture's best torch.matmul exists
    # (checked first). Volta has one card in the catalog (V100 SXM2), so these are that card's: the
    # torch-performance-test-data table (github.com/zzc0721/torch-performance-test-data, issue #140: Tesla
    # V100-SXM2-16GB, PyTorch 2.7.0+cu128, best of square matmuls 1024-10240) gives FP32 14.51 of 15.7 TFLOPS
    # (92%; SIMT SGEMM) and FP16 97.36 of 125 (78%). A V100 PCIe reaches ~101 TFLOPS FP16 in cuBLAS
    # (forums.developer.nvidia.com/t/79781): the same ~100 TFLOPS, so the SXM2's 125 is not reached.
    # Turing INT8 is a ratio to the same card's FP16 under the same conditions, so it holds whatever clock the
    # card held: Jia et al. 2019 ("Dissecting the NVidia Turing T4 GPU via Microbenchmarking", arXiv 1903.07486,
    # section 4.4, Table 4.3; cuBLAS 10.1, the T4's application clock at 1,590 MHz, its 70 W limit throttling the
    # largest sizes) measured INT8 (cublasLtMatmul, IMMA) 74,934 GOPS against FP16 41,616 GFLOPS: 1.80x where
    # the datasheet says 2x (130 / 65). apache/tvm PR 4550 (a T4 at default clocks, cuBLASLt INT8, m = n = k =
    # 8192: 42.19 TOPS) and NVIDIA's forum (a T4, cuBLAS FP16 4096^3: ~24 TFLOPS) give 1.75x across two hosts.
    # So INT8 keeps 0.90 of FP16's share: 0.80 (the NVIDIA fraction Turing FP16 takes) x 0.90 = 0.72. Turing
    # has no other INT8 measurement here; the TITAN RTX (same TU10x tensor cores) takes it too.
    matmul_fraction_by_architecture_precision: Default[dict[tuple[str, str], Default[float]]] = table(
        "best torch.matmul measured per (architecture, precision) (each entry's source)", {
            ("Volta", "fp32"): Default(0.92, "torch-performance-test-data #140: V100-SXM2 FP32 matmul 14.51 of "
                                             "15.7 TFLOPS"),
            ("Volta", "fp16"): Default(0.78, "torch-performance-test-data #140: V100-SXM2 FP16 matmul 97.36 of "
                                             "125 TFLOPS"),
            ("Turing", "int8"): Default(0.72, "Jia et al. 2019, arXiv 1903.07486, Table 4.3 (T4, one run's "
                                              "conditions): cuBLASLt INT8 74,934 GOPS = 1.80x cuBLAS FP16 41,616 "
                                              "GFLOPS where the peaks are 2x; 0.80 x 1.80 / 2 = 0.72")})
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
    half_rate_matmul_fraction: Default[float] = Default(0.89, "torch-performance-test-data database.md: RTX 4090 24GB "
                                                       "fp16/bf16 torch.mm median 166.4 TFLOPS of 186.8 at "
                                                       "its 2850 MHz burst clock")
    # FP16-accumulate GEMMs on those cards (the faster rate llama.cpp's cuBLAS calls and TensorRT's fp16 tactics
    # take: catalog fp16_fp16acc) keep a smaller share of their doubled peak: an RTX 4060 ran a Triton fp16 matmul
    # at 53.1 TFLOPS with FP16 accumulation against 31.0 with FP32, 1.71x where the peaks are 2x
    # (triton-lang/triton #10851: the SM issue rate, not the tensor pipe, binds), so 0.89 x 1.71 / 2 = 0.76; and
    # TensorRT's fp16 convolution reached 110 of the RTX 3090's 142 TFLOPS (triton-lang/triton #319): 0.77.
    fp16_accumulate_matmul_fraction: Default[float] = Default(
        0.77, "triton-lang/triton #10851 (RTX 4060: FP16-accumulate 1.71x FP32-accumulate, x 0.89 / 2 = 0.76); "
        "triton-lang/triton #319 (TensorRT fp16 convolution 110 of the RTX 3090's 142 TFLOPS: 0.77)")
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
    shared_int32_fp32_matmul_fraction: Default[float] = Default(0.59, "torch-performance-test-data database.md: RTX "
                                                               "4090 24GB FP32 torch.mm median 54.72 TFLOPS "
                                                               "of 93.4 at its 2850 MHz burst clock")
    shared_int32_fp32_architectures: Default[tuple[str, ...]] = Default(
        ("Ampere", "Ada Lovelace", "Blackwell"), "GA102 whitepaper 'GA10x SM' (AD10x and GB20x keep it): one of "
        "each partition's two 16-lane datapaths runs FP32 or INT32")
    shared_int32_fp32_lanes_per_unit: Default[int] = Default(
        128, "GA102 whitepaper: 128 FP32 lanes per SM, half of them shared with INT32 (GA100 and Volta: 64)")
    # Fraction of datasheet DRAM bandwidth that a large copy reaches, by (architecture, memory type): the first
    # rule whose architecture (None: any) and memory-type prefix match the card wins; else the family below.
    # The memory controller sets it, so it is per generation, not per card.
    bandwidth_fraction_rules: Default[tuple[tuple[str | None, str, Default[float]], ...]] = Default((
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
    ), "large-copy measurements per (architecture, memory type) (each rule's source)")
    # Fraction of datasheet DRAM bandwidth that a large device-to-device copy reaches, by memory family (cards
    # no rule above covers).
    bandwidth_fraction: Default[dict[str, Default[float]]] = table(
        "large-copy efficiency per memory family (each entry's source)", {
            "HBM": Default(0.85, "typical large-copy efficiency of HBM2e/HBM3 parts (H100 SXM: ~2.8-3.0 of 3.35 "
                                 "TB/s in nvbandwidth/STREAM-style copies); replaced by the probe's measured copy"),
            "GDDR": Default(0.85, "assumed like HBM; replaced by the probe's measured copy"),
            "LPDDR": Default(0.79, "CUDA bandwidthTest device-to-device on a Jetson Orin NX 16GB at MAXN (nvpmodel -m 0, jetson_clocks; JetPack 6.2.1): 80.6 of 102.4 GB/s (visionbike/Platform-Setup-Guides at 8842c8a, jetson_orin_nx/jetpack_6.2.x); AGX Orin 64GB MAXN: read 152.8 (0.746), copy 183.3 (0.895) of 204.8 GB/s (infinigence/ApxInf at 21ae1dc, doc/jetson-roofline.md); replaced by a probe")})
    # Fraction of the dense FP32 (non-tensor) rate that vector work (elementwise, norms) reaches when it is
    # compute-bound; it almost never is.
    vector_fraction: Default[float] = Default(0.70, "assumed")
    # How a power-limited card's dynamic power grows with its clock (roofline/power_limit.py): P = a C V^2 f,
    # and across the boost range of a DVFS table the voltage rises about in proportion to the clock, so P ~ f^3.
    dynamic_power_clock_exponent: Default[float] = Default(
        3.0, "CMOS dynamic power a*C*V^2*f with V roughly proportional to f over the DVFS boost range (e.g. "
             "AMD/NVIDIA V/f curves; Kim et al., 'Power Capping of GPUs', the f*V^2 model); an assumption, not "
             "fitted: a card whose voltage sits at its floor would follow f^1")
    # Compute units (SMs/CUs) when the catalog does not list them: only wave quantisation depends on it.
    compute_units_unknown: Default[float] = Default(100, "assumed: the order of a data-centre GPU (A100 108 SMs, "
                                                  "H100 SXM 132); only wave quantisation depends on it")

    # --- per-kernel device time (graph replay) ------------------------------------------------------------
    # What the probe measures on the card where the floors and gap below were measured (H200, probe
    # kernel_graph_us / kernel_eager_us, hardware_db/calibrations/h200-sxm.json). A calibration of another card
    # scales the floors, gap and eager operator cost by its own measurement over these.
    tiny_kernel_reference_s: Default[float] = Default(0.87e-6, "H200 probe: trivial kernel replayed in a CUDA graph")
    # The floors and gap below are fixed counts of GPU clock cycles, not of seconds: a kernel's shortest time is
    # its pipeline filling and draining (grid launch by the front end, one wave's ramp-up, the prologue's
    # loads issued and the epilogue's writes retired, the tail), each a number of dependent steps of the SM
    # and front-end clocks; a card without a probe takes them at (this clock / its clock: the boost clock
    # light kernels run at, times the catalog's sustained/boost ratio where it has one). The H200 ran them at
    # its 1980 MHz maximum SM clock (nvidia-smi on the measuring card, hardware_db/h200-sxm.toml).
    # Check on cards nobody here measured, not fitted (benchmarks/published, the visible rows): A100 (1410
    # MHz) PyTorch rows 13% -> 9% median |error|, Jetson AGX Orin (1300 MHz) 14% -> 9%, RTX 4090 (2730 MHz
    # sustained) 9% -> 5% (docs/published.md, 'Round 3 follow-up, second session').
    kernel_floor_reference_clock_mhz: Default[float] = Default(
        1980.0, "H200 SXM: nvidia-smi 'Max Clocks: SM 1980 MHz' on the card the floors and gap were measured on")
    eager_launch_reference_s: Default[float] = Default(10.8e-6, "H200 probe: trivial operator launched eagerly")
    # The host time per nn.Module call of the probe's stack of tiny Linear layers (probe.overhead.module_call_s)
    # at which the eager host costs below hold. A probe that measures it scales them in proportion: the stack
    # is module call + dispatcher + launch, what a model's eager time is made of. Derived, not fitted to a
    # round: 88 eager batch-1 timings of 18 library models on the H200 machine, each beside a stack probe
    # (benchmarks/harness/host_drift.py; rounds/round-15/measured and round-23/measured/host_drift.json, the host in its fast state at
    # 16-17 us and its slow one at 25-28 us): measured / predicted-at-reference = stack time / 17.8 us at the
    # median (per measuring run: 21.0 us in round 15's, 16.5 us in round 23's; `benchmarks/studies/host-stack-fit/host_stack_fit.py`).
    eager_module_call_reference_s: Default[float] = Default(17.8e-6, "H200 machine: 88 timings of 18 models beside "
                                                               "the module-stack probe (host_drift.json)")
    # Idle time between back-to-back kernels in a CUDA graph replay. H200: (graph latency - summed kernel
    # time) / kernels = 0.6-0.9 us for forwards made of small kernels (19 models at batch 1 and 8).
    kernel_gap_s: Default[float] = Default(0.75e-6, "H200 per-operator profiles: (graph latency - kernel time) / kernels")
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
    kind_floor_s: Default[dict[str, float]] = table(
        "H200 profiles of 48 models (benchmarks/results/*records*, 2026-12-01): measured minus predicted work "
        "of single-kernel operators under 20 MFLOP and 1 MB, per kind (docs/reports/op-accuracy.md)", dict(
            elementwise=1.2e-6, copy=2.0e-6, embedding=1.9e-6, reduction=2.7e-6, pool=2.3e-6, norm=3.6e-6,
            softmax=1.6e-6, matmul=2.4e-6, conv=5.5e-6, attention=5.2e-6, other=2.0e-6,
            depthwise=1.9e-6, batch_norm_cudnn=2.2e-6, layer_norm=2.9e-6, grouped_conv=7.9e-6))
    # Each kernel an operator launches beyond its first.
    kernel_floor_s: Default[float] = Default(1.2e-6, "H200: the median elementwise kernel moving < 1 MB")

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
    eager_op_s: Default[float] = Default(11.0e-6, "7.5 us / 0.68: 37 batch-1 forwards on the H200 machine "
                                           "(benchmarks/results/h200_host_cost_b1.json), scaled to the "
                                           "reference host")
    eager_module_call_s: Default[float] = Default(14.8e-6, "10.1 us / 0.68: the same fit, per nn.Module call that "
                                                    "runs operators")
    eager_empty_module_call_s: Default[float] = Default(5.6e-6, "3.8 us / 0.68: the same fit, per nn.Module call "
                                                         "that runs none")
    eager_python_call_s: Default[float] = Default(5.8e-6, "4.0 us / 0.68: the same fit, per Python call the model's "
                                                   "code makes outside torch (counting/pycalls.py)")
    # How the eager host cost follows the probe's launch time: host cost = eager_op_s x (f + (1 - f) x launch /
    # reference launch). A bare launch (driver + dispatcher) is not all of a module's host time: part of it is
    # interpreter work that moved less between the two hosts measured. Reference host: launch 10.8 us, host
    # cost 1.0; 2026-11-30 host: launch 6.0 us (blind round 10 probe, 6.2/6.0/5.8 us through the run) and
    # host cost 0.68 of the reference (host_cost.py, 4 of 5 common models): f = (0.68 - 0.556) / (1 - 0.556).
    eager_host_fixed_share: Default[float] = Default(0.28, "two H200 hosts: launch 10.8 -> 6.0 us (0.556x) moved the "
                                                    "measured host cost 0.68x (benchmarks/results/"
                                                    "h200_host_cost_b1.json, rounds/round-10/measured/launch_*.json)")
    eager_functional_op_s: Default[float] = Default(20.5e-6, "H200 machine: eager LLM decode, 26.5 ms / 1,297 operators")
    eager_extra_kernel_s: Default[float] = Default(3e-6, "assumed: a plain cudaLaunchKernel costs ~2-4 us of host time")
    eager_no_kernel_op_s: Default[float] = Default(2e-6, "assumed: a view or metadata op costs host time, no kernel")

    # --- calibration samples ------------------------------------------------------------------------------
    # Probed GEMMs shorter than this do not correct predictions: the probe times one call with CUDA events
    # after an L2 flush, which adds several microseconds (H200: a 1x1024x1024 GEMM read 7.7 us).
    gemm_sample_min_s: Default[float] = Default(100e-6, "H200: probe samples of 25-50 us ran 25-35% below the same "
                                                 "shapes inside models (benchmarks/results/h200_records.json.gz)")
    # A probed GEMM corrects the model's time by at most this factor either way (a bad sample cannot swamp it).
    gemm_sample_clip: Default[float] = Default(3.0, "assumed: a bad probe sample cannot swamp the model")

    # --- L2 cache reuse (roofline/l2.py) ---------------------------------------------------------------
    # How much of the datasheet L2 a streamed data set can use before reads fall to DRAM, per architecture.
    # Measured with one microbenchmark on three dies: te42kyfo/gpu-benches, gpu-l2-cache (every SM reads one
    # buffer of growing size), results at commit 3088b3337998d1d9fff53c7af665f587af83a178. The bandwidth stays
    # on its L2 plateau up to: L40 (AD102, 96 MiB) 91,648 kB, 0.93 of the L2 (5,243 GB/s; 110,080 kB: 1,075,
    # DRAM); H200 (60 MiB) 40,448 kB, 0.66 (9,666 GB/s; 48,128 kB: 7,542, falling to 3,888 from 69,632 kB);
    # A100 80GB (40 MiB) 25,600-28,160 kB, 0.63-0.69 (5,376 / 5,170 GB/s; 30,720 kB: 4,000). GA100 and GH100
    # split the L2 in two halves: a line an SM reads from the far half is copied into its near half, so a line
    # read from both halves holds two slots (Jia et al., "Dissecting the Ampere GPU architecture through
    # microbenchmarking", GTC 2021 S33322: 2 x 20 MB near/far partitions on A100); AD102's L2 is one pool.
    # GB202 (RTX 5090) is a GeForce die like AD102 and takes Ada's share (not measured). Ampere here means
    # GA100: GA102's 6 MB L2 has no l2_bandwidth_gb_s in the catalog, so the rule is off there. An
    # architecture not listed gets no L2 reuse.
    # The per-kind bandwidth shares (vector.py) were measured on the H200, whose L2 held part of what those
    # operators read: they contain the H200's reuse. A card is priced for the reuse its L2 gives beyond (or short
    # of) that: its L2 hits minus the hits the same operators get from the H200's usable L2 (roofline/l2.py).
    l2_reference_bytes: Default[float] = Default(
        60 * 2**20 * 0.66, "H200 SXM: 60 MiB L2 (hardware_db/h200-sxm.toml) x its usable share 0.66 "
        "(l2_usable_share), the card the per-kind bandwidth shares were measured on")
    l2_reference_speed_ratio: Default[float] = Default(
        9780 / 4800, "H200 SXM: L2 read bandwidth 9,780 GB/s (gpu-benches, hardware_db/h200-sxm.toml) over its "
        "4,800 GB/s HBM3e: how much faster the reference's L2 served its hits than DRAM")
    l2_usable_share: Default[dict[str, float]] = table(
        "te42kyfo/gpu-benches gpu-l2-cache at 3088b33: last data set on the L2 plateau / datasheet L2 (L40 "
        "0.93, H200 0.66, A100 80GB 0.63-0.69); Blackwell (GB202) assumed as Ada", {
            "Ada Lovelace": 0.93, "Blackwell": 0.93, "Hopper": 0.66, "Ampere": 0.66})

    # --- memory -------------------------------------------------------------------------------------------
    runtime_memory_bytes: Default[float] = Default(1e9, "assumed: CUDA context ~300-600 MB, cuBLAS/cuDNN workspaces "
                                                 "and allocator slack; one figure for models and LLMs")
