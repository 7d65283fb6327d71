"""benchmarks/harness/train_measure.py on the CPU: a thin caller of validate.train_step that keeps the study's
plan format and record fields."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.paths import REPO

pytest.importorskip("torch")

SCRIPT = REPO / "benchmarks" / "harness" / "train_measure.py"
# the fields of benchmarks/studies/training-step/h200_train_points.json's records
STUDY_FIELDS = {"model", "batch", "precision", "optimizer", "mode", "device", "loss", "parameters", "build_s",
                "first_step_s", "step_s", "step_spread_s", "forward_s", "backward_s", "optimizer_s", "repeats",
                "param_bytes", "grad_bytes", "optimizer_state_bytes", "base_bytes", "after_steps_bytes",
                "peak_bytes", "peak_reserved_bytes", "loss_scale", "error"}


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("train_measure", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod       # dataclasses look their module up there
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules[spec.name]


def test_the_study_records_keep_their_fields():
    points = json.loads((REPO / "benchmarks/studies/training-step/h200_train_points.json").read_text())["points"]
    assert set(points[0]) == STUDY_FIELDS


@pytest.mark.slow
@pytest.mark.parametrize("loss, what", [("counted", "the sum of the output"),
                                        ("study", "cross-entropy over 10 classes")])
def test_cpu_run_writes_points_and_profiles(harness, tmp_path, loss, what):
    line = "examples/small_cnn.py 2 fp32 adamw,sgd eager profile"
    assert harness.main(["--device", "cpu", "--line", line, "--repeats", "2", "--warmup", "0", "--warmup-s", "0",
                         "--loss", loss, "--out", str(tmp_path)]) == 0
    points = json.loads((tmp_path / "train_points.json").read_text())["points"]
    assert [(p["optimizer"], p["error"]) for p in points] == [("adamw", None), ("sgd", None)]
    assert STUDY_FIELDS <= set(points[0]) and points[0]["loss"].startswith(what)
    assert points[0]["step_s"] > 0 and points[0]["repeats"] == 3   # the kit times 3 steps at least under a budget
    profile = json.loads((tmp_path / "train_profiles.json").read_text())["profiles"]
    assert len(profile) == 1 and {k["part"] for k in profile[0]["kernels"]} >= {"forward", "backward", "optimizer"}


def test_a_point_that_cannot_run_is_recorded(harness, tmp_path):
    # a model file with no checkpointing to enable, in ckpt mode: the error is recorded, the run goes on
    assert harness.main(["--device", "cpu", "--line", "examples/small_cnn.py 2 fp32 adamw ckpt", "--repeats", "2",
                         "--warmup", "0", "--warmup-s", "0", "--out", str(tmp_path)]) == 0
    (point,) = json.loads((tmp_path / "train_points.json").read_text())["points"]
    assert "offers no gradient checkpointing" in point["error"]


@pytest.mark.parametrize("text, message", [
    ("examples/small_cnn.py 2 fp16 adamw eager", "unknown precision 'fp16'"),
    ("examples/small_cnn.py 2 amp lamb eager", "unknown optimizer 'lamb'"),
    ("examples/small_cnn.py 2 amp adamw graph", "unknown mode 'graph'"),
])
def test_bad_plan_lines(harness, text, message):
    with pytest.raises(ValueError, match=message):
        harness.parse_line(text)
