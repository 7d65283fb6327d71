"""Gradient checkpointing's saved-tensor hooks in the eager host model: one pass per recomputed operator in the
forward (spread over the forward's launching operators), two on each recomputed operator in the backward."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tops_advisor.catalog import load_catalog
from tops_advisor.llm import training_workload
from tops_advisor.roofline import device_perf
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.defaults.base import Default
from tops_advisor.train import TrainSetup
from tops_advisor.train.defaults import TRAINING_DEFAULTS
from tops_advisor.train.predict import _checkpoint_hooks_s, predict_training


def test_hooks_are_one_forward_pass_and_two_backward_passes_per_recomputed_operator():
    forward = np.array([True, True, True, True, False, False, False, False])
    backward = np.array([False, False, False, False, True, True, False, False])
    hooks = _checkpoint_hooks_s(forward, backward, 2, 1e-6)
    # 2 recomputed operators: 2 us over the 4 forward operators (0.5 us each), 4 us over the 2 backward ones
    assert hooks.tolist() == pytest.approx([0.5e-6] * 4 + [2e-6, 2e-6, 0.0, 0.0])
    assert hooks.sum() == pytest.approx(3 * 2 * 1e-6)
    assert not _checkpoint_hooks_s(forward, backward, 0, 1e-6).any()


def _host_s(checkpointing: bool, hook_s: float) -> float:
    tw = training_workload("llama3-8b", batch=1, seq=128, setup=TrainSetup("bf16", checkpointing=checkpointing))
    td = replace(TRAINING_DEFAULTS, checkpoint_hook_s=Default(hook_s, "test"))
    return sum(p.host_s for p in predict_training(tw, load_catalog().get("h200-sxm"), training_defaults=td).parts)


def test_only_a_checkpointed_step_pays_the_hooks():
    """Without checkpointing the hook cost changes nothing; with it the step's host time grows by three hook
    passes per recomputed operator (the LLM builder counts the layers' recompute)."""
    tw = training_workload("llama3-8b", batch=1, seq=128, setup=TrainSetup("bf16", checkpointing=True))
    assert tw.recomputed_ops > 0
    assert _host_s(False, 0.0) == pytest.approx(_host_s(False, 1e-3), rel=1e-12)
    scale = device_perf(load_catalog().get("h200-sxm")).eager_op_s / DEFAULTS.eager_op_s.value
    grown = _host_s(True, 1e-3) - _host_s(True, 0.0)
    assert grown == pytest.approx(3 * tw.recomputed_ops * 1e-3 * scale, rel=1e-9)


def test_a_counted_checkpointed_model_pays_three_hook_passes_per_recomputed_operator():
    """A model file that checkpoints its own block: the counter finds the recompute, and the step's host time
    grows by exactly three hook passes per recomputed operator (the backward's engine operators included)."""
    from tests.paths import FIXTURES
    from tops_advisor.counting.training import count_training

    tw = count_training(FIXTURES / "train" / "checkpointed_mlp.py", 8, TrainSetup("fp32"))
    # the block's first linear, norm and GELU: non-reentrant checkpointing stops once the last tensor the backward
    # needs (the last linear's input) is recomputed, so that linear does not run again
    assert tw.recomputed_ops == 3
    hw = load_catalog().get("h200-sxm")

    def host(hook_s: float) -> float:
        td = replace(TRAINING_DEFAULTS, checkpoint_hook_s=Default(hook_s, "test"))
        return sum(p.host_s for p in predict_training(tw, hw, training_defaults=td).parts)

    scale = device_perf(hw).eager_op_s / DEFAULTS.eager_op_s.value
    assert host(1e-3) - host(0.0) == pytest.approx(3 * tw.recomputed_ops * 1e-3 * scale, rel=1e-9)
