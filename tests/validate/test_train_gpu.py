"""GPU-only tests of `tops-advisor validate --train`: skipped without CUDA. What they gave on a real card is
recorded in docs/training.md ("Measuring a training step") with the command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def validate_train(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["validate", "examples/small_cnn.py", "--train", "--repeats", "5", "--warmup", "2",
                                   "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_amp_step_is_timed_part_by_part_with_its_memory():
    out = validate_train("--batch", "32", "--dtype", "amp")
    m = out["measured"]
    assert out["device"] == "cuda" and out["hardware"] and out["environment"]["gpu"] == torch.cuda.get_device_name(0)
    assert m["step_spread_s"][0] <= m["step_s"] <= m["step_spread_s"][1]
    # the parts are spans between events inside one step: they add up to the step less zero_grad and the gap
    # between steps (never more than the slowest step)
    assert 0 < m["forward_s"] + m["backward_s"] + m["optimizer_s"] <= m["step_spread_s"][1]
    assert m["loss_scale"] is not None                                    # a GradScaler ran
    # fp32 weights and gradients; AdamW's two fp32 moments (the step counts stay on the host for foreach)
    assert m["param_bytes"] == m["grad_bytes"] and m["optimizer_state_bytes"] >= 2 * m["param_bytes"]
    held = m["param_bytes"] + m["grad_bytes"] + m["optimizer_state_bytes"]
    assert m["after_steps_bytes"] >= held and m["steady_peak_bytes"] >= m["after_steps_bytes"]
    assert m["peak_bytes"] >= m["steady_peak_bytes"]
    assert out["peak_memory_bytes"]["measured"] == m["steady_peak_bytes"]
    assert out["errors"]["peak_memory"] == pytest.approx(
        (out["peak_memory_bytes"]["predicted"] - m["steady_peak_bytes"]) / m["steady_peak_bytes"])


def test_bf16_weights_and_fused_adamw():
    out = validate_train("--batch", "8", "--dtype", "bf16", "--optimizer", "adamw-fused")
    m = out["measured"]
    assert m["setup"] == "bf16, adamw-fused" and m["loss_scale"] is None
    # bf16 weights and gradients: 2 bytes per parameter
    assert m["param_bytes"] == m["grad_bytes"] == 2 * m["parameters"]
    assert out["step_time_ms"]["measured"] > 0 and out["step_time_ms"]["predicted"] > 0
