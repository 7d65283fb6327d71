"""`tops-advisor validate --train` on the CPU (plumbing: the step is built, run, timed and lined up with its
prediction) and the pure comparison. GPU runs are in tests/validate/test_train_gpu.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli

torch = pytest.importorskip("torch")

# 16 -> 32 -> 32 -> 4 linear layers; parameters 16*32+32 + 32*32+32 + 32*4+4 = 544 + 1056 + 132 = 1732
TINY = '''
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 4)
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        if self.grad_checkpointing:
            h = torch.utils.checkpoint.checkpoint(self.body, x, use_reentrant=False)
        else:
            h = self.body(x)
        return self.head(h)


def build_model():
    return Tiny()


def example_inputs(batch_size):
    return torch.randn(batch_size, 16)
'''
LOSS = '''

def loss(output, x):
    labels = torch.zeros(output.shape[0], dtype=torch.long, device=output.device)
    return torch.nn.functional.cross_entropy(output, labels)
'''
NO_CHECKPOINTING = '''
import torch
from torch import nn


def build_model():
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def example_inputs(batch_size):
    return torch.randn(batch_size, 8)
'''
PARAMS = 1732


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("train_models")
    files = {"tiny": TINY, "with_loss": TINY + LOSS, "plain": NO_CHECKPOINTING}
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return {name: str(root / f"{name}.py") for name in files}


def cpu(model: str, *extra: str) -> list[str]:
    return ["validate", model, "--train", "--device", "cpu", "--hardware", "h200-sxm", "--repeats", "2",
            "--warmup", "0", *extra]


def run(args):
    return CliRunner().invoke(cli, args)


# --- the command, on the CPU ----------------------------------------------------------------------------
@pytest.mark.slow
def test_cpu_step_is_measured_beside_its_prediction(models):
    res = run(cpu(models["with_loss"], "--batch", "4", "--json"))
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["device"] == "cpu" and out["hardware"] == "h200-sxm" and out["batch"] == 4
    assert "timed on the CPU" in out["note"] and "plumbing" in out["note"]
    m = out["measured"]
    # the measured step backpropagates from the loss the counter counts: the model file's own loss()
    assert m["loss"] == out["loss"] == "the model file's loss()"
    assert m["parameters"] == m["trainable_parameters"] == PARAMS and m["repeats"] == 2
    assert m["param_bytes"] == m["grad_bytes"] == 4 * PARAMS
    # AdamW (foreach): two fp32 moments per parameter and a one-element fp32 step count per tensor (6 tensors)
    assert m["optimizer_state_bytes"] == 2 * 4 * PARAMS + 6 * 4
    assert m["step_spread_s"][0] <= m["step_s"] <= m["step_spread_s"][1]
    assert m["peak_bytes"] is None and out["peak_memory_bytes"]["measured"] is None   # no memory on the CPU
    from tops_advisor.api import calibration_for, load_catalog
    from tops_advisor.counting.training import count_training
    from tops_advisor.train import TrainSetup
    from tops_advisor.train.predict import predict_training

    hw = load_catalog().get("h200-sxm")
    calibration, source = calibration_for(hw)     # the shipped H200 calibration
    assert out["calibration_source"] == (source if calibration is not None else "")
    expected = predict_training(count_training(models["with_loss"], 4, TrainSetup()), hw, calibration)
    for key, seconds, predicted in (("step_time", m["step_s"], expected.step_s),
                                    ("forward", m["forward_s"], expected.forward_s),
                                    ("backward", m["backward_s"], expected.backward_s),
                                    ("optimizer", m["optimizer_s"], expected.optimizer_s)):
        ms = out[f"{key}_ms"]
        assert ms["measured"] == pytest.approx(seconds * 1e3) and ms["predicted"] == pytest.approx(predicted * 1e3)
        assert out["errors"][key] == pytest.approx((predicted - seconds) / seconds)
    assert out["peak_memory_bytes"]["predicted"] == expected.peak_memory_bytes and out["errors"]["peak_memory"] is None
    assert out["prediction"]["memory_parts"]["weights"] == m["param_bytes"]   # no buffers in this model
    assert out["environment"]["device"] == "cpu"


def test_cpu_table_says_it_timed_on_the_cpu(models):
    res = run(cpu(models["tiny"], "--batch", "2"))
    assert res.exit_code == 0, res.output
    for word in ("step", "forward", "backward", "optimizer", "peak memory", "timed on the CPU", "sum of the output"):
        assert word in res.stdout, word
    assert "counting one training step" in res.stderr and "measuring it on" in res.stderr


@pytest.mark.slow
def test_cpu_amp_runs_a_grad_scaler_and_lora_trains_the_adapters_only(models):
    res = run(cpu(models["tiny"], "--batch", "2", "--dtype", "amp", "--lora", "r=2", "--optimizer", "sgd", "--json"))
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)["measured"]
    assert m["setup"] == "amp, sgd, LoRA r=2 on every linear layer but the head"
    # rank-2 adapters on the body's two linear layers (the head is not adapted): 2*(16+32) + 2*(32+32)
    assert m["trainable_parameters"] == 96 + 128 and m["parameters"] == PARAMS + 96 + 128
    assert m["grad_bytes"] == 4 * (96 + 128)
    assert m["loss_scale"] is not None and m["loss_scale"][0] <= 65536.0   # GradScaler's init_scale 2**16


def test_checkpointing_is_turned_on_in_the_measured_model(models):
    from tops_advisor.counting import load_model
    from tops_advisor.train import TrainSetup
    from tops_advisor.validate.train_step import prepare_step

    step = prepare_step(load_model(models["tiny"]), 2, TrainSetup(checkpointing=True), "cpu")
    assert step.model.grad_checkpointing and step.model.training
    step()
    assert len(step.marks) == 1 and all(p.grad is not None for p in step.model.parameters())


@pytest.mark.parametrize("precision, matmul", [("fp32", False), ("tf32", True), ("bf16", False)])
def test_tf32_flags_follow_the_precision_and_are_restored(precision, matmul):
    from tops_advisor.validate.train_step import training_flags

    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    with training_flags(precision):
        assert torch.backends.cuda.matmul.allow_tf32 is matmul and torch.backends.cudnn.allow_tf32 is True
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_bf16_keeps_weights_in_bf16(models):
    from tops_advisor.counting import load_model
    from tops_advisor.train import TrainSetup
    from tops_advisor.validate.train_step import prepare_step

    step = prepare_step(load_model(models["tiny"]), 2, TrainSetup(precision="bf16"), "cpu")
    assert {p.dtype for p in step.model.parameters()} == {torch.bfloat16} and step.args[0].dtype == torch.bfloat16
    assert step.scaler is None and step.autocast is None


# --- bad input and failures -------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    ([], "--train measures one training step: give its batch size"),
    (["--batch", "1,2"], "--train measures one batch size at a time"),
    (["--batch", "2", "--dtype", "fp16"], "unknown training precision 'fp16'"),
    (["--batch", "2", "--optimizer", "lamb"], "unknown optimizer 'lamb'"),
    (["--batch", "2", "--lora", "r=x"], "the rank must be a whole number"),
    (["--batch", "2", "--mode", "graph"], "--train measures eager or compiled training steps"),
    (["--batch", "2", "--per-op"], "--per-op applies to forward passes"),
    (["--batch", "2", "--lora", "r=4,targets=q_proj"], "--lora found no linear layer matching q_proj"),
])
def test_bad_input_is_one_line(models, args, message):
    res = run(cpu(models["tiny"], *args))
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "Traceback" not in res.output


def test_checkpointing_a_model_without_it_is_one_line(models):
    res = run(cpu(models["plain"], "--batch", "2", "--checkpointing"))
    assert res.exit_code == 2 and "offers no gradient checkpointing" in res.stderr


def test_training_options_need_train(models):
    res = run(["validate", models["tiny"], "--device", "cpu", "-H", "h200-sxm", "--optimizer", "sgd"])
    assert res.exit_code == 2 and "--optimizer applies to a training step; add --train" in res.stderr


def test_no_gpu_is_one_line(models, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    res = run(["validate", models["tiny"], "--train", "--batch", "2"])
    assert res.exit_code == 2 and res.stderr.startswith("error: no CUDA GPU found") and "--device cpu" in res.stderr


def test_out_of_memory_is_reported_beside_the_prediction(models, monkeypatch):
    from tops_advisor.validate import train_step

    def oom(step, **kw):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(train_step, "time_step", oom)
    res = run(cpu(models["tiny"], "--batch", "2", "--json"))
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["measured"]["error"] == "out of memory" and out["step_time_ms"]["measured"] is None
    assert out["step_time_ms"]["predicted"] > 0 and out["errors"]["step_time"] is None
    table = run(cpu(models["tiny"], "--batch", "2"))
    assert table.exit_code == 1 and "the step did not run on cpu: out of memory" in table.stdout


def test_model_failing_in_the_step_is_one_line(models, monkeypatch):
    from tops_advisor.validate import train_step

    def fail(step, **kw):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore lines")

    monkeypatch.setattr(train_step, "time_step", fail)
    res = run(cpu(models["tiny"], "--batch", "2"))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "the training step failed on cpu at batch 2: RuntimeError: CUDA error" in res.stderr


# --- the pure comparison --------------------------------------------------------------------------------
def _prediction(step_s=12e-3, parts=(5e-3, 6e-3, 1e-3), peak=3e9):
    from tops_advisor.train.predict import PartPrediction, TrainingPrediction
    from tops_advisor.train.workload import MemoryParts

    memory = MemoryParts(weights=peak / 2, gradients=peak / 4, optimizer_state=0.0, activations=peak / 4,
                         temporaries=0.0, inputs=0.0)
    rows = tuple(PartPrediction(name, t, t, t / 2, 1e9, "compute")
                 for name, t in zip(("forward", "backward", "optimizer"), parts, strict=True))
    return TrainingPrediction(hardware="x", workload="m", batch=8, setup="amp, adamw", mode="eager", step_s=step_s,
                              parts=rows, model_flops=3e9, peak_ops_per_s=1e15, precision="fp16", memory=memory,
                              memory_required_bytes=peak + 1e9, memory_capacity_bytes=80e9)


def _report(**measured):
    from tops_advisor.validate.train_compare import StepMeasurement, TrainValidationReport

    m = StepMeasurement(model="m", batch=8, setup="amp, adamw", device="cuda", **measured)
    return TrainValidationReport(model="m", hardware="x", hardware_name="X", device="cuda", batch=8,
                                 setup="amp, adamw", loss="l", calibration_source="", note="", measured=m,
                                 prediction=_prediction(), environment={})


def test_errors_by_hand():
    r = _report(step_s=10e-3, forward_s=4e-3, backward_s=5e-3, optimizer_s=1e-3, steady_peak_bytes=2.5e9,
                loss_scale=(65536.0, 32768.0))
    # (predicted - measured) / measured: step (12 - 10) / 10, forward (5 - 4) / 4, backward (6 - 5) / 5,
    # optimizer (1 - 1) / 1, peak memory (3.0 - 2.5) / 2.5
    assert r.errors == pytest.approx({"step_time": 0.2, "forward": 0.25, "backward": 0.2, "optimizer": 0.0,
                                      "peak_memory": 0.2})
    assert [row.part for row in r.rows] == ["step", "forward", "backward", "optimizer", "peak memory"]
    assert r.rows[0].bound == "compute" and r.measured.skipped_steps


def test_json_has_milliseconds_and_bytes():
    from tops_advisor.render.json_units import to_json

    out = to_json(_report(step_s=10e-3, forward_s=4e-3, backward_s=5e-3, optimizer_s=1e-3, steady_peak_bytes=2.5e9))
    assert out["step_time_ms"] == pytest.approx({"measured": 10.0, "predicted": 12.0})
    assert out["forward_ms"] == pytest.approx({"measured": 4.0, "predicted": 5.0})
    assert out["backward_ms"] == pytest.approx({"measured": 5.0, "predicted": 6.0})
    assert out["optimizer_ms"] == pytest.approx({"measured": 1.0, "predicted": 1.0})
    assert out["peak_memory_bytes"] == {"measured": 2.5e9, "predicted": 3e9}
    assert out["prediction"]["step_time_s"] == 12e-3 and "hardware_name" not in out
    json.dumps(out)


def test_nothing_measured_gives_no_errors():
    r = _report(error="out of memory")
    assert set(r.errors.values()) == {None} and not r.measured.skipped_steps


def test_compiled_mode_predicts_and_measures_the_compiled_step(models, monkeypatch):
    # the measurement is stubbed (torch.compile on the CPU needs a C++ toolchain): the report must pair the
    # compiled prediction with a step measured under torch.compile
    from tops_advisor.validate import train_step
    from tops_advisor.validate.train_compare import StepMeasurement

    asked = {}

    def fake(source, batch, setup, **kw):
        asked.update(kw)
        return StepMeasurement(model=source.label, batch=batch, setup=setup.describe(), device="cpu", step_s=1e-3,
                               forward_s=3e-4, backward_s=5e-4, optimizer_s=2e-4, repeats=2)

    monkeypatch.setattr(train_step, "measure_training_step", fake)
    res = run(cpu(models["with_loss"], "--batch", "4", "--mode", "compiled", "--json"))
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert asked["compile"] is True
    assert out["prediction"]["mode"] == "compiled"
