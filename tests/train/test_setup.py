"""Training setups parsed from the names people type; one clear error for anything else."""

from __future__ import annotations

import pytest

from tops_advisor.errors import InputError
from tops_advisor.train import LoraSpec, TrainSetup, parse_lora, parse_optimizer, parse_train_precision


@pytest.mark.parametrize(("text", "name"), [("amp", "amp"), ("AMP-BF16", "amp-bf16"), ("bfloat16", "bf16"),
                                            ("float32", "fp32"), ("tf32", "tf32")])
def test_precisions(text, name):
    assert parse_train_precision(text) == name


def test_unknown_precision_names_the_choices():
    with pytest.raises(InputError, match="expected one of fp32, tf32, bf16, amp, amp-bf16"):
        parse_train_precision("fp12")


@pytest.mark.parametrize(("text", "name"), [("adamw", "adamw"), ("AdamW-Fused", "adamw-fused"),
                                            ("adamw8bit", "adamw-8bit"), ("sgd", "sgd")])
def test_optimizers(text, name):
    assert parse_optimizer(text) == name


def test_unknown_optimizer_suggests():
    with pytest.raises(InputError) as exc:
        parse_optimizer("adamx")
    assert "adam" in exc.value.hint


def test_lora_forms():
    assert parse_lora("r=16") == LoraSpec(16, 32.0, ())
    assert parse_lora("8") == LoraSpec(8, 16.0, ())
    assert parse_lora("r=4,alpha=8,targets=q_proj+v_proj") == LoraSpec(4, 8.0, ("q_proj", "v_proj"))


@pytest.mark.parametrize("text", ["r=0", "r=x", "rank=4,beta=2", "r=-2"])
def test_bad_lora(text):
    with pytest.raises(InputError, match="--lora"):
        parse_lora(text)


def test_setup_flags():
    s = TrainSetup("amp", "adamw", checkpointing=True, lora=LoraSpec(16, 32.0))
    assert s.autocast and s.grad_scaler
    assert not TrainSetup("amp-bf16").grad_scaler
    assert "gradient checkpointing" in s.describe() and "LoRA r=16" in s.describe()
