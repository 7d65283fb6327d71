"""Bad input fails at once with one line that says what was wrong: a batch below 1 through the API, a
mistyped hf: path (no hub retries), a model file whose own code raises (its file and line named)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from tests.paths import REPO
from tops_advisor.cli import cli
from tops_advisor.errors import InputError, ModelFileError, check_batch, with_location

SMALL = str(REPO / "examples" / "small_cnn.py")
BATCH_LINE = "--batch must be a positive integer, got"


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


# --- a batch below 1 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [0, -4, True, 2.5])
def test_check_batch_refuses_what_is_not_a_batch(batch):
    with pytest.raises(InputError, match=BATCH_LINE):
        check_batch(batch)


@pytest.fixture(scope="module")
def costs():
    from tops_advisor.api import ModelCosts

    return ModelCosts(SMALL, base_dtype="fp32")


@pytest.mark.parametrize("batch", [0, -4])
def test_model_costs_at_refuses_a_batch_below_one(costs, batch):
    # before: batch -4 extrapolated to a negative workload (a throughput of -5,488/s), batch 0 to 0.75 ms
    with pytest.raises(InputError) as info:
        costs.at(batch=batch)
    assert str(info.value) == f"{BATCH_LINE} {batch}"


def test_model_costs_refuses_bad_anchor_batches():
    from tops_advisor.api import ModelCosts

    with pytest.raises(InputError, match="batches must be a positive integer, got 0"):
        ModelCosts(SMALL, batches=(0, 1))


def test_the_cli_gives_the_same_line_as_the_api():
    r = run("analyze", SMALL, "-H", "h200-sxm", "-b", "-4")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.splitlines()[0] == f"error: {BATCH_LINE} -4"


def test_the_llm_api_refuses_a_batch_and_context_below_one():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.errors import TopsAdvisorError
    from tops_advisor.llm import analyze_llm, load_config

    cfg, hw = load_config("llama3-8b"), load_catalog().get("h200-sxm")
    for kwargs in ({"batch": 0}, {"batch": -4}, {"context": 0}):
        with pytest.raises(TopsAdvisorError, match="must be a positive"):
            analyze_llm(cfg, hw, **kwargs)


# --- hf: specs that look like paths, and the hub when offline --------------------------------------------------

def test_a_missing_path_fails_at_once_and_suggests_the_nearby_directory(tmp_path):
    (tmp_path / "models" / "bert").mkdir(parents=True)
    (tmp_path / "models" / "bert" / "config.json").write_text("{}")
    from tops_advisor.counting import load_model

    with pytest.raises(ModelFileError) as info:
        load_model(f"hf:{tmp_path}/modles/bert")
    assert str(info.value) == f"hf:{tmp_path}/modles/bert: no such file or directory"
    assert info.value.hint == f"did you mean: {tmp_path}/models/bert?"


@pytest.mark.parametrize("spec", ["./nope", "nope/config.json", "a/b/c", "~/surely-not-here-xyz"])
def test_specs_that_are_paths_say_no_such_file(spec):
    from tops_advisor.counting import load_model

    with pytest.raises(ModelFileError, match="no such file or directory"):
        load_model(f"hf:{spec}")


# A hub that refuses connections (the discard port on this machine): offline, whether or not there is a network.
NO_HUB = "http://127.0.0.1:9"
PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HF_HUB_OFFLINE")


def test_a_hub_id_offline_fails_in_one_line():
    env = {k: v for k, v in os.environ.items() if k not in PROXIES} | {"PYTHONPATH": str(REPO), "HF_ENDPOINT": NO_HUB}
    r = subprocess.run([sys.executable, "-m", "tops_advisor", "count", "hf:nonexist/dir"], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("error: hf:nonexist/dir: not a local path, and the Hugging Face hub cannot be reached")


def test_a_hub_id_offline_fails_fast(monkeypatch):
    # before, the hub client retried for 26 s on a machine without a network. Timed after transformers is
    # imported, so that only the lookup counts.
    pytest.importorskip("transformers")
    from tops_advisor.counting import load_model

    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", NO_HUB)
    start = time.monotonic()
    with pytest.raises(ModelFileError, match="the Hugging Face hub cannot be reached"):
        load_model("hf:nonexist/dir")
    elapsed_s = time.monotonic() - start
    assert elapsed_s < 5, elapsed_s


def test_hf_hub_offline_is_honoured_without_a_connection(monkeypatch):
    from tops_advisor.counting.library_models import _hub_unreachable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _hub_unreachable() == "HF_HUB_OFFLINE is set"


def test_what_looks_like_a_path():
    from tops_advisor.counting.library_models import looks_like_path

    assert looks_like_path("./x") and looks_like_path("/x") and looks_like_path("~/x")
    assert looks_like_path("x/config.json") and looks_like_path("a/b/c")
    assert looks_like_path("examples/nothing-here")          # a separator under a directory that exists
    assert not looks_like_path("nonexist/dir")                # ORG/NAME: a hub id
    assert not looks_like_path("bert-base-uncased")


# --- a model file whose own code raises ------------------------------------------------------------------------

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
    model = tmp_path / "mymodel.py"
    model.write_text(BAD_MODEL)
    r = run("count", model)
    assert r.exit_code == 2 and "Traceback" not in r.output
    # line 12 of BAD_MODEL is the conv2d with 3 input channels on an 8-channel tensor
    assert r.stderr.splitlines()[0] == (f"error: {model}:12: the forward pass failed on example_inputs(1): "
                                        "RuntimeError: Invalid channel dimensions")


def test_debug_shows_the_users_frames_first(tmp_path):
    model = tmp_path / "mymodel.py"
    model.write_text(BAD_MODEL)
    r = run("--debug", "count", model)
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
