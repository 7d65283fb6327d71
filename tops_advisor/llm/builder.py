"""Build an LLM forward pass analytically as a ``Workload``: one ``OpRecord`` per kernel-level operator.

Phases: ``prefill`` runs ``batch`` prompts of ``context`` tokens (GEMM m = batch x context);
``decode`` runs one new token per sequence against ``context`` tokens already cached (m = batch).

Two kernel layouts:

* ``torch`` (default): what plain PyTorch runs, operator for operator as Hugging Face's LLaMA code
  (and ``benchmarks/harness/llm_measure.py``) does it. Separate q/k/v linears (GPT-2 style models: one fused qkv
  linear, as their ``c_attn``); RMSNorm as 8 kernels (cast to fp32, pow, mean, add eps, rsqrt, mul, cast
  back, weight mul) with their fp32 traffic; LayerNorm as one kernel (``F.layer_norm``); rotary embedding
  as 5 kernels per tensor (mul cos, neg, cat, mul sin, add) on q and k; two KV-cache copies; one fused
  attention kernel (``F.scaled_dot_product_attention``, flash); residual adds; gate, up, act, mul, down.
* ``fused``: what serving engines (vLLM, TensorRT-LLM) run: fused qkv, fused residual-add + RMSNorm,
  one rotary kernel, one cache write, fused gate_up and act-and-mul, one grouped MoE kernel per projection.

Attention is causal in prefill (FLOPs over the lower triangle only, which flash kernels skip to) and reads
the whole cache in decode; a sliding window caps both the span and the cache. The output head runs on the
last token of each sequence only (serving engines and ``generate`` keep only those logits). Sampling is
not counted. Bytes are each kernel's minimal traffic (inputs read once, outputs written once).

A mixture of experts runs the router, then each expert the batch touches: with T tokens each choosing
k of E experts uniformly, E (1 - (1 - k/E)^T) experts are touched on average, and their weights are what
is read; FLOPs are exactly T k per-expert MLPs.
"""

from __future__ import annotations

import math

from .. import opcosts as O
from ..errors import InputError, LLMConfigError
from ..kinds import OpKind
from ..workload import GemmShape, Note, NoteKind, OpRecord, Workload
from .config import LLMConfig, attended_tokens
from .memory import MLA_NOTE, activation_bytes, weight_bytes, window_caps
from .parallel import RankShape, rank_shape
from .precision import Precision, make_precision

PHASES = ("prefill", "decode")
KERNEL_LAYOUTS = ("torch", "fused")
TOKEN_ID_BYTES = 8  # int64 token ids
_KINDS = {k.value: k for k in OpKind}


def expected_experts_touched(cfg: LLMConfig, tokens: int) -> float:
    """Expected number of distinct experts hit when ``tokens`` tokens each pick k of E uniformly."""
    if not cfg.is_moe:
        return 1.0
    e, k = cfg.num_experts, cfg.experts_per_token
    return e * (1.0 - (1.0 - k / e) ** tokens)


def check_sizes(cfg: LLMConfig, phase: str, batch: int, context: int) -> None:
    if phase not in PHASES:
        raise InputError(f"unknown phase {phase!r}; expected prefill or decode")
    for what, v in (("batch", batch), ("context", context)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{what} must be a positive whole number, got {v!r}")
    needed = context + (1 if phase == "decode" else 0)
    limit = cfg.max_position_embeddings
    if limit and needed > limit:
        what = f"context {context} + 1 new token" if phase == "decode" else f"context {context}"
        raise LLMConfigError(f"{what} exceeds {cfg.name}'s maximum of {limit} positions "
                             f"(max_position_embeddings)",
                             hint=f"use --context {limit - (1 if phase == 'decode' else 0)} or less")


class _Builder:
    def __init__(self, cfg: LLMConfig, rs: RankShape, p: Precision, phase: str, batch: int, context: int,
                 layout: str):
        self.cfg, self.rs, self.p, self.layout = cfg, rs, p, layout
        self.batch = batch
        self.q_len = context if phase == "prefill" else 1
        self.t = batch * self.q_len                    # tokens in this forward pass
        self.phase, self.context = phase, context
        self.s = p.stream_bytes
        self.ops: list[OpRecord] = []

    # --- primitives -------------------------------------------------------------------------------------
    def add(self, **kw) -> None:
        kw.setdefault("dtype", self.p.stream)
        kw["kind"] = _KINDS.get(kw["kind"], kw["kind"])  # the enum itself: OpRecord need not look it up
        self.ops.append(OpRecord(**kw))

    def linear(self, name: str, module: str, m: int, n: int, k: int, bias: bool = False,
               weight_bytes: float | None = None, kernels: int = 1, gemm_batch: int = 1,
               weight_count: float | None = None, flops_m: float | None = None) -> None:
        """m x k activations @ k x n weights. ``weight_count`` = weight matrices read (MoE experts)."""
        wb = self.p.weight_bytes_per_param if weight_bytes is None else weight_bytes
        mats = gemm_batch if weight_count is None else weight_count
        rows = m * gemm_batch if flops_m is None else flops_m
        params = mats * (n * k * wb + (n * self.s if bias else 0))
        self.add(name=name, kind="matmul", module=module, flops=2.0 * rows * n * k + (rows * n * O.GEMM_BIAS if bias else 0),
                 bytes_read=rows * k * self.p.act_bytes + params, bytes_written=rows * n * self.s,
                 param_bytes=params, dtype=self.p.act, kernels=kernels, gemm=GemmShape(m, n, k, gemm_batch))

    def elementwise(self, name: str, module: str, elems: float, reads: float, writes: float, kernels: int,
                    flops_per_elem: float = 1.0, kind: str = "elementwise", param_bytes: float = 0.0) -> None:
        """``reads``/``writes``: tensor-sized passes at the stream dtype, summed over the kernels."""
        self.add(name=name, kind=kind, module=module, flops=flops_per_elem * elems,
                 bytes_read=reads * elems * self.s + param_bytes, bytes_written=writes * elems * self.s,
                 param_bytes=param_bytes, kernels=kernels)

    def norm(self, name: str, module: str, rows: float, width: int | None = None) -> None:
        """A norm over ``width`` elements (the hidden size unless given) of each of ``rows`` rows."""
        h, s = width or self.cfg.hidden_size, self.s
        e = rows * h
        if self.cfg.norm == "layernorm":
            self.add(name=f"{name}.layer_norm", kind="norm", module=module, flops=O.LAYER_NORM * e,
                     bytes_read=e * s + 2 * h * s, bytes_written=e * s, param_bytes=2 * h * s)
        elif self.layout == "fused":
            self.add(name=f"{name}.rms_norm", kind="norm", module=module, flops=O.RMS_NORM * e,
                     bytes_read=e * s + h * s, bytes_written=e * s, param_bytes=h * s)
        else:
            # HF LlamaRMSNorm, one kernel each: to(fp32), pow(2), mean(-1), + eps, rsqrt, x * rsqrt,
            # to(dtype), weight * x. Columns: flops, bytes read, bytes written (fp32 temporaries are 4 bytes).
            r = rows * 4.0
            steps = (("to_fp32", 0, e * s, 4 * e), ("pow", e, 4 * e, 4 * e), ("mean", e, 4 * e, r),
                     ("add_eps", rows, r, r), ("rsqrt", rows, r, r), ("mul_rsqrt", e, 4 * e + r, 4 * e),
                     ("to_dtype", 0, 4 * e, e * s), ("mul_weight", e, e * s + h * s, e * s))
            for sub, flops, rd, wr in steps:
                self.add(name=f"{name}.{sub}", kind="norm" if sub == "mean" else "elementwise", module=module,
                         flops=float(flops), bytes_read=rd, bytes_written=wr,
                         param_bytes=h * s if sub == "mul_weight" else 0.0)

    # --- the model --------------------------------------------------------------------------------------
    def embed(self) -> None:
        h, t = self.cfg.hidden_size, self.t
        self.add(name="embedding", kind="embedding", module="embed_tokens", flops=0.0,
                 bytes_read=t * TOKEN_ID_BYTES + t * h * self.s, bytes_written=t * h * self.s,
                 param_bytes=t * h * self.s)
        if self.cfg.position == "learned":
            self.add(name="position_embedding", kind="embedding", module="wpe", flops=0.0,
                     bytes_read=t * TOKEN_ID_BYTES + t * h * self.s, bytes_written=t * h * self.s,
                     param_bytes=t * h * self.s)
            self.elementwise("add", "embed", t * h, 2, 1, 1)
        elif self.layout == "torch":
            # cos/sin tables for this step: positions to float, inv_freq @ positions, cat, cos, sin, two casts.
            for sub, ops in (("positions_to_float", O.CAST), ("matmul_inv_freq", O.ELEMENTWISE), ("cat", O.COPY),
                             ("cos", O.ELEMENTWISE), ("sin", O.ELEMENTWISE), ("cos_to_dtype", O.CAST),
                             ("sin_to_dtype", O.CAST)):
                rot = self.cfg.qk_rope_head_dim or self.cfg.head_dim  # MLA rotates only its rope part
                self.elementwise(f"rotary_emb.{sub}", "rotary_emb", self.t * rot, 1, 1, 1,
                                 flops_per_elem=ops)

    def layer(self, i: int) -> None:
        cfg, t, h = self.cfg, self.t, self.cfg.hidden_size
        mod = f"layers.{i}"
        fused_norms = self.layout == "fused" and cfg.norm == "rmsnorm" and cfg.norms_per_layer == 2
        if not (fused_norms and i > 0):
            self.norm("input_layernorm", f"{mod}.input_layernorm", t)
        else:  # fused residual add + norm: reads x and residual, writes both
            self.fused_add_norm(f"{mod}.input_layernorm")
        if cfg.is_mla:
            self.mla_attention(mod, i)
        else:
            self.self_attention(mod, i)
        if cfg.norms_per_layer == 4:  # Gemma-2/3: norm the attention output, add, norm before the MLP
            self.norm("post_attention_layernorm", f"{mod}.post_attention_layernorm", t)
            self.elementwise("residual_add", f"{mod}.attn_residual", t * h, 2, 1, 1)
            self.norm("pre_feedforward_layernorm", f"{mod}.pre_feedforward_layernorm", t)
        elif not fused_norms:
            self.elementwise("residual_add", f"{mod}.attn_residual", t * h, 2, 1, 1)
            self.norm("post_attention_layernorm", f"{mod}.post_attention_layernorm", t)
        else:
            self.fused_add_norm(f"{mod}.post_attention_layernorm")
        if cfg.is_moe_layer(i):
            self.moe(mod)
            if self.rs.shared_intermediate:
                self.shared_experts(mod)
        else:
            self.mlp(mod, self.rs.intermediate)
        if cfg.norms_per_layer == 4:
            self.norm("post_feedforward_layernorm", f"{mod}.post_feedforward_layernorm", t)
        if not fused_norms:
            self.elementwise("residual_add", f"{mod}.mlp_residual", t * h, 2, 1, 1)

    def fused_add_norm(self, module: str) -> None:
        t, h, s = self.t, self.cfg.hidden_size, self.s
        self.add(name="fused_add_rms_norm", kind="norm", module=module, flops=O.FUSED_ADD_RMS_NORM * t * h,
                 bytes_read=2 * t * h * s + h * s, bytes_written=2 * t * h * s, param_bytes=h * s)

    def rotary(self, mod: str, tensors: tuple[tuple[str, float], ...], rot_dim: int) -> None:
        """Rotary embedding on each (name, elements) tensor; ``rot_dim``: the rotated width of one head."""
        t, s = self.t, self.s
        if self.layout == "fused":
            e = sum(el for _, el in tensors)
            self.add(name="rotary", kind="elementwise", module=f"{mod}.self_attn.rotary", flops=O.ROTARY_FUSED * e,
                     bytes_read=e * s, bytes_written=e * s)
            return
        # HF apply_rotary_pos_emb on q then k: x*cos, neg(x2), cat(-x2, x1), rotated*sin, add
        for tensor, el in tensors:
            for sub, fl, rd, wr in (("mul_cos", el, el * s + t * rot_dim * s, el * s),
                                    ("neg", el / 2, el / 2 * s, el / 2 * s),
                                    ("cat", 0, el * s, el * s),
                                    ("mul_sin", el, el * s + t * rot_dim * s, el * s),
                                    ("add", el, 2 * el * s, el * s)):
                self.add(name=f"rotary.{tensor}.{sub}", kind="copy" if sub == "cat" else "elementwise",
                         module=f"{mod}.self_attn.rotary", flops=float(fl), bytes_read=rd, bytes_written=wr)

    def cache_write(self, mod: str, parts: tuple[str, ...], elems_per_part: float) -> None:
        for part in parts:
            self.add(name=f"{part}_cache_write", kind="copy", module=f"{mod}.self_attn.kv_cache", flops=0.0,
                     bytes_read=elems_per_part * self.s, bytes_written=elems_per_part * self.p.kv_bytes)

    def self_attention(self, mod: str, i: int) -> None:
        cfg, rs, t = self.cfg, self.rs, self.t
        h, d = cfg.hidden_size, cfg.head_dim
        q_n, kv_n = rs.heads * d, rs.kv_heads * d
        fused = self.layout == "fused"
        if fused or cfg.fused_qkv:
            self.linear("qkv_proj", f"{mod}.self_attn.qkv_proj", t, q_n + 2 * kv_n, h, bias=cfg.qkv_bias)
        else:
            self.linear("q_proj", f"{mod}.self_attn.q_proj", t, q_n, h, bias=cfg.qkv_bias)
            self.linear("k_proj", f"{mod}.self_attn.k_proj", t, kv_n, h, bias=cfg.qkv_bias)
            self.linear("v_proj", f"{mod}.self_attn.v_proj", t, kv_n, h, bias=cfg.qkv_bias)
        if cfg.qk_norm:  # per-head RMSNorm on q and k (Qwen3, Gemma-3)
            self.norm("q_norm", f"{mod}.self_attn.q_norm", t * rs.heads, d)
            self.norm("k_norm", f"{mod}.self_attn.k_norm", t * rs.kv_heads, d)
        if cfg.position == "rotary":
            self.rotary(mod, (("q", t * q_n), ("k", t * kv_n)), d)
        if fused:
            self.cache_write(mod, ("kv",), 2 * t * kv_n)
        else:
            self.cache_write(mod, ("k", "v"), t * kv_n)
        self.attention(mod, i, rs.kv_heads, d, d, 2 * kv_n)
        self.linear("o_proj", f"{mod}.self_attn.o_proj", t, h, q_n, bias=cfg.o_bias)

    def mla_attention(self, mod: str, i: int) -> None:
        """Multi-head latent attention. The cache holds the latent and the rotary key (kv_lora_rank +
        qk_rope_head_dim per token). A prefill expands the latent to every head's key and value (kv_b_proj)
        and runs ordinary attention; a decode step attends in the absorbed form (DeepSeek-V2 paper, 2.1.3):
        q_nope is multiplied into the latent space (W_UK), all heads attend over the one latent as a
        single KV head, and the result leaves it through W_UV, as vLLM's and SGLang's MLA decode kernels do."""
        cfg, rs, t, h = self.cfg, self.rs, self.t, self.cfg.hidden_size
        heads, rope, lora = rs.heads, cfg.qk_rope_head_dim, cfg.kv_lora_rank
        nope, qh, latent = cfg.head_dim - rope, cfg.head_dim, lora + rope
        sa = f"{mod}.self_attn"
        if cfg.q_lora_rank:
            self.linear("q_a_proj", f"{sa}.q_a_proj", t, cfg.q_lora_rank, h, bias=cfg.qkv_bias)
            self.norm("q_a_layernorm", f"{sa}.q_a_layernorm", t, cfg.q_lora_rank)
            self.linear("q_b_proj", f"{sa}.q_b_proj", t, heads * qh, cfg.q_lora_rank)
        else:
            self.linear("q_proj", f"{sa}.q_proj", t, heads * qh, h)
        self.linear("kv_a_proj_with_mqa", f"{sa}.kv_a_proj_with_mqa", t, latent, h, bias=cfg.qkv_bias)
        self.norm("kv_a_layernorm", f"{sa}.kv_a_layernorm", t, lora)
        self.rotary(mod, (("q", t * heads * rope), ("k", t * rope)), rope)
        self.cache_write(mod, ("latent",), t * latent)
        if self.phase == "prefill":
            self.linear("kv_b_proj", f"{sa}.kv_b_proj", t, heads * (nope + cfg.v_head_dim), lora)
            self.attention(mod, i, heads, qh, cfg.v_head_dim, heads * (qh + cfg.v_head_dim), fresh=True)
        else:
            self.linear("q_absorb", f"{sa}.kv_b_proj.w_uk", t, lora, nope, gemm_batch=heads)
            self.attention(mod, i, 1, latent, lora, latent)
            self.linear("v_absorb", f"{sa}.kv_b_proj.w_uv", t, cfg.v_head_dim, lora, gemm_batch=heads)
        self.linear("o_proj", f"{sa}.o_proj", t, h, heads * cfg.v_head_dim, bias=cfg.o_bias)

    def attention(self, mod: str, i: int, kv_heads: int, d_qk: int, d_v: int, kv_elems: int,
                  fresh: bool = False) -> None:
        """One fused attention kernel: ``rs.heads`` query heads of ``d_qk`` over ``kv_heads`` heads whose values
        are ``d_v`` wide. ``kv_elems``: elements per token of the cache (decode) or, with ``fresh``, of the
        prefill's keys and values (standard attention reads its fresh k and v in a prefill either way)."""
        cfg, b, heads = self.cfg, self.batch, self.rs.heads
        s, kvb = self.s, self.p.kv_bytes
        if self.phase == "prefill":
            n = self.q_len
            w = attended_tokens(cfg, n, i)
            pairs = w * (w + 1) / 2 + (n - w) * w  # causal (and windowed) query-key pairs per head
            kv_len = n
            kv_read = self.t * kv_elems * s  # the fresh k and v, not the cache
        else:
            kv_len = attended_tokens(cfg, self.context + 1, i)
            pairs = kv_len
            kv_read = b * kv_len * kv_elems * kvb
        flops = 2.0 * (d_qk + d_v) * pairs * b * heads  # QK^T (2 d_qk) and PV (2 d_v) per pair
        if self.phase == "decode":
            # decode kernels pack the query heads sharing a KV head into the GEMM's rows (GQA packing)
            group = heads // kv_heads if heads >= kv_heads else 1
            gemm = GemmShape(group, kv_len, d_qk, b * (heads // group))
        else:
            gemm = GemmShape(self.q_len, kv_len, d_qk, b * heads)
        self.add(name="scaled_dot_product_attention", kind="attention", module=f"{mod}.self_attn.attn",
                 flops=flops, bytes_read=self.t * heads * d_qk * s + kv_read,
                 bytes_written=self.t * heads * d_v * s, gemm=gemm)

    def mlp(self, mod: str, inter: int, where: str = "mlp") -> None:
        cfg, t, h = self.cfg, self.t, self.cfg.hidden_size
        fused = self.layout == "fused"
        m = f"{mod}.{where}"
        if cfg.gated_mlp:
            if fused:
                self.linear("gate_up_proj", f"{m}.gate_up_proj", t, 2 * inter, h, bias=cfg.mlp_bias)
                self.elementwise("act_and_mul", f"{m}.act", t * inter, 2, 1, 1,
                                 flops_per_elem=O.activation(cfg.hidden_act) + O.MUL)
            else:
                self.linear("gate_proj", f"{m}.gate_proj", t, inter, h, bias=cfg.mlp_bias)
                self.linear("up_proj", f"{m}.up_proj", t, inter, h, bias=cfg.mlp_bias)
                self.elementwise(f"{cfg.hidden_act}", f"{m}.act_fn", t * inter, 1, 1, 1,
                                 flops_per_elem=O.activation(cfg.hidden_act))
                self.elementwise("mul", f"{m}.mul", t * inter, 2, 1, 1)
            self.linear("down_proj", f"{m}.down_proj", t, h, inter, bias=cfg.mlp_bias)
        else:
            self.linear("fc_in", f"{m}.c_fc", t, inter, h, bias=cfg.mlp_bias)
            self.elementwise(cfg.hidden_act, f"{m}.act", t * inter, 1, 1, 1,
                             flops_per_elem=O.activation(cfg.hidden_act))
            self.linear("fc_out", f"{m}.c_proj", t, h, inter, bias=cfg.mlp_bias)

    def shared_experts(self, mod: str) -> None:
        """The always-on shared experts (one MLP of their combined width), Qwen2-MoE's sigmoid gate on it,
        and the add to the routed experts' output."""
        t, h = self.t, self.cfg.hidden_size
        self.mlp(mod, self.rs.shared_intermediate, where="moe.shared_experts")
        if self.cfg.shared_expert_gate:
            self.linear("shared_expert_gate", f"{mod}.moe.shared_expert_gate", t, 1, h, weight_bytes=self.s)
            self.elementwise("sigmoid", f"{mod}.moe.shared_expert_gate", t, 1, 1, 1,
                             flops_per_elem=O.activation("sigmoid"))
            self.elementwise("mul", f"{mod}.moe.shared_expert_gate", t * h, 1, 1, 1)
        self.elementwise("add_shared", f"{mod}.moe.shared_experts", t * h, 2, 1, 1)

    def moe(self, mod: str) -> None:
        cfg, t, h, inter, s = self.cfg, self.t, self.cfg.hidden_size, self.rs.moe_intermediate, self.s
        e, k = cfg.num_experts, cfg.experts_per_token
        fused = self.layout == "fused"
        rows = t * k                                   # (token, expert) pairs
        touched = expected_experts_touched(cfg, t)
        self.linear("router", f"{mod}.moe.gate", t, e, h, weight_bytes=s)
        if fused:
            # vLLM fused_moe: topk-softmax, align/sort, grouped w13, act-and-mul, grouped w2, sum
            self.add(name="topk_softmax", kind="softmax", module=f"{mod}.moe.routing", flops=O.SOFTMAX * t * e,
                     bytes_read=t * e * s, bytes_written=rows * 8.0)
            self.add(name="moe_align", kind="other", module=f"{mod}.moe.align", flops=0.0,
                     bytes_read=rows * 8.0, bytes_written=rows * 8.0, kernels=2)
            n_exp = max(1, round(touched))
            m_per = max(1, math.ceil(rows / touched))
            common = dict(m=m_per, k=h, gemm_batch=n_exp, weight_count=touched, flops_m=rows)
            self.linear("experts.w13", f"{mod}.moe.experts.w13", n=2 * inter, bias=cfg.mlp_bias, **common)
            self.elementwise("experts.act_and_mul", f"{mod}.moe.experts.act", rows * inter, 2, 1, 1,
                             flops_per_elem=O.activation(cfg.hidden_act) + O.MUL)
            self.linear("experts.w2", f"{mod}.moe.experts.w2", m=m_per, n=h, k=inter, gemm_batch=n_exp,
                        weight_count=touched, flops_m=rows, bias=cfg.mlp_bias)
            self.elementwise("experts.combine", f"{mod}.moe.combine", rows * h, 1, 1 / k, 1)
            return
        # HF Mixtral: softmax, topk, sum, div, cast; one_hot mask; then a loop over the experts that were hit
        for sub, ops in (("softmax", O.SOFTMAX), ("topk", O.REDUCTION), ("sum", O.REDUCTION),
                         ("div", O.ELEMENTWISE), ("to_dtype", O.CAST), ("one_hot", O.COPY)):
            self.add(name=f"routing.{sub}", kind="softmax" if sub == "softmax" else "other",
                     module=f"{mod}.moe.routing", flops=ops * t * e, bytes_read=t * e * 4.0,
                     bytes_written=t * e * 4.0)
        launches = max(1, math.ceil(touched - 1e-9))
        share_w = touched / launches                   # expected expert matrices per launch
        share_r = rows / launches                      # expected rows per launch
        m_per = max(1, math.ceil(share_r))
        for j in range(launches):
            emod = f"{mod}.moe.experts.{j}"
            self.add(name="where", kind="other", module=emod, flops=0.0, bytes_read=t * e * 8.0,
                     bytes_written=share_r * 8.0)
            self.add(name="gather_tokens", kind="copy", module=emod, flops=0.0, bytes_read=share_r * h * s,
                     bytes_written=share_r * h * s)
            if cfg.gated_mlp:
                self.linear("w1", f"{emod}.w1", m_per, inter, h, bias=cfg.mlp_bias, weight_count=share_w,
                            flops_m=share_r)
                self.linear("w3", f"{emod}.w3", m_per, inter, h, bias=cfg.mlp_bias, weight_count=share_w,
                            flops_m=share_r)
                self.elementwise(cfg.hidden_act, f"{emod}.act_fn", share_r * inter, 1, 1, 1,
                                 flops_per_elem=O.activation(cfg.hidden_act))
                self.elementwise("mul", f"{emod}.mul", share_r * inter, 2, 1, 1)
            else:
                self.linear("fc_in", f"{emod}.fc_in", m_per, inter, h, bias=cfg.mlp_bias, weight_count=share_w,
                            flops_m=share_r)
                self.elementwise(cfg.hidden_act, f"{emod}.act", share_r * inter, 1, 1, 1,
                                 flops_per_elem=O.activation(cfg.hidden_act))
            self.linear("w2", f"{emod}.w2", m_per, h, inter, bias=cfg.mlp_bias, weight_count=share_w,
                        flops_m=share_r)
            self.elementwise("mul_routing_weight", f"{emod}.scale", share_r * h, 1, 1, 1)
            self.elementwise("index_add", f"{emod}.index_add", share_r * h, 2, 1, 1, flops_per_elem=O.INDEX_ADD)

    def head(self) -> None:
        cfg = self.cfg
        self.norm("norm", "norm", self.t)
        # the output head runs on the last token of each sequence
        self.linear("lm_head", "lm_head", self.batch, self.rs.vocab, cfg.hidden_size, weight_bytes=self.s)


def build_notes(cfg: LLMConfig, p: Precision, phase: str, context: int, tp: int) -> tuple[Note, ...]:
    """What an analytic build assumed, each note with its kind: the precisions, a rank's share, the cache."""
    notes = [Note(NoteKind.PRECISION, p.describe())]
    if p.weight_only:
        notes.append(Note(NoteKind.PRECISION, f"weight-only quantization: fewer weight bytes, but the matrix "
                                              f"products run at {p.act} peak, not {p.weight}"))
    if tp > 1:
        notes.append(Note(NoteKind.TENSOR_PARALLEL,
                          f"rank 1 of {tp} (tensor parallel); all-reduces are not in these operators"))
    window = window_caps(cfg, context + (1 if phase == "decode" else 0))
    if window:
        notes.append(Note(NoteKind.KV_CACHE, window))
    if cfg.is_mla:
        notes.append(Note(NoteKind.KV_CACHE, MLA_NOTE))
    return tuple(notes)


def build_workload(cfg: LLMConfig, *, phase: str = "decode", batch: int = 1, context: int = 1024,
                   precision: Precision | None = None, tp: int = 1, layout: str = "torch") -> Workload:
    """One forward pass of one tensor-parallel rank (the whole model when tp=1)."""
    check_sizes(cfg, phase, batch, context)
    if layout not in KERNEL_LAYOUTS:
        raise InputError(f"unknown kernel layout {layout!r}; expected torch or fused")
    p = precision or make_precision()
    rs = rank_shape(cfg, tp)
    b = _Builder(cfg, rs, p, phase, batch, context, layout)
    b.embed()
    for i in range(cfg.num_layers):
        b.layer(i)
    b.head()

    what = f"prefill of {context} tokens" if phase == "prefill" else f"decode step at context {context}"
    return Workload(
        name=f"{cfg.name} {what}, batch {batch}" + (f", tp {tp}" if tp > 1 else ""),
        batch=batch, dtype=p.act, ops=tuple(b.ops),
        params=round(cfg.params / tp), param_bytes=weight_bytes(cfg, p, tp),
        input_bytes=float(b.t * TOKEN_ID_BYTES),
        activation_peak_bytes=activation_bytes(cfg, p, batch, b.q_len, tp),
        source=cfg.source, notes=build_notes(cfg, p, phase, context, tp), functional=True,
    )
