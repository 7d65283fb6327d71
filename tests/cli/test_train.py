"""`tops-advisor train` through click's CliRunner: the table, --json keys, several GPUs, and bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.paths import FIXTURES
from tops_advisor.cli import cli

TRAIN = FIXTURES / "train"


def run(*args):
    return CliRunner().invoke(cli, ["train", *map(str, args)])


def test_table_names_the_parts_and_memory():
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", "--batch", "8")
    assert r.exit_code == 0, r.output
    for word in ("forward", "backward", "optimizer", "step", "MFU", "memory at the peak", "optimizer state"):
        assert word in r.output


def test_json_keys():
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", "--batch", "8", "--dtype", "bf16", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("step_time_ms", "forward_ms", "backward_ms", "optimizer_ms", "peak_memory_bytes", "memory_parts",
                "fits_memory", "samples_per_s", "mfu"):
        assert key in d
    assert d["step_time_ms"] > 0 and d["fits_memory"] is True
    assert d["memory_parts"]["weights"] > 0


def test_several_gpus_add_a_plan():
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", "--batch", "8", "--devices", "4", "--strategy", "fsdp",
            "--json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)["plan"]
    assert plan["strategy"] == "fsdp" and plan["devices"] == 4 and plan["global_batch"] == 32


@pytest.mark.parametrize(("args", "message"), [
    (["--optimizer", "adamx"], "unknown optimizer 'adamx'"),
    (["--dtype", "fp12"], "unknown training precision"),
    (["--lora", "r=0"], "--lora"),
    (["--strategy", "zero9", "--devices", "2"], "strategy"),
])
def test_bad_options_are_one_line(args, message):
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", *args)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_nothing_to_train_on_is_one_line():
    r = run(TRAIN / "no_linear.py", "-H", "h200-sxm")
    assert r.exit_code == 2 and "no floating-point tensor" in r.output


def test_a_step_that_does_not_fit_is_refused():
    r = run(TRAIN / "tiny_mlp.py", "-H", "jetson-orin-nano-8gb", "--batch", "100000000")
    assert r.exit_code == 2 and "needs" in r.output and "at its peak" in r.output


def test_an_llm_config_trains_from_its_preset():
    r = run("llama3-8b", "-H", "h100-sxm", "--batch", "1", "--seq", "512", "--lora", "r=16", "--dtype", "bf16",
            "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["trainable_params"] < d["frozen_params"] / 100    # adapters only
    assert d["step_time_ms"] > 0 and d["fits_memory"] is True


def recommend(*args):
    return CliRunner().invoke(cli, ["recommend", *map(str, args)])


def test_recommend_train_ranks_devices_with_targets():
    r = recommend(TRAIN / "tiny_mlp.py", "--train", "--batch", "64", "--rank-by", "throughput", "--max-time", "1h",
                  "--samples", "1e6", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    rates = [x["samples_per_s"] for x in d["recommendations"]]
    assert rates == sorted(rates, reverse=True)
    assert all(x["time_to_train_s"] == pytest.approx(1e6 / x["samples_per_s"]) for x in d["recommendations"])


def test_recommend_train_on_several_gpus():
    r = recommend(TRAIN / "tiny_mlp.py", "--train", "--batch", "64", "--devices", "8", "--strategy", "ddp",
                  "--hardware", "h200-sxm", "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)["recommendations"][0]
    assert rec["devices"] == 8 and rec["plan"]["global_batch"] == 512


@pytest.mark.parametrize(("args", "message"), [
    (["--optimizer", "sgd"], "applies to --train"),
    (["--train"], "--train needs --batch"),
    (["--train", "--batch", "8", "--max-time", "12h"], "--max-time and --samples go together"),
    (["--train", "--batch", "8", "--max-time", "soon", "--samples", "10"], "--max-time 'soon' needs a positive number"),
])
def test_recommend_train_bad_input(args, message):
    r = recommend(TRAIN / "tiny_mlp.py", *args)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_recommend_train_by_cost_prices_the_run():
    r = recommend(TRAIN / "tiny_mlp.py", "--train", "--batch", "64", "--rank-by", "cost", "--max-time", "1h",
                  "--samples", "1e7", "--json")
    assert r.exit_code == 0, r.output
    recs = json.loads(r.stdout)["recommendations"]
    per_million = [x["usd_per_million"] for x in recs]
    assert per_million == sorted(per_million) and all(p is not None for p in per_million)
    for x in recs:   # the run costs the hours it takes at the hourly price
        assert x["usd_per_run"] == pytest.approx(x["usd_per_hour"] * x["time_to_train_s"] / 3600)


@pytest.mark.slow
def test_a_transformers_config_trains_by_name(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
                               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                               "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 128}))
    r = run(f"hf:{cfg}", "-H", "h200-sxm", "--batch", "2", "--seq", "32", "--dtype", "amp-bf16", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert "per token" in d["loss"] and d["tokens_per_s"] > 0


def test_recommend_train_takes_an_llm_preset_as_train_does():
    """An LLM preset is built from its config at --seq, and FSDP wraps its decoder layers: the ranked H100's
    step is the one `train` predicts for the same run."""
    args = ("--batch", "1", "--seq", "512", "--lora", "r=16", "--dtype", "bf16", "--devices", "2",
            "--strategy", "fsdp", "--json")
    r = recommend("llama3-8b", "--train", "--hardware", "h100-sxm", *args)
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)["recommendations"][0]
    t = run("llama3-8b", "-H", "h100-sxm", *args)
    assert t.exit_code == 0, t.output
    assert rec["plan"]["step_ms"] == pytest.approx(json.loads(t.stdout)["plan"]["step_ms"], rel=1e-9)
    assert rec["step_time_ms"] == pytest.approx(rec["plan"]["step_ms"], rel=1e-9)


@pytest.mark.parametrize("command", [
    ["analyze", "llama3-8b", "-H", "h100-sxm"], ["count", "llama3-8b"],
])
def test_an_llm_preset_where_a_model_file_goes_names_the_commands_that_take_it(command):
    r = CliRunner().invoke(cli, command)
    assert r.exit_code == 2 and "llama3-8b is an LLM preset, not a model file" in r.output
    assert "tops-advisor llm llama3-8b" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("command", [
    ["train", "llama3-8", "-H", "h100-sxm", "--batch", "2"], ["recommend", "llama3-8", "--train", "--batch", "2"],
    ["analyze", "llama3-8", "-H", "h100-sxm"],
])
def test_a_mistyped_preset_gets_the_closest_names(command):
    r = CliRunner().invoke(cli, command)
    assert r.exit_code == 2 and "did you mean: llama3-8b" in r.output and "Traceback" not in r.output


def test_compiled_mode_predicts_inductors_step():
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", "--batch", "8", "--mode", "compiled", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["mode"] == "compiled" and d["step_time_ms"] > 0
    assert any("torch.compile(model)" in a for a in d["assumptions"])


def test_compiled_mode_refuses_an_llm_preset_in_one_line():
    r = run("llama2-7b", "-H", "h200-sxm", "--batch", "1", "--seq", "128", "--mode", "compiled")
    assert r.exit_code == 2 and "--mode compiled needs the model itself" in r.output
    assert "Traceback" not in r.output


def test_channels_last_is_in_the_setup():
    r = run(TRAIN / "tiny_mlp.py", "-H", "h200-sxm", "--batch", "8", "--channels-last", "--json")
    assert r.exit_code == 0, r.output
    assert "channels-last" in json.loads(r.stdout)["setup"]
