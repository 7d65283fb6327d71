"""`tops-advisor count` through click's CliRunner: good files, --json, --strict, and every bad input."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.paths import EXAMPLES
from tops_advisor.cli import cli
from tops_advisor.errors import one_line, with_location

GOOD = """
import torch
from torch import nn

def build_model():
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())

def example_inputs(batch_size):
    return torch.randn(batch_size, 8)
"""


def run(*args):
    return CliRunner().invoke(cli, ["count", *map(str, args)])


def write(tmp_path: Path, text: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    assert all(line.startswith("hint: ") for line in lines[1:])
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_table_for_an_example():
    result = run(EXAMPLES / "small_cnn.py", "--batch", "4", "--dtype", "fp16")
    assert result.exit_code == 0, result.output
    for text in ("small_cnn: batch 4, fp16", "features.0", "head", "total", "operations", "intensity"):
        assert text in result.stdout


def test_per_op_table():
    result = run(EXAMPLES / "small_cnn.py", "--per-op")
    assert result.exit_code == 0, result.output
    assert "convolution" in result.stdout and "native_batch_norm" in result.stdout


def test_json_has_totals_and_ops():
    result = run(EXAMPLES / "resnet50.py", "--batch", "1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("flops", "bytes", "params", "unsupported_ops", "ops"):
        assert key in data
    assert data["params"] == 25_557_032 and data["unsupported_ops"] == {}
    assert data["flops"] == pytest.approx(sum(op["flops"] for op in data["ops"]))
    assert data["ops"][0]["name"] == "aten.convolution" and data["ops"][0]["module"] == "conv1"
    assert data["ops"][0]["gemm"] == {"m": 112 * 112, "n": 64, "k": 3 * 7 * 7, "batch": 1, "window": 7 * 7,
                                     "spatial_dims": 2, "stride": 2, "dilation": 1,
                                     "plane": 112 * 112}


def test_unsupported_ops_warn_and_strict_fails(tmp_path):
    path = write(tmp_path, GOOD.replace("nn.ReLU()", "Bessel()").replace(
        "def build_model", "class Bessel(nn.Module):\n    def forward(self, x):\n"
        "        return torch.special.bessel_j0(x)\n\ndef build_model"))
    result = run(path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["unsupported_ops"] == {"aten.special_bessel_j0": 1}
    assert "warning: no counting formula for aten.special_bessel_j0" in result.stderr
    assert_one_line_error(run(path, "--strict"), str(path), "aten.special_bessel_j0")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.py"
    assert_one_line_error(run(path), str(path), "no such file")


def test_directory(tmp_path):
    assert_one_line_error(run(tmp_path), str(tmp_path), "directory")


def test_syntax_error(tmp_path):
    path = write(tmp_path, "def build_model(:\n    pass\n")
    assert_one_line_error(run(path), f"{path}:1", "syntax error")


def test_import_error(tmp_path):
    path = write(tmp_path, "import not_a_module_anywhere\n")
    assert_one_line_error(run(path), str(path), "ModuleNotFoundError")


@pytest.mark.parametrize("missing", ["build_model", "example_inputs"])
def test_missing_function(tmp_path, missing):
    path = write(tmp_path, GOOD.replace(f"def {missing}", "def something_else"))
    assert_one_line_error(run(path), str(path), f"defines no {missing}()")


def test_misspelt_function_gets_a_suggestion(tmp_path):
    path = write(tmp_path, GOOD.replace("def build_model", "def build_modle"))
    result = run(path)
    assert_one_line_error(result, "defines no build_model()")
    assert "did you mean: build_modle" in result.stderr


def test_build_model_raises(tmp_path):
    path = write(tmp_path, GOOD.replace("    return nn.Sequential", "    raise RuntimeError('boom')\n"
                                                                   "    return nn.Sequential"))
    assert_one_line_error(run(path), str(path), "build_model() raised RuntimeError: boom")


def test_build_model_returns_something_else(tmp_path):
    path = write(tmp_path, GOOD.replace("return nn.Sequential(nn.Linear(8, 4), nn.ReLU())", "return 42"))
    assert_one_line_error(run(path), str(path), "build_model() returned int")


def test_example_inputs_raises(tmp_path):
    path = write(tmp_path, GOOD.replace("return torch.randn(batch_size, 8)", "return 1 / 0"))
    assert_one_line_error(run(path), str(path), "example_inputs(1) raised ZeroDivisionError")


def test_forward_fails(tmp_path):
    path = write(tmp_path, GOOD.replace("torch.randn(batch_size, 8)", "torch.randn(batch_size, 7)"))
    result = run(path, "--batch", "3")
    assert_one_line_error(result, str(path), "forward pass failed on example_inputs(3)", "RuntimeError")


@pytest.mark.parametrize("batch", ["0", "-4"])
def test_non_positive_batch(tmp_path, batch):
    path = write(tmp_path, GOOD)
    assert_one_line_error(run(path, "--batch", batch), str(path), "batch must be a positive integer")


def test_unknown_dtype(tmp_path):
    path = write(tmp_path, GOOD)
    result = run(path, "--dtype", "fp17")
    assert_one_line_error(result, str(path), "unknown dtype 'fp17'")
    assert "hint: did you mean" in result.stderr


def test_good_file_in_tmp(tmp_path):
    result = run(write(tmp_path, GOOD), "--batch", "5", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # addmm 2 * 5 * 4 * 8 = 320 operations, relu 5 * 4 = 20
    assert data["flops"] == 340 and data["batch"] == 5 and data["params"] == 8 * 4 + 4


def test_model_that_cannot_build_on_meta_is_built_for_real(tmp_path):
    """build_model() that reads weight values fails on the meta device: it is built on the CPU and counted
    through fake tensors instead."""
    path = write(tmp_path, GOOD.replace(
        "    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())",
        "    m = nn.Sequential(nn.Linear(8, 4), nn.ReLU())\n"
        "    assert m[0].weight.abs().sum().item() > 0\n"
        "    return m"))
    result = run(path, "--batch", "5", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["flops"] == 340  # 2 * 5 * 4 * 8 + 5 * 4


def test_a_forward_that_cannot_run_on_meta_is_counted_on_the_cpu_and_says_so(tmp_path):
    """A CPU tensor added to the output of a meta model fails on the meta device: built again on the CPU and
    counted through fake tensors, with a note of that kind."""
    from tops_advisor.counting import count
    from tops_advisor.workload import NoteKind

    path = write(tmp_path, GOOD.replace("    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())",
                                        "    return nn.Sequential(nn.Linear(8, 4), AddsCpuOnes())").replace(
        "import torch\n", "import torch\n\n\nclass AddsCpuOnes(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x + torch.ones(4)\n", 1))
    w = count(path, batch=5)
    assert w.flops == 340                                    # addmm 2 * 5 * 4 * 8 = 320, add 5 * 4 = 20
    assert [n.kind for n in w.notes] == [NoteKind.COUNTED_ON_CPU]


def test_depth_groups_module_paths():
    deep = run(EXAMPLES / "resnet50.py", "--depth", "3")
    shallow = run(EXAMPLES / "resnet50.py", "--depth", "1")
    assert deep.exit_code == shallow.exit_code == 0
    assert "layer1.0.conv1" in deep.stdout and "layer1.0.conv1" not in shallow.stdout
    assert "layer1 " in shallow.stdout


# --- model files that are not one, neighbour imports, a failing forward pass -----------------------------
def run_cli(*args):
    """Any command (``run`` above is ``count``'s)."""
    return CliRunner().invoke(cli, [str(a) for a in args])



def test_a_config_json_is_not_a_model_file_and_the_hint_says_what_to_run(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 64}')
    r = run_cli("count", config)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "not a Python model file" in r.stderr
    assert f"tops-advisor llm {config}" in r.stderr and f"hf:{config}" in r.stderr



def test_another_suffix_is_not_a_model_file_either(tmp_path):
    weights = tmp_path / "model.onnx"
    weights.write_bytes(b"\x08\x07")
    r = run_cli("count", weights)
    assert r.exit_code == 2 and "not a Python model file" in r.stderr and "build_model()" in r.stderr



def _neighbour_files(tmp_path: Path) -> Path:
    (tmp_path / "neighbour_blocks.py").write_text(
        "import torch\n\ndef block():\n    return torch.nn.Linear(8, 4)\n")
    model = tmp_path / "uses_a_neighbour.py"
    model.write_text("import torch\n\n"
                     "def build_model():\n    import neighbour_blocks  # imported while building, not at import\n"
                     "    return neighbour_blocks.block()\n\n"
                     "def example_inputs(batch_size):\n    return torch.randn(batch_size, 8)\n")
    return model



def test_neighbour_imports_inside_build_model_work_and_sys_path_is_restored(tmp_path):
    from tops_advisor.counting.model_file import load_model_file

    model = _neighbour_files(tmp_path)
    before = list(sys.path)
    loaded = load_model_file(model)
    assert sys.path == before
    assert isinstance(loaded.build(meta=False), __import__("torch").nn.Linear)
    assert sys.path == before
    r = run_cli("count", model, "--json")
    assert r.exit_code == 0, r.output
    assert sys.path == before



def test_neighbour_imports_inside_forward_work_while_counting(tmp_path):
    (tmp_path / "act_helpers.py").write_text("import torch\n\ndef act(x):\n    return torch.relu(x)\n")
    model = tmp_path / "imports_in_forward.py"
    model.write_text("import torch\n\n"
                     "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                     "        self.a = torch.nn.Linear(8, 4)\n\n"
                     "    def forward(self, x):\n        import act_helpers  # imported in forward, while counting\n"
                     "        return act_helpers.act(self.a(x))\n\n"
                     "def build_model():\n    return M()\n\n"
                     "def example_inputs(batch_size):\n    return torch.randn(batch_size, 8)\n")
    before = list(sys.path)
    result = CliRunner().invoke(cli, ["count", str(model), "--json"])
    assert result.exit_code == 0, result.output
    assert sys.path == before



def test_one_line_cuts_at_a_word_boundary():
    words = "mat1 and mat2 shapes cannot be multiplied (1x2048 and 1024x1000)"
    out = one_line(RuntimeError(" ".join([words] * 10)), limit=120)
    assert len(out) <= 120 and out.endswith(" ...")
    kept = out.removesuffix(" ...").removeprefix("RuntimeError: ").split(" ")
    assert all(w in words.split(" ") for w in kept)  # no word cut in two
    assert one_line(ValueError("first line\nsecond line")) == "ValueError: first line ..."
    assert one_line(ValueError("short")) == "ValueError: short"



def _failing_model(tmp_path: Path) -> Path:
    model = tmp_path / "fails_in_forward.py"
    model.write_text("import torch\n\n"
                     "class M(torch.nn.Module):\n"
                     "    def forward(self, x):\n"
                     "        raise RuntimeError('the model says: ' + 'shapes do not match ' * 30)\n\n"
                     "def build_model():\n    return M()\n\n"
                     "def example_inputs(batch_size):\n    return torch.randn(batch_size, 4)\n")
    return model



def test_a_forward_failure_is_one_line_and_debug_shows_the_models_frames(tmp_path):
    model = _failing_model(tmp_path)
    r = run_cli("count", model)
    assert r.exit_code == 2 and "Traceback" not in r.output
    first = r.stderr.splitlines()[0]
    assert "the model says: shapes do not match" in first and first.endswith("match ...")
    assert "--debug" in r.stderr
    r = run_cli("--debug", "count", model)
    assert r.exception is not None
    shown = "".join(traceback.format_exception(*r.exc_info))
    assert f'File "{model}", line 5, in forward' in shown
    assert "shapes do not match " * 30 in shown  # the whole message


BAD_MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x)
        return torch.nn.functional.conv2d(y, torch.zeros(4, 3, 3, 3))


def build_model():
    return Net()


def example_inputs(batch):
    return (torch.randn(batch, 3, 32, 32),)
'''


def test_the_error_line_names_the_users_file_and_line(tmp_path):
    model = write(tmp_path, BAD_MODEL, "mymodel.py")
    r = run_cli("count", model)
    assert r.exit_code == 2 and "Traceback" not in r.output
    # line 12 of BAD_MODEL is the conv2d with 3 input channels on an 8-channel tensor
    assert r.stderr.splitlines()[0] == (f"error: {model}:12: the forward pass failed on example_inputs(1): "
                                        "RuntimeError: Invalid channel dimensions")


def test_debug_shows_the_users_frames_first(tmp_path):
    model = write(tmp_path, BAD_MODEL, "mymodel.py")
    r = run_cli("--debug", "count", model)
    assert r.exception is not None
    lines = r.stderr.splitlines()
    assert lines[0] == "in your code (outermost first):"
    assert lines[1].startswith(f"  {model}:12, in forward: return torch.nn.functional.conv2d(")
    assert lines[2] == "  RuntimeError: Invalid channel dimensions"


def test_a_neighbour_module_that_raises_is_named(tmp_path):
    (tmp_path / "layers.py").write_text("def broken(x):\n    raise ValueError('bad shape')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import layers

        layers.broken(1)
    except ValueError as exc:
        text = with_location(f"{tmp_path / 'm.py'}: the forward pass failed: ValueError: bad shape", exc)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("layers", None)
    assert text.endswith(f"(raised at {tmp_path / 'layers.py'}:2, in broken)")


def test_seq_sets_the_tokens_of_a_model_file_that_takes_a_sequence(tmp_path):
    model = tmp_path / "tokens.py"
    model.write_text("import torch\n\ndef build_model():\n    return torch.nn.Linear(8, 4)\n\n"
                     "def example_inputs(batch_size, sequence=3):\n    return torch.randn(batch_size, sequence, 8)\n")
    r = run_cli("count", model, "--batch", "2", "--seq", "5", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["flops"] == 2 * (2 * 5) * 8 * 4   # 2 ops x 10 tokens x 8 in x 4 out
    fixed = tmp_path / "fixed.py"
    fixed.write_text("import torch\n\ndef build_model():\n    return torch.nn.Linear(8, 4)\n\n"
                     "def example_inputs(batch_size):\n    return torch.randn(batch_size, 8)\n")
    r = run_cli("count", fixed, "--seq", "5")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "example_inputs() takes no sequence length" in r.stderr
