"""Small defects: each one through the CLI or the function that fixed it.

- a non-.py model path said 'NoneType' object has no attribute 'loader';
- neighbour imports inside build_model() failed (the file's directory had left sys.path);
- `recommend MODEL --llm X --latency 10ms` silently ignored MODEL and --latency;
- `--top 0` showed every row;
- errors from a model's forward pass were cut mid-word, and --debug hid the model's own frames;
- fvcore was a runtime dependency though only tests use it.
Also the output functions: console width, the progress line, the decode 'compute-bound' note, assumptions.
"""

from __future__ import annotations

import ast
import io
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli
from tops_advisor.errors import InputError, one_line

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MODEL = "examples/small_cnn.py"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_config_json_is_not_a_model_file_and_the_hint_says_what_to_run(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 64}')
    r = run("count", config)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "not a Python model file" in r.stderr
    assert f"tops-advisor llm {config}" in r.stderr and f"hf:{config}" in r.stderr


def test_another_suffix_is_not_a_model_file_either(tmp_path):
    weights = tmp_path / "model.onnx"
    weights.write_bytes(b"\x08\x07")
    r = run("count", weights)
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
    r = run("count", model, "--json")
    assert r.exit_code == 0, r.output
    assert sys.path == before


@pytest.mark.parametrize("args, message", [
    (("recommend", MODEL, "--llm", "llama3-8b", "--latency", "10ms"), "not both"),
    (("recommend", "--llm", "llama3-8b", "--latency", "10ms"), "--latency applies to a MODEL file"),
    (("recommend", "--llm", "llama3-8b", "--dtype", "int8", "--strict"), "--dtype, --strict apply to a MODEL"),
    (("recommend", MODEL, "--tokens-per-s", "30"), "--tokens-per-s applies to --llm"),
    (("recommend", "--ttft", "1s"), "give a MODEL file"),
])
def test_recommend_refuses_options_it_would_ignore(args, message):
    r = run(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2  # the error and its hint


def test_top_must_be_at_least_one():
    from tops_advisor.recommend import Constraints

    for command in (("recommend", MODEL), ("analyze", MODEL, "-H", "h200")):
        r = run(*command, "--top", "0")
        assert r.exit_code == 2 and "0 is not in the range x>=1" in r.stderr
    with pytest.raises(InputError, match="--top must be at least 1"):
        Constraints(top=0)


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
    r = run("count", model)
    assert r.exit_code == 2 and "Traceback" not in r.output
    first = r.stderr.splitlines()[0]
    assert "the model says: shapes do not match" in first and first.endswith("match ...")
    assert "--debug" in r.stderr
    r = run("--debug", "count", model)
    assert r.exception is not None
    shown = "".join(traceback.format_exception(*r.exc_info))
    assert f'File "{model}", line 5, in forward' in shown
    assert "shapes do not match " * 30 in shown  # the whole message


def test_fvcore_is_not_a_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("fvcore") for d in project["dependencies"])
    assert any(d.startswith("fvcore") for d in project["optional-dependencies"]["dev"])
    for path in (ROOT / "tops_advisor").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "fvcore" for n in names), path


def test_console_width_policy():
    from tops_advisor.render.console import PIPED_WIDTH_COLUMNS, output_width

    assert output_width(io.StringIO(), environ={"COLUMNS": "80"}) == 80
    assert output_width(io.StringIO(), environ={}) == PIPED_WIDTH_COLUMNS  # piped: not rich's 80
    assert output_width(io.StringIO(), environ={"COLUMNS": "zero"}) == PIPED_WIDTH_COLUMNS


def test_progress_is_silent_off_a_terminal_and_with_json():
    from tops_advisor.render.progress import progress

    stream = io.StringIO()
    with progress("counting a model", stream=stream):
        pass
    with progress("counting a model", enabled=False, stream=stream):
        pass
    assert stream.getvalue() == ""
    r = run("recommend", MODEL, "--latency", "100ms", "--top", "1", "--json")
    assert r.exit_code == 0 and r.stderr == ""


def test_progress_shows_on_a_terminal_and_clears_itself(monkeypatch):
    from tops_advisor.render.progress import progress

    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: treat the stream as a terminal
    stream = io.StringIO()
    with progress("counting model.py at batch 1", stream=stream):
        pass
    shown = stream.getvalue()
    assert "counting model.py at batch 1" in shown
    assert shown.endswith("\x1b[2K")  # the line is erased at the end: nothing stays on the terminal


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


def test_assumptions_about_precisions_not_used_are_left_out():
    from tops_advisor.render.analyze import relevant_assumptions

    pred = SimpleNamespace(ops=[SimpleNamespace(precision="fp16"), SimpleNamespace(precision="vector")],
                           assumptions=("mode graph: CUDA graph replay, no host launch cost",
                                        "not measured, scaled by the median measured/datasheet ratio 0.79: fp64",
                                        "not measured, scaled by the median ratio 0.8: fp16, tf32"))
    assert relevant_assumptions(pred) == ["mode graph: CUDA graph replay, no host launch cost",
                                          "not measured, scaled by the median ratio 0.8: fp16"]


def test_recommend_builds_its_notes_and_error_bands_in_the_library():
    """The CLI used to append to the result's notes and add the bands to the JSON: now the library does both,
    and the result cannot be changed after the fact."""
    from tops_advisor.catalog import load_catalog
    from tops_advisor.recommend import Constraints, recommend
    from tops_advisor.workload import OpRecord, Workload

    def at(batch, dtype):
        op = OpRecord(name="aten.mm", kind="matmul", module="fc", flops=2e9 * batch, bytes_read=4e6 * batch,
                      bytes_written=1e6 * batch, dtype=dtype)
        return Workload(name="toy", batch=batch, dtype=dtype, ops=(op,), unsupported_ops={"aten.fancy_op": 2})

    res = recommend(at, list(load_catalog(())), Constraints(max_batch=2, top=3))
    assert "unsupported operators counted as zero: aten.fancy_op x2" in res.notes
    assert len(res.recommendations) == 3
    assert all(r.expected_error and r.expected_error["text"] for r in res.recommendations)
    assert isinstance(res.notes, tuple)
    assert res.model_dump()["notes"] == list(res.notes)


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
