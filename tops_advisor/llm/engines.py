"""Named LLM engine profiles: what a serving engine does differently from the PyTorch run the roofline models.

The default predictions model a PyTorch decoder (cuBLAS GEMMs with FP32 accumulation, scaled-dot-product
attention that pads the queries of each head to a 128-row block, int4 with one fp16 scale per 128 weights).
An engine profile changes only what its source code or documentation defines, and says so:

- ``weight_bits``: bits per weight of the transformer blocks' linear layers in each of the engine's formats,
  scales included (the embeddings and the output head stay at the activation precision, as everywhere);
- ``fp16_accumulate``: half-precision GEMMs accumulate in FP16 (cuBLAS ``CUBLAS_COMPUTE_16F``), so on cards
  that have a faster FP16-accumulate rate (GeForce: ``fp16_fp16acc``) that rate applies;
- ``decode_attention_rows``: query rows a fused attention block pads to (None: the roofline's default). An
  engine that multiplies a single query row against the KV cache as a matrix-vector product pads nothing;
- ``dequantize_above_rows``: above this many rows (tokens) a quantized matrix product first dequantizes its
  weights to FP16 in a kernel of its own (read the format's bytes, write 2 per weight), then runs an FP16 GEMM
  that reads them (None: quantized kernels throughout);
- ``quantized_bandwidth``: per weight dtype, the share of the 16-bit weight-streaming rate that the engine's
  weight-only quantized kernels reach (their packed weights take 1 / share as long to stream);
- ``matvec_bandwidth``: per memory family ('HBM', 'GDDR', 'LPDDR'), the share of the card's large-copy
  bandwidth that the engine's one-row matrix-vector kernels (decode at batch 1) stream their weights at (their
  weights take 1 / share as long; absent: the copy rate);
- ``layout``: the LLM builder's kernel layout the engine runs (``torch`` unfused, ``fused``).

Nothing here is fitted to measurements: docs/published.md scores the profiles against published runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..roofline.device import fp16_accumulate
from .analysis import roofline_predictor
from .precision import Precision


@dataclass(frozen=True)
class EngineProfile:
    name: str
    assumes: str
    weight_bits: dict[str, float] = field(default_factory=dict)   # format -> bits per weight, scales included
    fp16_accumulate: bool = False
    decode_attention_rows: float | None = None
    dequantize_above_rows: int | None = None
    quantized_bandwidth: dict[str, float] = field(default_factory=dict)
    matvec_bandwidth: dict[str, float] = field(default_factory=dict)   # memory family -> share of the copy rate
    layout: str = "torch"
    default_format: dict[str, str] = field(default_factory=dict)  # weight dtype -> format when none is named
    sources: tuple[str, ...] = ()


ENGINES: dict[str, EngineProfile] = {
    "pytorch": EngineProfile(
        name="pytorch", assumes="eager or CUDA-graph PyTorch: the roofline's own defaults"),
    "llama.cpp": EngineProfile(
        name="llama.cpp",
        assumes="llama.cpp CUDA builds before 2024-06-24 (LLAMA_CUBLAS; PR #8075 then made MMQ the default): "
                "GGUF block formats; F16 GEMMs with FP16 accumulation; quantized products over more than 32 rows "
                "dequantize to F16 for cuBLAS; decode attention as matrix-vector products over the KV cache "
                "(no query-row padding); one-row (decode) products in one-warp-per-row mat-vec kernels that stream "
                "HBM at 1 / 1.33 of the copy rate (GDDR: the copy rate); no CUDA graphs (launch cost not modelled)",
        weight_bits={"Q4_0": 4.5, "Q4_K_M": 4.9, "Q8_0": 8.5, "F16": 16.0},
        fp16_accumulate=True, decode_attention_rows=1.0, dequantize_above_rows=32,
        matvec_bandwidth={"HBM": 1.0 / 1.33},
        default_format={"int4": "Q4_0", "int8": "Q8_0", "fp16": "F16", "bf16": "F16"},
        sources=("ggml/src/ggml-common.h: block_q4_0 = one fp16 scale + 16 bytes of nibbles per 32 weights "
                 "(18 B / 32 = 4.5 bits); block_q8_0 = fp16 scale + 32 int8 (34 B / 32 = 8.5 bits)",
                 "tools/quantize/quantize.cpp QUANT_OPTIONS: 'Q4_K_M 4.58G @ Llama-3-8B' (4.58 GiB x 8 / "
                 "8.03e9 weights = 4.9 bits; Q4_K_M mixes Q4_K 4.5-bit and Q6_K 6.56-bit blocks)",
                 "ggml/src/ggml-cuda/ggml-cuda.cu: F16 matrix products call cublasGemmEx / "
                 "cublasGemmBatchedEx with CUBLAS_COMPUTE_16F (batched_mul_mat_traits<GGML_TYPE_F16>)",
                 "ggml-cuda.cu of the LLAMA_CUBLAS builds ('CUDA_USE_TENSOR_CORES: yes'): '#define "
                 "MMQ_MAX_BATCH_SIZE 32 // max batch size to use MMQ kernels when tensor cores are available'; "
                 "larger quantized products convert the weights to F16 (to_fp16_cuda) and call cuBLAS, until "
                 "commit a818f3028 (PR #8075, 2024-06-24) made MMQ the default",
                 "ggml-cuda.cu at a7aee47b9 (2023-12-18) and 44ca159fa (2024-03): a one-row F16 product "
                 "(src1->ne[1] == 1) runs dequantize_mul_mat_vec<1, 1, convert_f16> (dmmv), one 32-thread block "
                 "(one warp) per weight row, each thread loading its two halves with two 2-byte loads and "
                 "multiplying FP32 activations (GGML_CUDA_F16 off by default); quantized one-row products run "
                 "mul_mat_vec_q, also one warp per row. matvec_bandwidth['HBM'] = 1 / 1.33: PR #9816 "
                 "(commit 13dca2a54, 2024-10-14) replaced those loads with one 4-byte half2 load, 'a 1.33X' "
                 "MMV kernel speedup on an H100 SXM 80GB HBM3 and 'slight (1.01X)' on GDDR GPUs (issue #9817: "
                 "the mat-vec kernels' memory throughput 'is already a high percentage of peak on GDDR GPUs', "
                 "with 'large room for improvement on HBM GPUs'); the vectorised kernel is taken to reach the "
                 "copy rate, so the older kernels reach 1 / 1.33 of it on HBM and the copy rate on GDDR")),
    "gpt-fast": EngineProfile(
        name="gpt-fast",
        assumes="pytorch-labs/gpt-fast: torch.compile with CUDA graphs, so fused elementwise kernels around a "
                "fused wqkv projection (the builder's 'fused' layout); int8 weight-only per-channel (inductor's "
                "mixed mm) at 0.80 of the bf16 weight-streaming rate; int4 weight-only (tinygemm "
                "_weight_int4pack_mm) with a bf16 scale and zero per 32 weights, at 0.53 of it",
        weight_bits={"int8": 8.0, "int4": 4.0 + 32.0 / 32.0, "bf16": 16.0},
        quantized_bandwidth={"int8": 0.80, "int4": 0.53}, layout="fused",
        sources=("gpt-fast quantize.py: WeightOnlyInt4QuantHandler keeps scales_and_zeros (2 x bf16) per group; "
                 "the README's int4 numbers use --groupsize 32: 4 + 2 x 16 / 32 = 5.0 bits",
                 "gpt-fast model.py: Attention.wqkv, one linear for q, k and v",
                 "pytorch/ao torchao/quantization/README.md (commit 03d01ad), A100, batch 1, 'Memory Bandwidth "
                 "(GB/s)': Llama-2-7B base 1418.93, int8wo 1131.18 (0.797), int4wo-64 751.42 (0.530); "
                 "Llama-3-8B 1435.54, 1150.80 (0.802), 763.33 (0.532). Fitted here (the same kernels as "
                 "gpt-fast's), checked on gpt-fast's own README (docs/published.md)")),
}


@dataclass(frozen=True)
class EnginePrecision(Precision):
    """A Precision whose block weights take the engine format's bits per weight."""

    weight_bits: float | None = None

    @property
    def weight_bytes_per_param(self) -> float:
        return super().weight_bytes_per_param if self.weight_bits is None else self.weight_bits / 8.0


def get_engine(name: str) -> EngineProfile:
    key = name.strip().lower()
    for profile in ENGINES.values():
        if profile.name.lower() == key:
            return profile
    raise InputError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}",
                     hint="--kernels pytorch, llama.cpp or gpt-fast")


KERNEL_LAYOUTS = ("torch", "fused")


def parse_kernels(text: str) -> tuple[str, EngineProfile | None, str | None]:
    """``--kernels``: a builder layout ('torch', 'fused') or an engine profile with an optional weight format
    ('llama.cpp', 'llama.cpp:Q4_K_M', 'gpt-fast') -> (layout, profile or None, format or None)."""
    name, _, fmt = text.strip().partition(":")
    if name.lower() in KERNEL_LAYOUTS and not fmt:
        return name.lower(), None, None
    if name.lower() not in ENGINES or name.lower() == "pytorch":
        raise InputError(f"unknown --kernels {text!r}; expected torch, fused, llama.cpp[:FORMAT] or gpt-fast",
                         hint="llama.cpp formats: " + ", ".join(ENGINES["llama.cpp"].weight_bits))
    profile = get_engine(name)
    if fmt and fmt not in profile.weight_bits:
        raise InputError(f"{profile.name} has no weight format {fmt!r}; known: {', '.join(profile.weight_bits)}")
    return profile.layout, profile, fmt or None


def engine_precision(profile: EngineProfile, base: Precision, weight_format: str | None = None) -> Precision:
    """``base`` with the engine's bits per weight for ``weight_format`` (a GGUF name, or the weight dtype) and
    FP16 activations where the engine computes half GEMMs in FP16."""
    fmt = weight_format or profile.default_format.get(base.weight, base.weight)
    bits = profile.weight_bits.get(fmt)
    if weight_format and bits is None:
        raise InputError(f"{profile.name} has no weight format {weight_format!r}; "
                         f"known: {', '.join(profile.weight_bits) or 'none'}")
    act = "fp16" if profile.fp16_accumulate and base.act == "bf16" else base.act
    kv = "fp16" if profile.fp16_accumulate and base.kv == "bf16" else base.kv
    return EnginePrecision(weight=base.weight, act=act, kv=kv, weight_bits=bits)


def engine_perf(profile: EngineProfile, perf):
    """A roofline DevicePerf as the engine's kernels see it: FP16-accumulate GEMM rates where the card has them,
    the engine's decode attention blocking."""
    if profile.fp16_accumulate:
        perf = fp16_accumulate(perf)
    defaults = perf.defaults
    if profile.decode_attention_rows is not None:
        rows = replace(defaults.attention_block_rows, value=profile.decode_attention_rows)
        defaults = replace(defaults, attention_block_rows=rows)
    return replace(perf, defaults=defaults)


def _quantized_weights(op) -> float:
    """Weights of a matrix product whose parameters are packed below 2 bytes each (0 for any other op)."""
    g = op.gemm
    weights = float(g.k * g.n * g.batch) if g is not None and op.kind == "matmul" else 0.0
    return weights if weights and 0 < op.param_bytes < 2.0 * weights * 0.995 else 0.0


def _one_row_weights(op) -> bool:
    """A matrix product of one activation row with parameters: what an engine's mat-vec kernel runs."""
    return op.kind == "matmul" and op.gemm is not None and op.gemm.m == 1 and op.param_bytes > 0


def engine_workload(profile: EngineProfile, workload, weight_dtype: str = "", memory: str = ""):
    """``workload`` as the engine runs it: quantized matrix products over more than ``dequantize_above_rows``
    rows get a dequantize kernel before them (reads the packed weights, writes FP16) and read FP16 weights;
    the others stream their packed weights at ``quantized_bandwidth[weight_dtype]`` of the 16-bit rate
    (counted as 1 / share as many bytes). One-row products on a card of memory family ``memory`` stream their
    weights at ``matvec_bandwidth[memory]`` of the copy rate (1 / share as many weight bytes)."""
    limit, share = profile.dequantize_above_rows, profile.quantized_bandwidth.get(weight_dtype)
    matvec = profile.matvec_bandwidth.get(memory)
    ops = []
    for op in workload.ops:
        weights = _quantized_weights(op)
        if weights and limit is not None and op.gemm.m > limit:
            ops.append(replace(op, name="engine.dequantize_fp16", kind="elementwise", flops=0.0,
                               bytes_read=op.param_bytes, bytes_written=2.0 * weights, param_bytes=0.0,
                               dtype="fp16", kernels=1, gemm=None, internal=False, family=""))
            op = replace(op, bytes_read=op.bytes_read - op.param_bytes + 2.0 * weights, param_bytes=2.0 * weights)
        elif weights and share:
            op = replace(op, bytes_read=op.bytes_read + op.param_bytes * (1.0 / share - 1.0))
        if matvec and _one_row_weights(op):
            op = replace(op, bytes_read=op.bytes_read + op.param_bytes * (1.0 / matvec - 1.0))
        ops.append(op)
    return replace(workload, ops=tuple(ops))


def engine_predictor(profile: EngineProfile, hardware, calibration=None, calibration_source: str = "",
                     weight_dtype: str = ""):
    """The roofline predictor (as ``analysis.roofline_predictor``) with the engine's device view and kernels;
    ``weight_dtype`` picks the quantized kernels' bandwidth share. Pass ``layout=profile.layout`` to
    ``analyze_llm`` as well."""
    from ..roofline import device_perf, predict
    from ..roofline.device import memory_family

    perf = engine_perf(profile, device_perf(hardware, calibration, calibration_source))

    def _predict(workload, hw, cal, mode):
        w = engine_workload(profile, workload, weight_dtype, memory_family(hw.memory_type))
        return predict(w, hw, cal, mode,
                       perf=perf if hw is hardware else engine_perf(profile, device_perf(hw, cal)))

    return _predict


@dataclass(frozen=True)
class KernelSetup:
    """What ``--kernels`` means on one device at one precision: the builder's layout, the precision as the
    kernels store it (an engine's block format), the predictor (the engine's device view and kernels, or the
    roofline's own) and a label for output ('torch', 'fused', 'llama.cpp:Q4_0', 'gpt-fast')."""

    layout: str
    precision: Precision
    predictor: object
    label: str


def kernel_setup(kernels: str, hardware, precision: Precision, calibration=None,
                 calibration_source: str = "") -> KernelSetup:
    """``--kernels`` (``parse_kernels``) applied to ``precision`` on ``hardware``, as ``tops-advisor llm`` and
    ``recommend --llm`` both use it."""
    layout, engine, weight_format = parse_kernels(kernels)
    if engine is None:
        return KernelSetup(layout, precision, roofline_predictor(hardware, calibration, calibration_source), layout)
    p = engine_precision(engine, precision, weight_format)
    fmt = weight_format or engine.default_format.get(precision.weight)
    return KernelSetup(layout, p, engine_predictor(engine, hardware, calibration, calibration_source,
                                                   weight_dtype=p.weight),
                       engine.name + (f":{fmt}" if fmt else ""))
