"""The TensorRT engine profile: what an engine TensorRT builds from a model does differently from PyTorch, rule
by rule, each with its source. Pure data, no torch.

Who reads what:

- the TensorRT lowering (``counting/lowering/tensorrt.py``) applies ``rules`` in their order (each
  :class:`TrtRule` names one rewrite of the counted operators) with the pointwise operators a convolution's or
  a GEMM's epilogue takes (``conv_epilogue``, ``gemm_epilogue``);
- the roofline (``roofline/predict.py``, mode ``tensorrt``) prices the engine's enqueue (``enqueue``: like a
  CUDA graph, no launch cost per operator), runs fp32 layers in TF32 where the card has it (``tf32``), fp16
  layers at the FP16-accumulate rate where the card has a faster one (``fp16_accumulate``) and each GEMM and
  convolution at the better orientation of each tile (``tactics``);
- the recommender lets ``--dtype auto`` try ``auto_dtypes`` (int8 included, where the card has an int8 peak),
  and every int8 prediction carries ``int8.does`` as its caveat.

Not modelled (``not_modelled``, said in docs/tensorrt.md): the builder's tactic selection beyond the tile's
orientation (TensorRT times several kernels per layer and keeps the fastest), int8 calibration and the accuracy it
keeps, dynamic shapes beyond the tile chosen at the ``opt`` shape, plugins a user adds, DLA cores. Precisions:
``no_engine_dtypes`` are refused (no engine runs a whole model in them), ``unscored_dtypes`` are priced by the
same rules with an assumption line saying no such engine was scored.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kinds import StrEnum


class TrtRule(StrEnum):
    """The rewrites the TensorRT lowering knows, by name (a profile lists the ones it applies, in order)."""

    FOLD_BATCH_NORM = "fold-batch-norm"      # eval batch norm folded into the convolution before it
    EPILOGUE = "epilogue"                    # bias, activation, residual sum run in the conv/GEMM kernel
    CHANNELS_LAST = "channels-last"          # NHWC convolutions, implicit GEMMs, no layout copies
    FUSED_ATTENTION = "fused-attention"      # attention one fused kernel, its output transpose a view
    POINTWISE_FUSION = "pointwise-fusion"    # remaining pointwise/norm/reduction chains fused (Myelin)


@dataclass(frozen=True)
class EngineRule:
    """One thing the engine does, and where that is documented."""

    rule: str
    does: str
    source: str


@dataclass(frozen=True)
class TensorRTProfile:
    """A TensorRT engine as the lowering and the roofline model it."""

    name: str
    rules: tuple[EngineRule, ...]             # applied by the lowering in this order
    conv_epilogue: frozenset[str]             # ATen pointwise ops a convolution's kernel takes after it
    gemm_epilogue: frozenset[str]             # ATen pointwise ops a GEMM's kernel takes after it
    enqueue: EngineRule
    tf32: EngineRule
    fp16_accumulate: EngineRule
    tactics: EngineRule
    int8: EngineRule
    auto_dtypes: tuple[str, ...]              # what --dtype auto tries (each where the card has its peak)
    not_modelled: tuple[str, ...]
    no_engine_dtypes: tuple[str, ...]         # precisions an engine cannot run a whole model in (refused) ...
    no_engine: EngineRule                     # ... and why
    unscored_dtypes: tuple[str, ...]          # precisions priced by the same rules but never scored ...
    unscored: EngineRule                      # ... and what that means

    def applies(self, rule: TrtRule) -> bool:
        return any(r.rule == rule for r in self.rules)

    def rule(self, rule: TrtRule) -> EngineRule:
        return next(r for r in self.rules if r.rule == rule)


_FUSION_CATALOG = ("TensorRT documentation, 'Layer Fusion Catalog' "
                   "(https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/fusion-catalog.html, read "
                   "2026-12-02)")
_BEST_PRACTICES = ("TensorRT documentation, 'Best Practices: Performance' "
                   "(https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html, read "
                   "2026-12-02)")

TENSORRT = TensorRTProfile(
    name="tensorrt",
    rules=(
        EngineRule(TrtRule.FOLD_BATCH_NORM,
                   "an inference batch norm after a convolution is folded into the convolution's weights and bias "
                   "at build time: no kernel, no pass over the activation",
                   _FUSION_CATALOG + ": the ONNX parser imports BatchNormalization as a Scale layer, which the "
                   "builder folds into the convolution before it; the forum layer dump below shows batch norm "
                   "as a layer of its own only where no convolution precedes it ('Layer(Scale): data_bn + "
                   "data_scale' on the input, 'layer_128_1_bn1_h + ... + relu1' after a sum)"),
        EngineRule(TrtRule.EPILOGUE,
                   "a convolution's bias, its activation (ReLU, ReLU6/clip, GELU, SiLU, sigmoid, tanh, leaky ReLU) "
                   "and a residual sum run in the convolution kernel's epilogue; a GEMM's bias and activation "
                   "(ReLU, GELU) in the GEMM's",
                   _FUSION_CATALOG + ": convolution + activation and convolution + element-wise sum fusions (its "
                   "worked example: a convolution and a ReLU become one layer 'conv + relu'); a trtexec layer "
                   "dump on NVIDIA's forum (forums.developer.nvidia.com/t/288714, 2024) lists 'CaskConvolution: "
                   "conv1_h + conv1_relu' and 'layer_64_1_conv2_h + layer_64_1_sum' (the residual sum in the "
                   "convolution); GEMM epilogues: cuBLASLt's CUBLASLT_EPILOGUE_RELU_BIAS / GELU_BIAS"),
        EngineRule(TrtRule.CHANNELS_LAST,
                   "convolutions run NHWC (or NC/32HW32 in int8) tensor-core kernels: ungrouped ones with input "
                   "channels a multiple of 8 as implicit GEMMs, the others as cuDNN-style NHWC convolutions "
                   "(the channels-last rates of compiled mode); no layout copy per layer",
                   _BEST_PRACTICES + ": tensor-core convolutions take channel counts padded to multiples of 8 "
                   "(fp16) / 32 (int8) and vectorized NHWC formats (kHWC8, kCHW32); the builder's reformat "
                   "layers appear only at the engine's inputs and outputs when the whole network runs one format"),
        EngineRule(TrtRule.FUSED_ATTENTION,
                   "attention runs as one fused kernel (fMHA); its (batch, seq, heads, dim) output feeds the "
                   "projection without a transpose copy",
                   "TensorRT documentation, 'Fused Attention' "
                   "(https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/"
                   "transformers-fused-attention.html): a MatMul-SoftMax-MatMul graph or an IAttention layer "
                   "becomes one fused kernel; NVIDIA's MLPerf BERT engines use the fused MHA plugin "
                   "(bertQKVToContextPlugin)"),
        EngineRule(TrtRule.POINTWISE_FUSION,
                   "the remaining pointwise, normalisation and reduction operators fuse with their pointwise "
                   "neighbours into generated kernels (a residual add with the layer norm after it; a GELU "
                   "with its neighbours), read once and written once",
                   _FUSION_CATALOG + ": 'PointWise Fusion' (adjacent pointwise layers become one), and the "
                   "Myelin backend's generated kernels for transformer blocks (skip-layernorm: residual add + "
                   "bias + layer norm in one kernel, NVIDIA's BERT plugins 'skipLayerNormPlugin')"),
    ),
    conv_epilogue=frozenset({"aten.relu", "aten.relu_", "aten.add", "aten.add_", "aten.hardtanh",
                             "aten.hardtanh_", "aten.clamp", "aten.clamp_", "aten.gelu", "aten.silu", "aten.silu_",
                             "aten.sigmoid", "aten.tanh", "aten.leaky_relu", "aten.leaky_relu_"}),
    gemm_epilogue=frozenset({"aten.relu", "aten.relu_", "aten.gelu"}),
    enqueue=EngineRule("enqueue",
                       "the engine is enqueued once per inference (enqueueV3, or a CUDA graph of it): no host "
                       "launch cost per layer, priced like CUDA-graph mode",
                       "TensorRT API, IExecutionContext::enqueueV3 (one asynchronous call runs the whole engine); "
                       + _BEST_PRACTICES + ", 'CUDA Graphs'; NVIDIA's MLPerf configs set use_graphs for "
                       "small-batch scenarios (inference_results_v3.0 closed/NVIDIA/configs/resnet50)"),
    tf32=EngineRule("tf32",
                    "an fp32 engine runs its convolutions and GEMMs in TF32 on cards that have it",
                    "TensorRT API, BuilderFlag::kTF32: 'enabled by default' (TensorRT 8.x-10.x developer guide, "
                    "'Reduced Precision')"),
    fp16_accumulate=EngineRule(
        "fp16-accumulate",
        "an fp16 engine's convolutions and GEMMs run at the FP16-accumulate rate on cards that run FP32 "
        "accumulation at half of it (GeForce: fp16_fp16acc in the catalog); elsewhere both rates are one",
        "TensorRT documentation, 'Precision Control' (10.16, read 2026-12-02): the builder times each "
        "implementation and keeps the fastest, and implementations 'can use different algorithms or even run at "
        "different precisions'; NVIDIA/TensorRT#1237 (NVIDIA, 2021): a kernel has its own input, accumulator "
        "and output precisions; NVIDIA/TensorRT#2942 (2023): TensorRT's fp16 convolution tactics accumulate in "
        "fp16 where PyTorch's cuDNN kernels accumulate in fp32; triton-lang/triton#319 (2021): TensorRT reached "
        "110 TFLOPS on an fp16 convolution on an RTX 3090, above the 71 its FP32-accumulate peak allows "
        "(GA102 whitepaper: 142 with FP16 accumulation)"),
    tactics=EngineRule(
        "tactics",
        "the builder keeps each layer's fastest tile in either orientation (128 x 64 or 64 x 128 output rows x "
        "columns): a convolution with few output channels runs a tile long in pixels and narrow in channels",
        "TensorRT documentation, 'Precision Control' and 'Builder' (the builder times each layer's candidate "
        "kernels, its tactics, and keeps the fastest); NVIDIA/cutlass python/cutlass_library/generator.py, "
        "GenerateSM80_TensorOp_16816 and GenerateSM80_TensorOp_16832_TN: one tile list for the GEMMs and the "
        "NHWC Conv2d fprop kernels, both orientations of each shape (256x128 and 128x256, 256x64 and 64x256, "
        "128x64 and 64x128)"),
    int8=EngineRule("int8",
                    "int8 engine: its accuracy depends on calibration (a calibrator over representative data) or "
                    "quantization-aware training (Q/DQ nodes); not predicted here",
                    "TensorRT documentation, 'Working with Quantized Types': post-training quantization needs a "
                    "calibrator, explicit quantization Q/DQ nodes; MLPerf's int8 ResNet-50 and BERT-99 meet 99% "
                    "of fp32 accuracy only with NVIDIA's calibration caches"),
    auto_dtypes=("fp32", "fp16", "int8"),
    no_engine_dtypes=("fp64", "int4", "fp4"),
    no_engine=EngineRule(
        "no-engine",
        "no TensorRT engine runs a model's convolutions and GEMMs in fp64, int4 or fp4: TensorRT has no 64-bit "
        "float type, its INT4 is weight-only quantization (activations and the arithmetic stay 16-bit) and its "
        "FP4 quantizes GEMMs only, on Blackwell",
        "TensorRT documentation, 'Working with Quantized Types' (read 2026-12-02): 'INT4 (signed 4-bit integer, "
        "weight-only quantization)'; TensorRT-RTX documentation, same page: 'FP4 is only supported for matrix "
        "multiplications on Blackwell or later'; TensorRT API, nvinfer1::DataType (kFLOAT, kHALF, kBF16, kINT8, "
        "kINT32, kINT64, kBOOL, kUINT8, kFP8, kINT4, kFP4: no double)"),
    unscored_dtypes=("bf16", "fp8"),
    unscored=EngineRule(
        "unscored",
        "engine priced at the card's peak of its precision with the fp16 engine's rules; no published engine of "
        "this precision is scored here (docs/tensorrt.md)",
        "TensorRT documentation, 'Working with Quantized Types' and 'Precision Control': BF16 and FP8 (E4M3, "
        "compute capability 8.9 and later) engines exist; the scored engines are fp32, fp16 and int8"),
    not_modelled=("the builder's tactic selection beyond the tile (it times several kernels per layer, "
                  "algorithms and layouts too, and keeps the fastest)",
                  "int8 calibration and the accuracy it keeps",
                  "dynamic shapes beyond the tile chosen at an optimisation profile's opt shape",
                  "an explicit matmul-softmax-matmul attention is counted as written, not re-fused",
                  "plugins a user adds, DLA cores, INT4 weight-only and FP4 GEMMs"),
)
