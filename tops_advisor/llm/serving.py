"""Continuous batching on one replica (``tp`` devices of one kind): the most requests it serves at once.

A serving engine with continuous batching and chunked prefill (vLLM, SGLang, TensorRT-LLM's in-flight batching)
runs one step after another. Each step carries one new token of every running request (the decode batch, B
requests) and fills the rest of its token budget S (vLLM's ``max_num_batched_tokens``) with chunks of prompts
waiting for their first token. A step is priced from two predictions (``analysis.PhaseRunner``, the same
roofline as every other answer):

* ``decode_s(B)``: one decode step of B requests at context P + G/2 (P prompt tokens, G generated: the running
  requests are spread over their generation, and a step's attention cost is linear in the context, so the
  batch costs what B requests at the mean context cost);
* ``prefill_s``: the prefill of one prompt of P tokens (batch 1).

In steady state B / G requests finish per step and as many start, so a step carries on average B x P / G
prompt tokens besides its B decode tokens. Those are priced as their share of one prompt's prefill and added
to the decode step: no overlap is credited (the decodes' and the chunks' kernels run one after the other, and
each chunk step reads the weights again, so the estimate errs long by at most one weight read per chunk):

    step_s(B) = decode_s(B) + (B / G) x prefill_s          per-user decode rate: 1 / step_s(B)
    ttft_s(B) = prefill_s + ceil(P / (S - B)) x decode_s(B) one new prompt, in chunks of the S - B tokens a step
                                                            leaves, each step also running the B decodes
    tokens/s per replica = B / step_s(B) (generated tokens); requests/s per replica = B / (G x step_s(B))

TTFT is that of a prompt arriving alone: a burst of arrivals queues behind each other's chunks (the burst
TTFT of ``analyze_llm(batch=N)``, N prompts prefilled in one pass, bounds that). B is feasible when each device
holds the weights, the KV cache of B requests at their full length (P + G tokens each, so none is preempted),
one step's activations (B decode tokens and one chunk) and the runtime reserve; B (1 + P / G) <= S (the steps
absorb the prompts that arrive); and the per-user rate and TTFT targets hold. Each condition that holds at B
holds below it, so the largest B is found by bisection (``search.first_true``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ..catalog import Hardware
from ..errors import InputError, LLMConfigError
from ..search import first_true
from .analysis import PhaseRunner
from .config import LLMConfig
from .memory import (
    RUNTIME_RESERVE_BYTES,
    MemoryBreakdown,
    activation_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    weight_bytes,
)
from .precision import Precision

GIB = 2 ** 30
# Explicit default: the step token budget S, as vLLM sets max_num_batched_tokens for its OpenAI-compatible server
# when none is given. Source: vllm-project/vllm vllm/engine/arg_utils.py (commit 99d7eb5),
# EngineArgs.get_batch_defaults: 'if device_memory >= 70 * GiB_bytes and "a100" not in device_name: # For GPUs
# like H100 and MI300x, use larger default values' -> UsageContext.OPENAI_API_SERVER: 8192; else 2048.
LARGE_DEVICE_TOKEN_BUDGET = 8192
TOKEN_BUDGET = 2048
LARGE_DEVICE_BYTES = 70 * GIB


def token_budget_for(hw: Hardware) -> int:
    """vLLM's default step token budget on ``hw`` (8192 on devices of 70 GiB or more other than the A100s, else
    2048; see ``LARGE_DEVICE_TOKEN_BUDGET``)."""
    large = hw.memory_bytes >= LARGE_DEVICE_BYTES and not hw.id.startswith("a100")
    return LARGE_DEVICE_TOKEN_BUDGET if large else TOKEN_BUDGET


@dataclass(frozen=True)
class ServingTargets:
    """What one request must see (None: no target), the request's lengths and the step token budget."""

    prompt: int
    generate: int
    token_budget: int
    tokens_per_s: float | None = None   # per-user decode rate
    ttft_s: float | None = None

    def __post_init__(self):
        for name in ("prompt", "generate", "token_budget"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name.replace('_', ' ')} must be a positive whole number, got {v!r}")
        if self.token_budget < 2:
            raise InputError(f"the step token budget must be at least 2 (one decode token and one prompt token), "
                             f"got {self.token_budget}")


def check_lengths(cfg: LLMConfig, t: ServingTargets) -> None:
    """A request of P + G tokens must fit the model's positions."""
    limit = cfg.max_position_embeddings
    if limit and t.prompt + t.generate > limit:
        raise LLMConfigError(f"prompt {t.prompt} + generate {t.generate} = {t.prompt + t.generate} tokens exceeds "
                             f"{cfg.name}'s maximum of {limit} positions (max_position_embeddings)")


# --- the arithmetic (pure: step times in, seconds and counts out) ---------------------------------------------

def step_s(decode_s: float, prefill_s: float, batch: int, generate: int) -> float:
    """Mean step of ``batch`` running requests: the decode step plus the prefill share of the B / G prompts that
    start per step."""
    return decode_s + batch / generate * prefill_s


def chunked_ttft_s(decode_s: float, prefill_s: float, batch: int, prompt: int, token_budget: int) -> float:
    """One new prompt's prefill in chunks of the ``token_budget - batch`` tokens a step leaves, each of its steps
    also running the ``batch`` decodes."""
    return prefill_s + math.ceil(prompt / (token_budget - batch)) * decode_s


def budget_limit(t: ServingTargets) -> int:
    """Largest B with B (1 + P / G) <= S: the prompts arriving per step fit beside the decodes."""
    return (t.token_budget * t.generate) // (t.generate + t.prompt)


# Why the concurrency stops where it does: the first condition to fail one request beyond the answer.
MEMORY, BUDGET, RATE, TTFT = "memory", "token budget", "decode rate", "TTFT"


@dataclass(frozen=True)
class Concurrency:
    """The search's answer: the largest feasible B (0: none) and what stops it (at B + 1, or at 1 when 0)."""

    requests: int
    limited_by: str


def max_concurrency(decode_s: Callable[[int], float], prefill_s: float, fits: Callable[[int], bool],
                    t: ServingTargets) -> Concurrency:
    """The largest B for which ``fits(B)`` (memory), the budget, the per-user rate and the TTFT target all hold
    (see the module docstring); ``decode_s(B)`` is the decode step of B requests."""
    def failing(b: int) -> str | None:
        if not fits(b):
            return MEMORY
        if b > budget_limit(t):
            return BUDGET
        d = decode_s(b)
        if t.tokens_per_s is not None and 1.0 / step_s(d, prefill_s, b, t.generate) < t.tokens_per_s:
            return RATE
        if t.ttft_s is not None and chunked_ttft_s(d, prefill_s, b, t.prompt, t.token_budget) > t.ttft_s:
            return TTFT
        return None

    first = failing(1)
    if first is not None:
        return Concurrency(0, first)
    # failing(hi): the bracket's failing end (at least 2: B = 1 holds, whatever the rounding of the cap)
    hi = max(min(budget_limit(t), _rate_cap(decode_s(1), prefill_s, t)), 1) + 1
    b = first_true(lambda n: failing(n) is not None, 1, hi) - 1
    return Concurrency(b, failing(b + 1) or BUDGET)


def _rate_cap(decode_1_s: float, prefill_s: float, t: ServingTargets) -> int | float:
    """A B above which the per-user rate cannot hold (the decode step never shrinks with B, so step_s(B) >=
    decode_s(1) + B / G x prefill_s): it narrows the bisection without changing its answer."""
    if t.tokens_per_s is None or prefill_s <= 0:
        return math.inf
    return math.floor(t.generate * (1.0 / t.tokens_per_s - decode_1_s) / prefill_s)


# --- one replica ------------------------------------------------------------------------------------------------

class ServingPoint(BaseModel):
    """One replica (``tp`` devices) serving ``concurrent_requests`` at once, in base units. When not even one
    request meets the targets (``concurrent_requests`` 0), the times and memory are those of one request (the
    times None when one does not fit)."""

    model_config = ConfigDict(frozen=True)

    tp: int
    concurrent_requests: int
    limited_by: str              # what stops one more request: memory, token budget, decode rate, TTFT
    token_budget: int
    prompt: int
    generate: int
    decode_step_s: float | None  # decode step of concurrent_requests at context prompt + generate / 2
    prefill_s: float | None      # one prompt alone (None: not predicted, the weights alone do not fit)
    step_s: float | None         # mean step with the prompts' share (1 / per-user rate)
    ttft_s: float | None         # chunked, beside the running decodes
    bound: str | None            # of the decode step
    memory: MemoryBreakdown      # per device, at concurrent_requests (at 1 when none is feasible)

    @property
    def tokens_per_s_per_request(self) -> float:
        return 1.0 / self.step_s if self.step_s else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of the replica (0 when it serves none)."""
        return self.concurrent_requests * self.tokens_per_s_per_request

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.tp

    @property
    def requests_per_s(self) -> float:
        """Requests the replica completes per second (each holds its place for G steps)."""
        return self.tokens_per_s / self.generate


def serving_memory(cfg: LLMConfig, p: Precision, hw: Hardware, requests: int, t: ServingTargets,
                   tp: int) -> MemoryBreakdown:
    """Per device: weights, ``requests`` caches of P + G tokens, one step's activations (the decode batch and the
    largest chunk, min(P, S - 1) prompt tokens: so the need grows with B), the runtime reserve."""
    chunk = min(t.prompt, t.token_budget - 1)
    return MemoryBreakdown(
        weights_bytes=weight_bytes(cfg, p, tp),
        kv_cache_bytes=kv_cache_bytes(cfg, p, requests, t.prompt + t.generate, tp),
        kv_bytes_per_token=kv_bytes_per_token(cfg, p, tp),
        activation_bytes=activation_bytes(cfg, p, requests, 1, tp) + activation_bytes(cfg, p, 1, chunk, tp),
        reserve_bytes=RUNTIME_RESERVE_BYTES, capacity_bytes=hw.memory_bytes)


def serve(runner: PhaseRunner, t: ServingTargets) -> ServingPoint:
    """The serving point of one replica: ``runner`` predicts the model on ``runner.tp`` devices of a kind."""
    cfg, p, hw, tp = runner.cfg, runner.p, runner.hw, runner.tp
    context = t.prompt + t.generate // 2

    def fits(b: int) -> bool:
        return serving_memory(cfg, p, hw, b, t, tp).fits

    steps: dict[int, object] = {}  # the decode step of B requests, predicted once

    def decode(b: int):
        if b not in steps:
            steps[b] = runner.run("decode", b, context)
        return steps[b]

    def decode_s(b: int) -> float:
        return decode(b).latency_s

    prefill = runner.run("prefill", 1, t.prompt).latency_s if fits(1) else None  # none: nothing to predict
    found = max_concurrency(decode_s, prefill or 0.0, fits, t)
    b = found.requests
    mem = serving_memory(cfg, p, hw, max(b, 1), t, tp)
    point = dict(tp=tp, concurrent_requests=b, limited_by=found.limited_by, token_budget=t.token_budget,
                 prompt=t.prompt, generate=t.generate, prefill_s=prefill, memory=mem)
    if prefill is None:  # one request does not fit: nothing predicted
        return ServingPoint(**point, decode_step_s=None, step_s=None, ttft_s=None, bound=None)
    dec = decode(max(b, 1))
    return ServingPoint(**point, decode_step_s=dec.latency_s, step_s=step_s(dec.latency_s, prefill, max(b, 1), t.generate),
                        ttft_s=chunked_ttft_s(dec.latency_s, prefill, max(b, 1), t.prompt, t.token_budget),
                        bound=dec.bound)
