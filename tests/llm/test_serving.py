"""Continuous batching on one replica: the concurrency search on step times and a tiny config whose answer is
derived by hand (llm/serving.py's module docstring gives the formulas)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.conftest import make_hardware
from tops_advisor.catalog import load_catalog
from tops_advisor.errors import InputError, LLMConfigError
from tops_advisor.llm import config_from_dict, make_precision
from tops_advisor.llm.analysis import PhaseRunner
from tops_advisor.llm.serving import (
    BUDGET,
    MEMORY,
    RATE,
    TTFT,
    ServingTargets,
    budget_limit,
    check_lengths,
    chunked_ttft_s,
    max_concurrency,
    serve,
    step_s,
    token_budget_for,
)

# Step times of round numbers: a decode step of B requests takes 10 ms + 0.5 ms per request; one prompt's
# prefill takes 100 ms. Requests: P = 400 prompt tokens, G = 100 generated.
PREFILL = 0.100


def decode(b: int) -> float:
    return 0.010 + 0.0005 * b


def targets(**over) -> ServingTargets:
    return ServingTargets(**{"prompt": 400, "generate": 100, "token_budget": 2048, **over})


def always(b: int) -> bool:
    return True


def test_step_and_ttft_formulas_by_hand():
    # step = decode + B / G x prefill = 0.023 + 26 / 100 x 0.1 = 0.049 s at B = 26
    assert step_s(decode(26), PREFILL, 26, 100) == pytest.approx(0.049)
    # one prompt of 400 tokens in chunks of 2048 - 26 = 2022: one step -> 0.1 + 1 x 0.023
    assert chunked_ttft_s(decode(26), PREFILL, 26, 400, 2048) == pytest.approx(0.123)
    # a budget of 100 leaves 100 - 20 = 80 tokens a step: ceil(400 / 80) = 5 steps -> 0.1 + 5 x 0.020
    assert chunked_ttft_s(decode(20), PREFILL, 20, 400, 100) == pytest.approx(0.2)
    # B (1 + P / G) <= S: B x 5 <= 2048 -> 409; <= 100 -> 20
    assert budget_limit(targets()) == 409 and budget_limit(targets(token_budget=100)) == 20


@pytest.mark.parametrize("over, fits, expected, limit", [
    # 20 tokens/s per request: step <= 0.05 s. step(B) = 0.010 + 0.0005 B + 0.001 B = 0.010 + 0.0015 B
    # <= 0.05 -> B <= 26.7: 26 (step 0.049 s, 20.4/s); 27 gives 0.0505 s, 19.8/s
    ({"tokens_per_s": 20.0}, always, 26, RATE),
    # TTFT <= 120.2 ms: 0.1 + 1 x (0.010 + 0.0005 B) <= 0.1202 -> B <= 20.4: 20
    ({"tokens_per_s": 20.0, "ttft_s": 0.1202}, always, 20, TTFT),
    # memory holds 12 requests: the rate would allow 26
    ({"tokens_per_s": 20.0}, lambda b: b <= 12, 12, MEMORY),
    # a budget of 100 tokens a step absorbs the prompts of at most 20 running requests (above)
    ({"tokens_per_s": 20.0, "token_budget": 100}, always, 20, BUDGET),
    # no target but the budget: 409
    ({}, always, 409, BUDGET),
    # 100 tokens/s per request: even one request steps 0.0115 s (87/s)
    ({"tokens_per_s": 100.0}, always, 0, RATE),
    ({}, lambda b: False, 0, MEMORY),
])
def test_max_concurrency_by_hand(over, fits, expected, limit):
    found = max_concurrency(decode, PREFILL, fits, targets(**over))
    assert (found.requests, found.limited_by) == (expected, limit)


# A tiny LLaMA: hidden 64, 2 layers, 4 heads of 16, 2 KV heads, MLP 128, vocabulary 1000.
TINY = config_from_dict({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
                         "max_position_embeddings": 2048}, name="tiny", use_transformers=False)


def stub_predictor(w, hw, cal=None, mode="graph"):
    """The step times above: a decode step of B sequences 10 ms + 0.5 ms x B, a prefill of one prompt 100 ms."""
    latency = PREFILL if "prefill" in w.name else decode(w.batch)
    return SimpleNamespace(latency_s=latency, bound="memory")


def tiny_point(memory_gb: float, **over):
    hw = make_hardware(memory_gb=memory_gb)
    runner = PhaseRunner(TINY, hw, make_precision(), 1, "graph", "torch", None, stub_predictor)
    return serve(runner, targets(**over))


def test_tiny_config_serves_what_the_rate_allows():
    point = tiny_point(16, tokens_per_s=20.0)
    # as above: 26 requests, step 0.049 s, TTFT 0.123 s
    assert point.concurrent_requests == 26 and point.limited_by == RATE
    assert point.step_s == pytest.approx(0.049) and point.ttft_s == pytest.approx(0.123)
    assert point.decode_step_s == pytest.approx(0.023) and point.prefill_s == pytest.approx(0.1)
    # 26 / 0.049 = 530.6 generated tokens/s; each request makes 100 tokens: 5.306 requests/s
    assert point.tokens_per_s == pytest.approx(26 / 0.049) and point.requests_per_s == pytest.approx(0.26 / 0.049)
    # KV cache: 2 (K, V) x 2 layers x 2 KV heads x 16 x 2 bytes = 256 bytes a token, 500 tokens a request
    assert point.memory.kv_cache_bytes == 26 * 500 * 256


def test_tiny_config_memory_bound_by_hand():
    # Weights: embeddings and head 2 x 1000 x 64 = 128,000, final norm 64; per layer q, o 2 x 64 x 64, k, v
    # 2 x 64 x 32, MLP 3 x 64 x 128, 2 norms x 64 = 36,992: 202,048 parameters x 2 bytes = 404,096 bytes.
    # Activations (memory.activation_bytes): per token 2 x 64 x 2 (stream) + 3 x 128 x 2 (MLP, the largest) =
    # 1,024 bytes, + 1000 x 4 fp32 logits per sequence: decode of B: 5,024 B; a chunk of 400 tokens: 413,600.
    # One request: 500 x 256 KV + 5,024 = 133,024 bytes. Fixed: 404,096 + 413,600 + 1e9 reserve = 1,000,817,696.
    # 1.002 GB leaves 1,182,304 bytes: 8 requests (1,064,192); 9 need 1,197,216.
    point = tiny_point(1.002, tokens_per_s=20.0)
    assert TINY.params == 202_048
    assert point.concurrent_requests == 8 and point.limited_by == MEMORY
    assert point.memory.total_bytes == 1_000_817_696 + 8 * 133_024
    # nothing fits: weights, a chunk and the reserve alone exceed 1.0 GB; nothing is predicted
    empty = tiny_point(1.0)
    assert empty.concurrent_requests == 0 and empty.limited_by == MEMORY and empty.step_s is None


def test_bad_serving_input():
    with pytest.raises(InputError, match="generate must be a positive whole number"):
        targets(generate=0)
    with pytest.raises(InputError, match="token budget must be at least 2"):
        targets(token_budget=1)
    with pytest.raises(LLMConfigError, match="exceeds tiny's maximum of 2048 positions"):
        check_lengths(TINY, targets(prompt=2000))


def test_token_budget_follows_vllm_defaults():
    # vLLM: 8192 on devices of 70 GiB (75.2e9 bytes) or more except A100s, else 2048
    cat = load_catalog()
    assert token_budget_for(cat.get("h100-sxm")) == 8192      # 80 GB
    assert token_budget_for(cat.get("a100-sxm4-80gb")) == 2048
    assert token_budget_for(cat.get("l40s")) == 2048          # 48 GB
    assert token_budget_for(make_hardware(memory_gb=75.1)) == 2048
    assert token_budget_for(make_hardware(memory_gb=75.2)) == 8192


def test_the_rate_bound_only_narrows_the_search(monkeypatch):
    # the bisection's upper end from the rate (step_s(B) >= decode_s(1) + B / G x prefill_s) changes no answer
    import math

    from tops_advisor.llm import load_config, serving
    from tops_advisor.llm.analysis import roofline_predictor

    hw = load_catalog().get("h100-sxm")
    cfg = load_config("llama2-7b")
    runner = PhaseRunner(cfg, hw, make_precision(), 1, "graph", "torch", None, roofline_predictor(hw))
    asks = [targets(prompt=1024, generate=g, token_budget=8192, tokens_per_s=r) for g, r in ((128, 30.0), (512, 10.0))]
    narrowed = [serve(runner, t).concurrent_requests for t in asks]
    monkeypatch.setattr(serving, "_rate_cap", lambda *a: math.inf)
    assert [serve(runner, t).concurrent_requests for t in asks] == narrowed
    assert all(n > 1 for n in narrowed)
