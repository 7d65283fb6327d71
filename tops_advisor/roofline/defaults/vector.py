"""Defaults of the convolution kernels cuDNN picks by shape (depthwise on the vector units, the 1x1 plane
alignment, grouped tiles) and of memory-bound operators (bandwidth shares by kind, width and norm, per-row norm
times)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Default, by_width, per_width, table


@dataclass(frozen=True)
class VectorDefaults:
    # --- depthwise convolutions ---------------------------------------------------------------------------
    # Convolutions with at most this many output channels per group (depthwise, channel multiplier <= 2) run
    # as direct convolutions on the CUDA cores, limited by a share of the bandwidth and a low operation rate,
    # whichever is slower. H200 profiles at batch >= 32: 3x3 depthwise (MobileNetV2, EfficientNet-B0) ran at
    # 1040-1077 GB/s (0.25 of the copy bandwidth) in fp16 and fp32; ConvNeXt-T's 7x7 at 8.7 TFLOPS fp16 (0.19
    # of the vector rate) and 4.3 fp32 (0.09). ResNeXt's grouped convs with 4 channels per group run on tensor
    # cores, so they are not depthwise here. 1-D depthwise convolutions run cuDNN's conv1D_NCHW kernels: H200
    # sweep, 256 channels, 33 taps over 800 steps at batch 32: 13.2 TFLOPS fp16 (0.28), 3.5 fp32 (0.075).
    depthwise_max_channels_per_group: Default[int] = Default(
        2, "H200 profiles: depthwise (channel multiplier <= 2) run direct kernels; ResNeXt's 4 per group run "
           "on tensor cores")
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
    pointwise_plane_alignment_bytes: Default[float] = Default(
        16.0, "H200 per-operator profiles: 1x1 convolutions whose H_out*W_out*element bytes is not a multiple "
              "of 16 run cuDNN's convolution kernels, not its GEMM ones (benchmarks/results/*records*)")
    # PyTorch's own depthwise backward kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu:
    # conv_depthwise2d_backward_kernel for the input's gradient, conv_depthwise2d_grad_weight_kernel for the
    # weight's) are slower than its forward kernel for the same multiply-adds: the input gradient gathers each
    # output position's window in reverse (no tiling of the forward's kind), the weight gradient reduces over the
    # whole batch per weight. Measured on the H200 (Hopper), borrowed for other architectures: a time multiple of
    # the forward kernel's, applied to its rate and its bandwidth share.
    depthwise_gradient_slowdown: Default[dict[str, float]] = Default(
        {"native_depthwise_dgrad": 5.7, "native_depthwise_wgrad": 1.8},
        "H200 profile, EfficientNet-B0 b32 amp (benchmarks/studies/training-step/h200_train_profiles.json): "
        "backward-input kernels 1068 us and grad-weight kernels 339 us per step against the forward kernel's "
        "188 us")
    depthwise_bandwidth_factor: Default[float] = Default(
        0.25, "H200 profiles at batch >= 32: 3x3 depthwise (MobileNetV2, EfficientNet-B0) 1040-1077 GB/s")
    depthwise_vector_factor: Default[dict[str, float]] = per_width(
        0.17, 0.085, "H200 profiles: ConvNeXt-T's 7x7 depthwise at 8.7 TFLOPS fp16 (0.19 of the vector "
        "rate), 4.3 fp32 (0.09); share of the vector rate")
    depthwise_1d_vector_factor: Default[dict[str, float]] = per_width(
        0.28, 0.075, "H200 sweep, cuDNN conv1D_NCHW: 256 channels, 33 taps, 800 steps, batch 32: 13.2 TFLOPS "
        "fp16 (0.28), 3.5 fp32 (0.075)")
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
    depthwise_channels_last_vector_factor: Default[dict[str, float]] = per_width(
        0.23, 0.085, "H200 compiled traces: ConvNeXt-T b32 fp16's 7x7 depthwise channels-last at 10.9 TFLOPS "
        "(0.23); 32-bit unmeasured, NCHW's share kept")
    # Dilated depthwise convolutions channels-last have no NHWC depthwise kernel: cuDNN runs its generic
    # ``conv2d_grouped_direct_kernel`` (H200 trace of compiled DeepLabV3-MobileNetV3-L b32 fp16, the three
    # 5x5 dilation-2 depthwise convolutions of its last stage at 65x65: 1,670 us for 672 channels, 3,577 and
    # 3,573 us for 960; 0.70, 0.47, 0.47 TFLOPS, 20x slower than the NHWC depthwise rate; benchmarks/results/
    # rounds/round-11/measured/post/compiled_deeplab.json, measured after blind round 11). Median 0.47 TFLOPS = 0.010 of the
    # vector rate. Eager NCHW dilated depthwise convolutions are not known to be slow (unmeasured).
    depthwise_dilated_channels_last_vector_factor: Default[float] = Default(
        0.010, "H200, compiled DeepLabV3-MobileNetV3-L b32: cuDNN conv2d_grouped_direct_kernel, 0.47-0.70 TFLOPS")
    # Channels-last grouped convolutions: cuDNN's NHWC grouped kernels put several groups in one tile of this
    # many output channels (H200 trace of ResNeXt-50 32x4d b32 fp16, h200_compiled_run2.json: kernel names
    # ``..._g16`` / ``_g8`` / ``_g4`` / ``_g2`` at 4 / 8 / 16 / 32 channels per group, 16 x 4 = 8 x 8 =
    # 4 x 16 = 2 x 32 = 64). The tile multiplies a block-diagonal weight: it runs the dense GEMM of 64 channels
    # and keeps channels-per-group / 64 of it (``rates.grouped_channels_last_rate``). Measured: 43.4, 26.8,
    # 13.1, 10.2 us for the 0.92 GFLOP grouped 3x3 convolutions of the four stages, where NCHW's rate
    # predicts 187, 71, 32 and 18 us.
    grouped_channels_last_tile_channels: Default[int] = Default(
        64, "H200 trace of ResNeXt-50 32x4d b32 fp16: cuDNN NHWC grouped kernels _g16/_g8/_g4/_g2 at 4/8/16/32 "
            "channels per group (h200_compiled_run2.json)")
    # Channels-last grouped convolutions whose channels per group are not a power of two (RegNet's 24, 48, 56,
    # ...) have no NHWC grouped kernel in cuDNN 9 on Hopper: cuDNN slices the tensor per group
    # (tensorTransformGeneric, nhwcSliceCKernel, then CUTLASS per slice) at a cost per output element whatever the
    # group width. H200 sweep (benchmarks/studies/grouped-nhwc/h200_grouped_sweep.json, fp16 3x3, 384 and 768
    # channels, 14-56 pixels, batch 32-128; cuDNN 9.19): 24, 48 and 96 channels per group all ran
    # tensorTransformGeneric first, 24-36 ps per output element, median 26.2 (0.69 x channels-per-group TFLOPS),
    # where NCHW ran 26-171 TFLOPS and power-of-two widths channels-last 16-525 (found after blind round 26:
    # RegNetY-3.2GF's 24-wide groups took 12.2 ms channels-last at batch 128, predicted 2.6).
    grouped_generic_element_s: Default[float] = Default(
        26.2e-12, "H200 sweep, cuDNN 9.19: channels-last grouped 3x3 convolutions at 24, 48, 96 channels per "
        "group, 18 cases, median time per output element (benchmarks/studies/grouped-nhwc)")
    grouped_generic_architectures: Default[tuple[str, ...]] = Default(
        ("Hopper",), "where the generic path was measured (H200); other architectures unmeasured")
    # An NCHW grouped convolution (eager PyTorch, cuDNN) computes each group in an NHWC tile at least 64
    # channels wide: cuDNN's kernels for 4-32 channels per group are 64x64 implicit-GEMM tiles (sm80/sm90
    # xmma "tilesize64x64x64"), and the time of one shape is nearly the same at 4, 8, 16, 32 and 64 channels
    # per group (H200 sweep, studies/grouped-conv/h200_grouped_conv_groups.json, fp16 batch 64 at 56x56: 183-202 TFLOPS at
    # 64 per group, 10-11 at 4, 44-51 at 16). ``rates.grouped_nchw_rate``.
    grouped_nchw_tile_channels: Default[int] = Default(
        64, "H200 sweep, studies/grouped-conv/h200_grouped_conv_groups.json: sm80/sm90 xmma tilesize64x64x64 kernels, time "
            "nearly constant at 4-64 channels per group")

    # --- memory-bound operators ---------------------------------------------------------------------------
    # Bandwidth efficiency relative to the attainable copy bandwidth: summed bytes over summed time of every
    # operator of that kind moving > 8 MB in the H200 profiles (fp16/fp32): elementwise 0.73/0.91, copies
    # 0.57/0.69, norms 0.53/0.34, softmax 0.56, reductions 0.39/0.52, pooling 0.18/0.36. Embedding: too few
    # large gathers measured (assumed 0.6). "other": assumed 0.8 (operators without a formula).
    kind_bandwidth_factor: Default[dict[str, float]] = table(
        "H200 profiles, operators moving > 8 MB, summed bytes over summed time per kind (embedding 0.6 and "
        "other 0.8 assumed)", dict(
            elementwise=0.85, norm=0.45, softmax=0.55, reduction=0.45, pool=0.25, embedding=0.6, copy=0.63,
            other=0.8, matmul=1.0, conv=0.9, attention=1.0))
    # (16-bit, 32-bit) where they differ clearly: PyTorch's half-precision kernels move fewer bytes per thread.
    kind_bandwidth_factor_by_width: Default[dict[str, dict[str, float]]] = table(
        "H200 profiles, operators moving > 8 MB, per kind and width", dict(
            elementwise=by_width(0.73, 0.91), copy=by_width(0.57, 0.69), pool=by_width(0.18, 0.36),
            reduction=by_width(0.39, 0.52)))
    # Bytes in flight (roofline/inflight.py): the DRAM latency a dependent load sees, by (architecture, memory
    # type prefix), from one pointer-chasing microbenchmark (te42kyfo/gpu-benches, gpu-latency / cuda-latency:
    # one warp walks a buffer far larger than the L2): H100 PCIe (HBM2e) 658 cycles at 1755 MHz = 375 ns
    # (gpu-latency/h100_pcie.txt at a7dc559), L40 (AD102, GDDR6) 632 cycles at 2490 MHz = 254 ns
    # (gpu-latency/l40.txt at 5ff059f), A100 80GB (HBM2e) 571 cycles at 1410 MHz = 405 ns (cuda-latency/
    # a100_80.txt at 2f91588), V100 PCIe (HBM2) 436 cycles at 1380 MHz = 316 ns (the repository's README).
    # Hopper HBM is the H100's for every Hopper card (the H200 shares its GH100 die and memory controller
    # family). Assumed, not measured: Blackwell GDDR7 (GB202) at Ada's GDDR figure; Ampere GDDR6X (GA102) and
    # LPDDR5 (Orin) at GA100's. Where a card needs a quarter or less of the H200's bytes in flight (every
    # GeForce card here) the result does not depend on the latency within 2x. Other cards (B200, Turing,
    # AMD): no latency, the H200's shares unchanged.
    dram_latency_s: Default[tuple[tuple[str, str, float], ...]] = Default((
        ("Hopper", "HBM", 375e-9), ("Ada Lovelace", "GDDR", 254e-9), ("Blackwell", "GDDR", 254e-9),
        ("Ampere", "HBM", 405e-9), ("Ampere", "GDDR", 405e-9), ("Ampere", "LPDDR", 405e-9),
        ("Volta", "HBM", 316e-9), ("Turing", "GDDR", 254e-9)),
        "te42kyfo/gpu-benches pointer chase: H100 PCIe 375 ns, L40 254 ns, A100 80GB 405 ns, V100 316 ns; "
        "Blackwell GDDR7 and Turing GDDR6 assumed as Ada's GDDR6, GA102 GDDR6X and Orin LPDDR5 as GA100's HBM2e "
        "(a T4 or TITAN RTX needs a fifth of the H200's bytes in flight per SM or less: twice the latency "
        "changes no capped share)")
    # What each SM of the reference card (the H200, where the shares above were measured) needs in flight to
    # reach its bandwidth: 4.8 TB/s / 132 SMs x 375 ns.
    inflight_reference_bytes: Default[float] = Default(
        4.8e12 / 132 * 375e-9, "H200 SXM datasheet 4.8 TB/s over 132 SMs (hardware_db/h200-sxm.toml) x the "
        "Hopper DRAM latency 375 ns (dram_latency_s)")
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
    norm_bandwidth_factor: Default[dict[str, dict[str, float]]] = table(
        "H200 profiles: batch norm over eight profiled sets, layer norm's row fit, group norm's apply pass at "
        "the elementwise share", dict(
            batch_norm=by_width(0.73, 0.65), layer_norm=by_width(0.73, 1.0), group_norm=by_width(0.73, 0.91)))
    # Inference batch norm in one kernel is cuDNN's (bn_fw_inf_1C11_kernel_NCHW / _NHWC; PyTorch's
    # _batch_norm_impl_index takes cuDNN for fp32 input, and for half input with fp32 weights: autocast), not the
    # native fp16 kernel the 16-bit batch_norm share above was measured on (``model.half()``: two kernels). Both
    # widths run at one element rate: H200 profiles after blind round 26 (timm regnety_032, cs3darknet_focus_m,
    # resnet33ts, tf_efficientnetv2_b1 at batch 128 under autocast, channels-last and NCHW;
    # benchmarks/rounds/round-26/measured/post/*.json.gz): 354 half-input batch norms moving > 8 MB, summed
    # bytes over summed time 0.339 of the copy bandwidth (median 0.350, 10-90% 0.285-0.377): 364 G elements/s
    # at 4 bytes each, where fp32's 0.65 (8 bytes) is 349 G elements/s. Each thread handles a fixed number of
    # elements, so the kernel is held by its bytes in flight at both widths: on a card that needs fewer per SM
    # both shares rise, up to an elementwise kernel's ceiling (roofline/inflight.py, ``limited_shares``).
    cudnn_batch_norm_bandwidth_factor: Default[dict[str, float]] = per_width(
        0.339, 0.65, "H200 profiles after round 26: autocast batch norms (cuDNN bn_fw_inf_1C11, half input, fp32 "
        "weights), 354 over 8 MB, summed bytes / summed time 0.339 of the copy bandwidth; fp32: batch_norm's 0.65")
    group_norm_element_s: Default[dict[str, float]] = per_width(
        0.50e-9, 0.46e-9, "H200 profiles (SD-UNet, ViT-L/R50 hybrid, SHViT, wav2vec 2.0): median per element "
        "of a row per row wave, at the H200's clock")
    # Training batch norm in NCHW (statistics over N x H x W per channel): PyTorch's native kernels
    # (batch_norm_collect_statistics_kernel, batch_norm_backward_kernel: aten/src/ATen/native/cuda/
    # Normalization.cuh launches ``dim3 blocks(input.size(1))``, 512 threads) and cuDNN's (bn_fw_tr_1C11_kernel_NCHW,
    # bn_bw_1C11_kernel_new, "1C11": a block per channel) reduce each channel in one thread block, which streams
    # about one element per clock, as group norm's rows do: a layer of C channels of n = N x H x W elements costs
    # max(C / SMs, 1) x n x batch_norm_element_s. Bytes alone priced dla34's 37 training batch norms at 1.3 ms
    # where they took 16.6 (forward) and 32.4 ms (backward, two passes: the sums of dy and dy x x-hat, then dx).
    # H200 profiles (benchmarks/studies/training-kernels: 14 CNN training steps, channels 16-2048, n 6K-6.4M,
    # 2026-12-02), the median per point of measured / (waves x n), spread 1.1-1.3x: cuDNN's (fp16 under autocast,
    # fp32) forward 0.63 ns, backward 1.26 ns; PyTorch's native kernels (bf16: _batch_norm_impl_index takes
    # cuDNN for no bfloat16 input) forward 0.92 ns (statistics, then a parallel transform), backward 1.66 ns.
    # At the H200's clock; other cards scale by clock (the loop is the same code).
    batch_norm_element_s: Default[dict[str, dict[str, float]]] = table(
        "H200 profiles of 14 CNN training steps (benchmarks/studies/training-kernels), median per point: "
        "per element of a channel per wave of one channel per SM", dict(
            forward=dict(cudnn=0.63e-9, native=0.92e-9), backward=dict(cudnn=1.26e-9, native=1.66e-9)))
    layer_norm_row_s: Default[dict[str, float]] = per_width(
        0.135e-6, 0.184e-6, "H200 profiles, least squares over one-kernel layer norms above 8 us: per row "
        "per SM at the H200's clock (n=905 fp16, 668 fp32)")
    layer_norm_reference_clock_mhz: Default[float] = Default(1980.0, "H200 SXM boost clock "
                                                                     "(hardware_db/h200-sxm.toml)")
    # Memory-bound kernels reading an activation through a permuted/transposed view (``strided``) move their
    # bytes uncoalesced (operators moving > 8 MB, fp16/fp32): elementwise 0.34/0.46, copies 0.36/0.44, norms
    # 0.10/0.16 (LayerNorm over a permuted view: PyTorch copies it contiguous first). Other kinds: their
    # contiguous factor x strided_bandwidth_factor (assumed).
    strided_kind_bandwidth_factor: Default[dict[str, float]] = table(
        "H200 profiles, permuted-view operators moving > 8 MB: elementwise 0.34/0.46, copies 0.36/0.44, norms "
        "0.10/0.16", dict(elementwise=0.4, copy=0.4, norm=0.13))
    strided_bandwidth_factor: Default[float] = Default(0.3, "assumed: other kinds' strided share of their "
                                                            "contiguous factor")
