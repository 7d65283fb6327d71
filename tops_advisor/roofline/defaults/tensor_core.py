"""Defaults of tensor-core operators: convolutions, fused attention, GEMM tiles, split-K and alignment."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Default, GemmTile, table


@dataclass(frozen=True)
class TensorCoreDefaults:
    # --- tensor-core operators ----------------------------------------------------------------------------
    # Compute efficiency of convolutions and fused attention relative to a plain GEMM of the same shape.
    conv_factor: Default[float] = Default(0.40, "H200 primitives (fp16 NCHW, cuDNN 9): 3x3 convolutions at batch 32 "
                                         "reach 150-255 TFLOPS against ~790 for cuBLAS GEMMs")
    # TF32 convolutions reach a larger share of their (lower) peak than fp16 NCHW ones, which pay for layout
    # conversions: H200 primitives, 3x3 convs at batch 32: TF32 23-46% of the TF32 peak, fp16 19-32%.
    conv_tf32_factor: Default[float] = Default(0.55, "H200 primitives: TF32 3x3 convolutions 92-180 of 395 TFLOPS")
    # The two factors above were measured on one card at two operations-per-byte ratios (datasheet peak over
    # datasheet bandwidth): fp16 989.5 TFLOPS / 4.8 TB/s = 206 flop/B, TF32 494.5 / 4.8 = 103 flop/B. A
    # convolution pays, beside its GEMM, work that scales with bytes (layout conversions, im2col loads, the
    # filter transform), so its share of the GEMM rate is A / (1 + c x intensity); the two H200 points fix A
    # (0.88) and c (0.0058 B/flop): ``conv_factor_at``. On the H200 it returns 0.40 and 0.55 exactly; a card
    # with fewer operations per byte (V100 FP32 17 flop/B, A100 TF32 77) gets a larger share. 16-bit and
    # 8-bit convolutions start from the fp16 point, TF32 and plain FP32 (SIMT) ones from the TF32 point.
    conv_reference_intensity: Default[dict[str, Default[float]]] = table(
        "H200 SXM datasheet peaks over its bandwidth (each entry's source)", {
            "fp16": Default(989.5 / 4.8, "H200 SXM datasheet: 989.5 TFLOPS dense fp16 / 4.8 TB/s (flop per "
                                         "byte)"),
            "tf32": Default(494.5 / 4.8, "H200 SXM datasheet: 494.5 TFLOPS dense tf32 / 4.8 TB/s (flop per "
                                         "byte)")})
    conv_intensity_scaling: Default[bool] = Default(
        True, "the two H200 convolution factors at two operations-per-byte ratios fix A and c of A / (1 + c x "
              "intensity)")
    # Plain FP32 convolutions on cards without TF32 (Volta, Turing) run cuDNN's SIMT implicit-GEMM kernels in
    # NCHW (volta/maxwell_scudnn_128x128_*, implicit_convolve_sgemm in the nvprof traces of PyTorch issue
    # #13412): no NCHW<->NHWC conversions, which the tensor-core paths pay (PyTorch issue #81940, A100 TF32:
    # nchwToNhwc 16.6% and nhwcToNchw 15.7% of the time beside the implicit GEMM's 58.8%). Their share of the
    # GEMM rate is that of a GEMM: xuqiantong/CUDA-Winograd README, cuDNN GEMM + BN + ReLU, ResNet layers at
    # one stage: the 3x3 128->128 convolution (2.25x the multiply-adds of the 1x1 512->128 one) takes 214 us
    # against 119 us, 1.8x: at least the GEMM's rate per operation.
    conv_simt_factor: Default[float] = Default(1.0, "cuDNN SIMT FP32 convolutions run in NCHW without layout "
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
    # An fp32 convolution PyTorch lets cuDNN run in TF32 can still take cuDNN's plain-FP32 kernels where TF32
    # buys little: on cards whose TF32 tensor peak is at most this multiple of the FP32 CUDA-core peak (GA10x,
    # AD10x, GB20x: 1x on GeForce, 2x on the A10/A40/L4/L40S) they pay no layout conversion and, for 3x3
    # stride-1 ones, Winograd's 2.25x fewer multiplies; GA100/GH100 (8x, 7.5x) keep TF32 implicit GEMM
    # (rates/conv.py fp32_simt_rate; ungrouped NCHW only).
    fp32_simt_tf32_max_ratio: Default[float] = Default(2.0, "GA102 whitepaper: RTX 3090 TF32 35.6 = FP32 35.6 "
                                                       "TFLOPS; tinygrad PR #1675: PyTorch fp32 3x3 conv at "
                                                       "86.9 TFLOPS on an RTX 3090; A100 traces (PyTorch #81940) "
                                                       "and H200 primitives: TF32 implicit GEMM at 8x and 7.5x")
    winograd_speedup: Default[float] = Default(2.25, "F(2x2,3x3) multiply count (Lavin & Gray 2016); cuDNN "
                                              "Winograd over its GEMM on ResNet 3x3 layers 2.25-2.48x "
                                              "(xuqiantong/CUDA-Winograd README)")
    attention_factor: Default[float] = Default(0.70, "FlashAttention-2 forward reaches ~50-70% of dense peak (Dao "
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
    attention_block_s: Default[float] = Default(1.1e-6, "H200 SDPA sweep: blocks of one query tile and one key tile "
                                                 "(<= 64 tokens) take 2.32 us (head dim <= 64), 3.02 (128)")
    attention_hopper_native_fraction: Default[float] = Default(1.0, "H200 SDPA sweep: cuDNN's products at the GEMM rate")
    attention_hopper_fa2_fraction: Default[float] = Default(0.31, "H200 SDPA sweep, head dim 36, 1,024 tokens; "
                                                          "FlashAttention-3 paper: FA2 ~35% of H100 peak")
    # PyTorch's NCHW bilinear upsampling kernel loops over batch x channels in each thread (rates.bilinear_loop_s).
    bilinear_iteration_s: Default[float] = Default(320e-9, "H200 sweep of F.interpolate(mode='bilinear'), 14 shapes: "
                                                    "190-570 ns per loop iteration, median 320 "
                                                    "(benchmarks/studies/slow-ops/h200_slow_ops_sweep.json)")
    # Convolutions whose input has fewer channels than a tensor-core fragment (the image stem: 1, 3 or 4
    # channels) cannot run cuDNN's tensor-core kernels on NCHW data without padding (cuDNN Legacy API guide,
    # "Tensor Core operations": channels a multiple of 8 for 16-bit data); cuDNN picks CUDA-core kernels
    # (implicit_convolve_sgemm, or sm80 indexed implicit GEMMs behind layout conversions, named in the traces).
    # Each output element pays a fixed cost (index arithmetic, the write) beside its K = channels x window
    # multiply-adds, so the share of the FP32 CUDA-core peak is e x K / (K + K0). Fitted in log space on 25 H200
    # fp16 points with 3 input channels: the stem sweep (3x3/s2, 7x7/s4, 4x4/s4 at batch 8 and 128;
    # h200_slow_ops_sweep.json), DeiT-S's 16x16/s16 patch embedding (batch 8, 32, 128;
    # benchmarks/rounds/round-05/measured/round05_records.json.gz) and, after blind round 11 (AlexNet's 11x11/4
    # stem came out 36-45% too slow), 3x3/s1, 5x5/s2, 7x7/s2, 8x8/s8, 11x11/s4, 14x14/s14 and 16x16/s16 at
    # batch 8 and 128 (h200_conv_channels_sweep.json): 6.3-29
    # TFLOPS; e = 0.279, K0 = 29, median error 22%, worst 85% (a single constant: 22%, the first 11-point fit
    # on all 25: 24%). The tensor-core model had predicted them 1.5-11x too fast. The share is of the
    # CUDA-core peak, the unit most of these kernels run on; e and K0 are measured on Hopper only.
    # Applied where measured: Hopper. Other architectures keep the tensor-core convolution model for stems
    # (unmeasured there; the published T4/V100/A100 AMP ResNet-50 rows, run channels-last, do not say which).
    thin_conv_channels: Default[int] = Default(
        8, "cuDNN Legacy API guide, 'Tensor Core operations': channels a multiple of 8 for 16-bit data")
    thin_conv_architectures: Default[tuple[str, ...]] = Default(
        ("Hopper",), "where e and K0 were measured (H200); other architectures unmeasured")
    thin_conv_fp32_factor: Default[float] = Default(0.279, "H200: 3-channel fp16 convolutions, 25 points "
                                                    "(h200_slow_ops_sweep.json 'stem', h200_conv_channels_"
                                                    "sweep.json 'stems', round-05/measured/round05_records DeiT-S)")
    thin_conv_k0: Default[float] = Default(29.0, "the same fit: the fixed cost per output element, in multiply-adds")
    # One exception has a kernel of its own: the ResNet stem (7x7, stride 2, 64 outputs, <= 4 channels) runs
    # cuDNN's tensor-core "image_first_layer ... k64c4r7s7_stride2x2" kernel (named in the same sweep's trace):
    # 36 and 46 TFLOPS at batch 8 and 128, median 41 = 0.041 of the 989.5 TFLOPS fp16 peak.
    first_layer_conv_factor: Default[float] = Default(0.041, "H200 sweep: cuDNN image_first_layer kernel, 7x7/s2 3->64, "
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
    thin_conv_channels_last_factor: Default[float] = Default(
        0.0507, "H200 compiled traces, 9 channels-last stems at batch 32 fp16: 42-53 TFLOPS after the K / (K + "
                "K0) and 32-output-tile terms, median 50.2 of 989.5")
    thin_conv_channels_last_tile: Default[int] = Default(
        32, "H200 compiled traces: the stems' sm80_xmma_fprop_implicit_gemm_indexed_wo_smem nhwc "
            "tilesize128x32x16 kernel, 32 output channels per tile")
    first_layer_channels_last_factor: Default[float] = Default(
        0.103, "H200 compiled traces: channels-last image_first_layer 7x7/s2 3->64 plus its padding kernels, "
               "7.55 GFLOP in 74.1-74.9 us (ResNet-50 fp16/AMP, ResNeXt-50)")
    resident_threads_per_unit: Default[float] = Default(
        2048.0, "CUDA C++ Programming Guide, technical specifications: threads resident per SM (Volta, A100, "
                "Hopper; GA10x/Ada 1536)")
    special_function_per_clock: Default[float] = Default(
        16.0, "CUDA C++ Programming Guide, arithmetic throughput: exp2 per clock per SM, compute capability "
              "5.x-9.0")
    attention_block_rows: Default[float] = Default(
        128.0, "FlashAttention-2: 128 query rows per thread block (16-bit)")
    attention_block_rows_fp32: Default[float] = Default(
        64.0, "PyTorch's memory-efficient attention kernel: 64 query rows per thread block (fp32)")
    attention_head_dim_step: Default[float] = Default(
        32.0, "FlashAttention (16-bit) is compiled for head dims in multiples of 32")
    attention_head_dim_max: Default[float] = Default(
        256.0, "FlashAttention (16-bit) is compiled for head dims up to 256")
    attention_head_dim_tiers_fp32: Default[tuple[float, ...]] = Default(
        (64.0, 128.0), "PyTorch's fp32 memory-efficient kernel: 64, 128, then any (H200 sweep, "
                       "benchmarks/results/h200_sweep.json: head dims 36, 40 and 64 at batch 32 all 80 us)")
    # How far BLAS libraries split K for short-and-wide GEMMs (cuBLAS: yes; cuDNN convolutions: rarely);
    # plain FP32 GEMMs split less (H200 primitives, fp32 Linear on 128 tokens).
    max_split_k: Default[dict[str, float]] = table(
        "cuBLAS splits K for short-and-wide GEMMs, cuDNN convolutions rarely (H200 primitives)",
        dict(matmul=4.0, attention=1.0, conv=1.0))
    max_split_k_simt: Default[float] = Default(2.0, "H200 primitives: fp32 Linear on 128 tokens")
    # Each split keeps at least this much of K. Assumed (not measured): four 64-deep K tiles, enough for the
    # split's main loop to amortise its prologue and the reduction of the partial results.
    split_k_min_depth: Default[float] = Default(256.0, "assumed: four 64-deep K tiles per split")
    # A reduction at least this many times deeper than the larger output side (a weight gradient: K = the
    # tokens or pixels of the batch, m x n = a layer's weight) is split past those caps, until the tiles fill the
    # machine: cuBLAS ran ResMLP-24's fp32 weight gradients (K 16x and 250x the larger side) with its split-K
    # reduce kernel, 196 x 196 x 49152 at 30 TFLOPS, 8x what two splits allow. Below 16x the usual caps stand
    # (unmeasured in between: forward GEMMs up to 8x deep, a GQA key/value projection, keep them).
    split_k_deep_ratio: Default[float] = Default(
        16.0, "H200 profile of timm resmlp_24_224 fp32 training (benchmarks/studies/training-compiled/h200-profile): "
             "cublasLt splitKreduce_kernel with its weight-gradient GEMMs (K >= 16x the larger output side), the "
             "shallowest of them; shallower GEMMs keep the caps fitted on forward ones")
    # GEMM tiles a BLAS library picks from, with the fraction of the large-GEMM rate each reaches when full
    # (CUTLASS/cuBLAS tile configurations). The (8, 128) tile stands for the GEMV / skinny kernels libraries
    # pick when m is tiny (LLM decode): they stream the weights, so a batch-1 product is memory-bound.
    gemm_tiles: Default[tuple[GemmTile, ...]] = Default(
        (GemmTile(128, 256, 1.0), GemmTile(128, 128, 0.92), GemmTile(64, 128, 0.8), GemmTile(64, 64, 0.6),
         GemmTile(32, 32, 0.3), GemmTile(8, 128, 0.6)),
        "CUTLASS/cuBLAS tile configurations; (8, 128) for GEMV / skinny kernels")
    # Plain FP32 runs SIMT kernels: large tiles when there is work, smaller tiles and GEMV-like kernels
    # (gemv2T, gemmSN) for few rows. H200 sweep (`benchmarks/studies/kernel-sweep/sweep_kernels.py report`): with the large tiles
    # only, fp32 Linear layers on 1, 8 and 197 rows were predicted 1.4-5x too slow; with these, median 24%.
    gemm_tiles_simt: Default[tuple[GemmTile, ...]] = Default(
        (GemmTile(128, 128, 1.0), GemmTile(128, 64, 0.85), GemmTile(64, 64, 0.55), GemmTile(8, 128, 0.6),
         GemmTile(1, 128, 0.6)),
        "H200 sweep (benchmarks/studies/kernel-sweep/sweep_kernels.py report): fp32 Linear layers on 1, 8 and 197 rows, median 24%")
    # Tiles of at most skinny_tile_rows rows stand for GEMV-like kernels: used only up to skinny_max_rows rows.
    skinny_tile_rows: Default[int] = Default(8, "the GEMV-like (8, 128) tile of gemm_tiles")
    skinny_max_rows: Default[int] = Default(32, "assumed: libraries tile products of more rows")
    # K below which a GEMM's prologue/epilogue dominates: efficiency k / (k + gemm_k_half).
    gemm_k_half: Default[float] = Default(48.0, "H200: the K ramp of a 128 x 256 tensor-core tile at the fp16 "
                                                "GEMM rate (fixed time 0.52 us per tile)")
    # The K ramp is a fixed time per tile (prologue: the first loads' DRAM latency; epilogue: the write) over
    # the time of one K step, so in K it shrinks as a tile's K step gets slower. gemm_k_half is for a 128 x
    # 256 tensor-core tile at the H200's fp16 GEMM rate (probe: 794.4 TFLOPS / 132 SMs, hardware_db/
    # calibrations/h200-sxm.json): one K step = 2 x 128 x 256 / 6.02e12 = 10.9 ns, so the fixed time is 48 x
    # 10.9 ns = 0.52 us. A SIMT FP32 128 x 128 tile on a V100 (14.4 TFLOPS / 80 SMs) takes 182 ns per K step:
    # k_half 2.9, where the constant 48 cost a 64-deep 1x1 convolution 43% of its rate. Applied to SIMT
    # convolutions (``rates.simt_conv_k_half``): cards without TF32 (Volta, Turing), a class no H200 number
    # was fitted on (the H200 runs fp32 convolutions in TF32). SIMT matmuls keep the constant: the SIMT tile
    # set above was fitted on the H200 with it (H200 sweep, fp32 Linear layers).
    gemm_k_half_reference_tile: Default[dict[str, float]] = table(
        "the largest tensor-core tile of gemm_tiles, for which gemm_k_half holds", {"rows": 128.0, "cols": 256.0})
    gemm_k_half_reference_rate_per_unit: Default[float] = Default(
        794.4e12 / 132, "H200 probe: fp16 GEMM 794.4 TFLOPS over 132 SMs (hardware_db/calibrations/h200-sxm.json)")
    # Alignment (bytes common to the row lengths n and k) -> fraction of the aligned rate. NVIDIA's "Matrix
    # Multiplication Background User's Guide" asks for multiples of 16 bytes; H200: GPT-2's LM head (n = 50257,
    # fp16, 2-byte alignment) ran at 94 TFLOPS where aligned GEMMs of that size reach ~700.
    gemm_alignment: Default[dict[float, float]] = table(
        "NVIDIA Matrix Multiplication Background User's Guide (16-byte rows); H200: GPT-2's 2-byte-aligned LM "
        "head at 94 TFLOPS against ~700 aligned", {16.0: 1.0, 8.0: 0.5, 4.0: 0.3, 2.0: 0.15, 1.0: 0.1})
