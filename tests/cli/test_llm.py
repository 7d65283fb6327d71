"""`tops-advisor llm` through click: JSON keys, human output, and every bad input as one line, exit 2."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, ["llm", *args])


def test_json_has_the_headline_keys():
    r = invoke("llama3-8b", "--hardware", "h200-sxm", "--batch", "4", "--context", "2048", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("latency_ms", "tokens_per_s", "memory_required_gb", "fits_memory", "devices", "bound"):
        assert key in d
    assert d["devices"] == 1 and d["fits_memory"] is True and d["batch"] == 4
    # 4 sequences x 2049 tokens x 131,072 bytes per token (2 x 32 x 8 x 128 x 2)
    assert d["memory_per_device_gb"]["kv_cache"] == pytest.approx(4 * 2049 * 131_072 / 1e9)


def test_human_output_and_request_mode():
    r = invoke("examples/llm/llama3-8b-config.json", "-H", "h100-sxm", "--prompt", "512", "--generate", "64",
               "--weight-dtype", "int4")
    assert r.exit_code == 0, r.output
    assert "TTFT" in r.output and "Request" in r.output and "weight-only" in r.output


def test_tensor_parallel_and_impossible_request():
    r = invoke("gpt3-175b", "-H", "rtx-4090", "--weight-dtype", "int8", "--context", "512", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["fits_memory"] is False and d["devices_needed"] == 8
    assert any("--tp 8" in s for s in d["suggestions"])
    r8 = invoke("gpt3-175b", "-H", "rtx-4090", "--weight-dtype", "int8", "--context", "512", "--tp", "8", "--json")
    d8 = json.loads(r8.stdout)
    assert d8["fits_memory"] is True and d8["devices"] == 8 and d8["link"].startswith("PCIe 4.0")


@pytest.mark.parametrize("args, message", [
    (["examples/llm/broken-missing-keys.json"], "missing required keys num_hidden_layers, vocab_size, "
                                                "intermediate_size"),
    (["llama3-8"], "unknown model 'llama3-8'"),
    (["nothere/config.json"], "config file nothere/config.json does not exist"),
    (["llama2-7b", "--context", "9000"], "context 9000 + 1 new token exceeds llama2-7b's maximum of 4096"),
    (["llama2-7b", "--batch", "0"], "batch must be a positive whole number, got 0"),
    (["llama2-7b", "--context", "-1"], "context must be a positive whole number, got -1"),
    (["llama2-7b", "--tp", "3"], "tensor parallelism over 3 devices does not divide"),
    (["llama2-7b", "--weight-dtype", "int3"], "unknown dtype 'int3'"),
    (["llama2-7b", "--weight-dtype", "bf16", "--act-dtype", "int8"], "weights wider than the activations"),
    (["llama2-7b", "--weight-dtype", "fp8", "--act-dtype", "int8"], "activations int8 need weights int8"),
    (["llama2-7b", "--hardware", "a100-sxm4-80gb", "--weight-dtype", "fp8", "--act-dtype", "fp8"], "no fp8 peak"),
    (["llama2-7b", "--hardware", "h900"], "unknown hardware 'h900'"),
])
def test_bad_input_is_one_line_exit_2(args, message):
    if "--hardware" not in args:
        args = [*args, "--hardware", "h200-sxm"]
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert "Traceback" not in r.output
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) <= 2  # error + hint


def test_heads_not_dividing_hidden(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"hidden_size": 4000, "num_hidden_layers": 2, "num_attention_heads": 48,
                               "intermediate_size": 100, "vocab_size": 10}))
    r = invoke(str(cfg), "-H", "h200-sxm")
    assert r.exit_code == 2 and "hidden size 4000 is not divisible by 48 attention heads" in r.stderr


def _llm_result(bound: str, flops: float, nbytes: float):
    decode = SimpleNamespace(flops=flops, bytes=nbytes, compute_s=1e-3)
    return SimpleNamespace(phase="decode", bound=bound, batch=1, decode=decode,
                           precision=SimpleNamespace(act="bf16"))



def test_decode_compute_bound_below_the_ridge_is_explained():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.render.llm import decode_bound_note

    hw = load_catalog(()).get("rtx-3090")
    ridge = hw.peak_ops_per_s("bf16") / hw.memory_bandwidth_bytes_per_s
    note = decode_bound_note(_llm_result("compute", 3.0e9, 1.0e9), hw)
    assert note and "below the bf16 ridge" in note and f"{ridge:.0f}" in note
    assert decode_bound_note(_llm_result("memory", 3.0e9, 1.0e9), hw) is None
    assert decode_bound_note(_llm_result("compute", 2 * ridge * 1e9, 1.0e9), hw) is None  # above the ridge
