"""`recommend --llm` through click: the precision and kernel options `llm` takes, serving plans (--serving,
--requests-per-s), the burst TTFT's label, and bad input as one line (and its hint), exit 2."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli

H100_70B = ("--llm", "llama3-70b", "-H", "h100-sxm")


def invoke(*args):
    return CliRunner().invoke(cli, ["recommend", *args])


def ttft_ms(kernels: str) -> float:
    r = CliRunner().invoke(cli, ["llm", "llama3-70b", "-H", "h100-sxm", "--tp", "8", "--batch", "16",
                                 "--prompt", "1024", "--kernels", kernels, "--json"])
    return json.loads(r.stdout)["ttft_ms"]


def test_fused_kernels_bring_eight_h100s_under_the_ttft_target():
    # the burst of 16 prompts prefilled at once: a target between the fused and unfused bf16 TTFTs on 8 x H100
    # (unfused kernels make more passes over the activations); unfused kernels miss it, fused ones meet it
    fused, torch_kernels = ttft_ms("fused"), ttft_ms("torch")
    assert fused < torch_kernels
    target_ms = (fused + torch_kernels) / 2
    target = f"{target_ms:.0f}ms"
    slow = invoke(*H100_70B, "--batch", "16", "--ttft", target)
    assert slow.exit_code == 2 and "at 8 devices: TTFT" in slow.stderr
    r = invoke(*H100_70B, "--batch", "16", "--ttft", target, "--weight-dtype", "fp8", "--kernels", "fused", "--json")
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)["recommendations"]
    assert rec["devices"] == 8 and rec["kernels"] == "fused" and rec["ttft_ms"] < target_ms
    assert (rec["weight_dtype"], rec["act_dtype"], rec["kv_dtype"]) == ("fp8", "bf16", "bf16")
    assert (rec["ttft_kind"], rec["burst_prompts"]) == ("burst", 16)


def test_the_burst_is_labelled_in_the_table():
    r = invoke(*H100_70B, "--batch", "16", "--kernels", "fused")
    assert r.exit_code == 0, r.output
    assert "burst TTFT: 16 prompts prefilled at once" in " ".join(r.stdout.split())
    assert any("burst" in line and "GB per" in line for line in r.stdout.splitlines())  # its column: 'burst TTFT'


def test_serving_plan_json():
    r = invoke(*H100_70B, "--serving", "--prompt", "1024", "--generate", "256", "--tokens-per-s", "20",
               "--ttft", "1s", "--requests-per-s", "10", "--dtype", "auto", "--kernels", "fused", "--json")
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)["recommendations"]
    for key in ("concurrent_requests", "tokens_per_s_per_gpu", "replicas", "usd_per_million", "unit", "kernels",
                "weight_dtype", "act_dtype", "kv_dtype", "ttft_ms", "time_per_output_token_ms", "kv_cache_gb",
                "limited_by", "token_budget", "usd_per_hour", "fleet_devices", "price_source", "price_date",
                "price_kind"):
        assert key in rec, key
    assert rec["unit"] == "tokens" and rec["kernels"] == "fused" and rec["weight_dtype"] in ("bf16", "fp8", "int8")
    assert rec["tokens_per_s_per_request"] >= 20 and rec["ttft_ms"] <= 1000 and rec["token_budget"] == 8192
    assert rec["replicas"] == math.ceil(10 / rec["requests_per_s"])
    assert rec["usd_per_million"] > 0 and rec["price_kind"] == "rental"
    assert rec["usd_per_hour"] == pytest.approx(rec["fleet_devices"] * rec["unit_price_usd"])


def test_serving_table_and_requests_imply_serving():
    r = invoke("--llm", "llama3-8b", "-H", "h100-sxm", "-H", "l4", "--tokens-per-s", "30", "--requests-per-s", "5",
               "--max-batched-tokens", "4096")
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "serving plans (continuous batching)" in text and "4096 tokens per step" in text
    assert "repli-" in text and "TTFT: a prompt arriving alone" in text


@pytest.mark.parametrize("args, message", [
    (("--kernels", "vllm"), "unknown --kernels 'vllm'"),
    (("--weight-dtype", "fp9"), "unknown dtype 'fp9'"),
    (("--dtype", "fp8", "--weight-dtype", "fp8"), "give --dtype or --weight-dtype/--act-dtype, not both"),
    (("--dtype", "tf32"), "unknown dtype 'tf32'"),
    (("--serving", "--batch", "4"), "--batch applies to the burst form"),
    (("--max-batched-tokens", "512",), "--max-batched-tokens applies to --serving"),
    (("--requests-per-s", "0"), "--requests-per-s must be greater than zero"),
    (("--serving", "--prompt", "8000", "--generate", "500"), "exceeds llama3-8b's maximum of 8192 positions"),
])
def test_bad_input_is_one_line_exit_2(args, message):
    r = invoke("--llm", "llama3-8b", "-H", "h100-sxm", *args)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert message in r.stderr
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) <= 2  # the error and a hint
