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
  that reads them (None: quantized kernels throughout).

Nothing here is fitted to measurements: docs/published.md scores the profiles against published runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import InputError
from .precision import Precision


@dataclass(frozen=True)
class EngineProfile:
    name: str
    assumes: str
    weight_bits: dict[str, float] = field(default_factory=dict)   # format -> bits per weight, scales included
    fp16_accumulate: bool = False
    decode_attention_rows: float | None = None
    dequantize_above_rows: int | None = None
    sources: tuple[str, ...] = ()


ENGINES: dict[str, EngineProfile] = {
    "pytorch": EngineProfile(
        name="pytorch", assumes="eager or CUDA-graph PyTorch: the roofline's own defaults"),
    "llama.cpp": EngineProfile(
        name="llama.cpp",
        assumes="llama.cpp CUDA builds before 2024-06-24 (LLAMA_CUBLAS; PR #8075 then made MMQ the default): "
                "GGUF block formats; F16 GEMMs with FP16 accumulation; quantized products over more than 32 rows "
                "dequantize to F16 for cuBLAS; decode attention as matrix-vector products over the KV cache "
                "(no query-row padding); no CUDA graphs (launch cost not modelled)",
        weight_bits={"Q4_0": 4.5, "Q4_K_M": 4.9, "Q8_0": 8.5, "F16": 16.0},
        fp16_accumulate=True, decode_attention_rows=1.0, dequantize_above_rows=32,
        sources=("ggml/src/ggml-common.h: block_q4_0 = one fp16 scale + 16 bytes of nibbles per 32 weights "
                 "(18 B / 32 = 4.5 bits); block_q8_0 = fp16 scale + 32 int8 (34 B / 32 = 8.5 bits)",
                 "tools/quantize/quantize.cpp QUANT_OPTIONS: 'Q4_K_M 4.58G @ Llama-3-8B' (4.58 GiB x 8 / "
                 "8.03e9 weights = 4.9 bits; Q4_K_M mixes Q4_K 4.5-bit and Q6_K 6.56-bit blocks)",
                 "ggml/src/ggml-cuda/ggml-cuda.cu: F16 matrix products call cublasGemmEx / "
                 "cublasGemmBatchedEx with CUBLAS_COMPUTE_16F (batched_mul_mat_traits<GGML_TYPE_F16>)",
                 "ggml-cuda.cu of the LLAMA_CUBLAS builds ('CUDA_USE_TENSOR_CORES: yes'): '#define "
                 "MMQ_MAX_BATCH_SIZE 32 // max batch size to use MMQ kernels when tensor cores are available'; "
                 "larger quantized products convert the weights to F16 (to_fp16_cuda) and call cuBLAS, until "
                 "commit a818f3028 (PR #8075, 2024-06-24) made MMQ the default")),
    "gpt-fast": EngineProfile(
        name="gpt-fast",
        assumes="pytorch-labs/gpt-fast: torch.compile with CUDA graphs; int8 weight-only per-channel; int4 "
                "weight-only with a bf16 scale and a bf16 zero point per group of 32 weights",
        weight_bits={"int8": 8.0, "int4": 4.0 + 32.0 / 32.0, "bf16": 16.0},
        sources=("gpt-fast quantize.py: WeightOnlyInt4QuantHandler keeps scales_and_zeros (2 x bf16) per group; "
                 "the README's int4 numbers use --groupsize 32: 4 + 2 x 16 / 32 = 5.0 bits",)),
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


def engine_precision(profile: EngineProfile, base: Precision, weight_format: str | None = None) -> Precision:
    """``base`` with the engine's bits per weight for ``weight_format`` (a GGUF name, or the weight dtype) and
    FP16 activations where the engine computes half GEMMs in FP16."""
    fmt = weight_format or base.weight
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
    matrix = dict(perf.matrix_ops_per_s)
    if profile.fp16_accumulate and "fp16_fp16acc" in matrix:
        matrix["fp16"] = matrix["fp16_fp16acc"]
    defaults = perf.defaults
    if profile.decode_attention_rows is not None:
        defaults = replace(defaults, attention_block_rows=profile.decode_attention_rows)
    return replace(perf, matrix_ops_per_s=matrix, defaults=defaults)


def engine_workload(profile: EngineProfile, workload):
    """``workload`` as the engine runs it: quantized matrix products over more than ``dequantize_above_rows``
    rows get a dequantize kernel before them (reads the packed weights, writes FP16) and read FP16 weights."""
    limit = profile.dequantize_above_rows
    if limit is None:
        return workload
    ops = []
    for op in workload.ops:
        g = op.gemm
        weights = float(g.k * g.n * g.batch) if g is not None and op.kind == "matmul" else 0.0
        if weights and g.m > limit and 0 < op.param_bytes < 2.0 * weights * 0.995:
            ops.append(replace(op, name="engine.dequantize_fp16", kind="elementwise", flops=0.0,
                               bytes_read=op.param_bytes, bytes_written=2.0 * weights, param_bytes=0.0,
                               dtype="fp16", kernels=1, gemm=None, internal=False, family=""))
            op = replace(op, bytes_read=op.bytes_read - op.param_bytes + 2.0 * weights, param_bytes=2.0 * weights)
        ops.append(op)
    return replace(workload, ops=tuple(ops))


def engine_predictor(profile: EngineProfile, hardware, calibration=None, calibration_source: str = ""):
    """The roofline predictor (as ``analysis.roofline_predictor``) with the engine's device view and kernels."""
    from ..roofline import device_perf, predict

    perf = engine_perf(profile, device_perf(hardware, calibration, calibration_source))

    def _predict(workload, hw, cal, mode):
        return predict(engine_workload(profile, workload), hw, cal, mode,
                       perf=perf if hw is hardware else engine_perf(profile, device_perf(hw, cal)))

    return _predict
