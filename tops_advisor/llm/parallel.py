"""Tensor parallelism (Megatron-LM style): how a model splits across N devices, and what it costs to talk.

Each rank holds 1/N of the query heads, of the KV heads (at least one: with fewer KV heads than ranks the
KV heads are replicated, as vLLM does), of the MLP intermediate size (the dense MLP's, every routed expert's
and the shared experts'), and of the vocabulary (embedding and output head). Norms and the MoE router are
replicated; so are multi-head latent attention's down-projections (q_a, kv_a_proj_with_mqa: vLLM's
ReplicatedLinear) and its latent cache, while q_b, kv_b and o split by heads.

Two all-reduces per layer (after the attention output projection and after the MLP) of
tokens x hidden x stream-dtype bytes each, costed with the ring model:

    t = base + 2 (N-1) * step  +  2 (N-1)/N * bytes / per-direction bandwidth

Latency constants are NCCL's own tuning model (NVIDIA/nccl ``src/graph/tuning.cc``, ring algorithm, LL
protocol, which NCCL picks for the small messages of decoding): base latency 3.6 us, 0.4 us per step over
NVLink and 1.0 us per step over PCIe. The bandwidth is the catalog's: ``peer_link_bandwidth_gb_s`` is the
vendors' total bidirectional figure per GPU, so one direction is half of it; without a peer link, PCIe's
per-direction payload rate from generation and lanes. Communication is not overlapped with compute.
The embedding's and the output head's collectives (one small all-reduce, one logit gather) are ignored.

With a calibration whose ``links`` were measured (``tops-advisor probe --all-gpus``) the same model takes
the measured numbers instead: the bandwidth is the best all-reduce **bus** bandwidth (nccl-tests' busbw =
bytes / time x 2(n-1)/n, exactly the quantity the bandwidth term above divides by), and base + steps is the
measured time of the smallest all-reduce (replayed in a CUDA graph for graph mode where that was measured,
else called from Python), shifted by NCCL's per-step latency when predicting for a rank
count other than the one measured (``base + 2(n-1) step`` grows by ``2 step`` per extra rank).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Hardware
from ..errors import InputError, LLMConfigError
from ..kinds import Mode
from .config import LLMConfig, RankShape

NCCL_BASE_LATENCY_S = 3.6e-6
NCCL_STEP_LATENCY_S = {"nvlink": 0.4e-6, "pcie": 1.0e-6}
# GPUs one NVLink/NVSwitch domain joins in a standard server: 8 in NVIDIA's DGX/HGX A100, H100, H200 and B200
# systems (the DGX H100 datasheet: "8x NVIDIA H100 Tensor Core GPUs", all-to-all over 4 NVSwitches). Tensor
# parallelism past it would cross the slower inter-node network, which this model does not cost.
NVLINK_NODE_GPUS = 8
# Explicit default, not a hardware limit: the largest tensor-parallel degree searched ("which split holds it"),
# eight such servers. Beyond it the answer is "none", reported as such.
MAX_TP = 8 * NVLINK_NODE_GPUS
# The valid --tp values an error message lists: up to two servers' worth.
TP_HINT_MAX = 2 * NVLINK_NODE_GPUS


def check_tp(cfg: LLMConfig, tp: int) -> None:
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise InputError(f"--tp must be a positive whole number of devices, got {tp!r}")
    problems = []
    if cfg.num_heads % tp:
        problems.append(f"{cfg.num_heads} attention heads")
    if cfg.num_kv_heads % tp and tp % cfg.num_kv_heads:
        problems.append(f"{cfg.num_kv_heads} KV heads")
    for what, size in _mlp_widths(cfg):
        if size % tp:
            problems.append(f"{what} {size}")
    if problems:
        valid = ", ".join(str(n) for n in valid_tp_degrees(cfg, TP_HINT_MAX))
        raise LLMConfigError(f"tensor parallelism over {tp} devices does not divide {cfg.name}'s "
                             f"{' and '.join(problems)}", hint=f"valid --tp values: {valid}")


def _mlp_widths(cfg: LLMConfig) -> list[tuple[str, int]]:
    """The MLP widths a rank takes a share of: the dense MLP's (when some layer is dense), each routed
    expert's and the shared experts'."""
    out = []
    if not cfg.is_moe or cfg.dense_layers:
        out.append(("intermediate size", cfg.intermediate_size))
    if cfg.is_moe:
        out.append(("expert intermediate size", cfg.routed_intermediate))
        if cfg.shared_intermediate_size:
            out.append(("shared-expert intermediate size", cfg.shared_intermediate_size))
    return out


def valid_tp_degrees(cfg: LLMConfig, max_n: int = MAX_TP) -> list[int]:
    return [n for n in range(1, max_n + 1)
            if cfg.num_heads % n == 0 and (cfg.num_kv_heads % n == 0 or n % cfg.num_kv_heads == 0)
            and all(size % n == 0 for _, size in _mlp_widths(cfg))]


def rank_shape(cfg: LLMConfig, tp: int = 1) -> RankShape:
    check_tp(cfg, tp)
    return RankShape(tp=tp, heads=cfg.num_heads // tp, kv_heads=max(1, cfg.num_kv_heads // tp),
                     intermediate=cfg.intermediate_size // tp, moe_intermediate=cfg.routed_intermediate // tp,
                     shared_intermediate=cfg.shared_intermediate_size // tp, vocab=math.ceil(cfg.vocab_size / tp))


@dataclass(frozen=True)
class Link:
    kind: str                       # "nvlink" (any peer link) or "pcie"
    name: str
    bandwidth_bytes_per_s: float    # one direction (catalog) or the measured all-reduce bus bandwidth
    step_latency_s: float
    measured_latency_s: float | None = None  # measured small all-reduce: replaces base + 2(n-1) steps
    measured_world_size: int | None = None
    source: str = "catalog"         # "catalog" or "calibration"


def link_for(hw: Hardware, calibration=None, mode: str = "graph") -> Link:
    """The link tensor parallelism uses between two devices of this kind: measured when ``calibration``
    carries ``links`` from ``probe --all-gpus``, else the catalog's. ``mode`` picks the measured latency: the
    all-reduce replayed in a CUDA graph ('graph', where measured) or called from Python ('eager')."""
    links = getattr(calibration, "links", None)
    if links is not None:
        return measured_link(links, mode)
    if hw.peer_link and hw.peer_link_bandwidth_gb_s:
        return Link("nvlink", hw.peer_link, hw.peer_link_bandwidth_gb_s * 1e9 / 2, NCCL_STEP_LATENCY_S["nvlink"])
    pcie = hw.pcie_bandwidth_bytes_per_s
    if pcie:
        return Link("pcie", f"PCIe {hw.pcie_gen}.0 x{hw.pcie_lanes}", pcie, NCCL_STEP_LATENCY_S["pcie"])
    raise InputError(f"{hw.id} has neither a peer link nor PCIe generation and lanes in the catalog; "
                     f"tensor parallelism cannot be costed", hint="use --tp 1")


def measured_link(links, mode: str = "graph") -> Link:
    """A Link from a calibration's ``links`` (tops_advisor.calibration.Links)."""
    kind = links.link_kind or ("nvlink" if links.device == "cuda" else "pcie")
    step = NCCL_STEP_LATENCY_S.get(kind, NCCL_STEP_LATENCY_S["pcie"])
    graph = mode == Mode.GRAPH and links.all_reduce_graph_latency_us is not None
    latency_us = links.all_reduce_graph_latency_us if graph else links.all_reduce_latency_us
    name = (f"measured {kind if links.device == 'cuda' else links.device} links ({links.backend}, "
            f"{links.world_size} ranks: all-reduce bus {links.all_reduce_busbw_gb_s:.3g} GB/s, "
            f"{latency_us:.3g} us{' in a CUDA graph' if graph else ''})")
    return Link(kind, name, links.all_reduce_busbw_gb_s * 1e9, step, measured_latency_s=latency_us * 1e-6,
                measured_world_size=links.world_size, source="calibration")


def allreduce_time_s(nbytes: float, n: int, link: Link) -> float:
    """Ring all-reduce of ``nbytes`` across ``n`` ranks."""
    if n <= 1:
        return 0.0
    steps = 2 * (n - 1)
    if link.measured_latency_s is not None:
        shift = (steps - 2 * ((link.measured_world_size or n) - 1)) * link.step_latency_s
        latency = max(NCCL_BASE_LATENCY_S, link.measured_latency_s + shift)
    else:
        latency = NCCL_BASE_LATENCY_S + steps * link.step_latency_s
    return latency + steps / n * nbytes / link.bandwidth_bytes_per_s


def tp_comm_time_s(cfg: LLMConfig, tokens: int, n: int, link: Link, stream_bytes: float) -> float:
    """Two all-reduces per layer of tokens x hidden activations."""
    if n <= 1:
        return 0.0
    return 2 * cfg.num_layers * allreduce_time_s(tokens * cfg.hidden_size * stream_bytes, n, link)
