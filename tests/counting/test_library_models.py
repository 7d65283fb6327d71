"""Library models by name (timm:, torchvision:, hf:) on the CPU with tiny configs, and keyword-input model files.

The transformers cases are the ones that failed before: transformers 5.x reads ``attention_mask.all()`` on the
host, which meta tensors cannot answer (counting/host/reads.py). Totals are checked against hand formulas
for the matrix work, and parameters against the library's own count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.paths import EXAMPLES, REPO
from tops_advisor.cli import cli
from tops_advisor.counting import MASKS_ALL_ONES, count, load_model
from tops_advisor.errors import CountingError, ModelFileError
from tops_advisor.workload import NoteKind

H, LAYERS, HEADS, FFN, VOCAB = 64, 2, 4, 128, 1000


def _config(tmp_path: Path, name: str, **fields) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(fields))
    return path


def _matrix_flops(w, kinds=("matmul", "attention")) -> float:
    return sum(op.flops for op in w.ops if op.kind in kinds)


def _meta_params(spec: str) -> int:
    model = load_model(spec).build(meta=True)
    return sum(p.numel() for p in model.parameters())


@pytest.fixture
def bert(tmp_path):
    pytest.importorskip("transformers")
    return _config(tmp_path, "bert", model_type="bert", hidden_size=H, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, intermediate_size=FFN, vocab_size=VOCAB, architectures=["BertModel"])


@pytest.fixture
def llama(tmp_path):
    pytest.importorskip("transformers")
    return _config(tmp_path, "llama", model_type="llama", hidden_size=H, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=FFN, vocab_size=VOCAB,
                   architectures=["LlamaForCausalLM"])


def test_bert_counts_with_its_attention_mask(bert):
    batch, seq = 2, 32
    w = count(load_model(f"hf:{bert}", seq=seq), batch=batch, dtype="fp16")
    tokens = batch * seq
    # per layer: q, k, v, o projections (4 h^2) and the MLP (2 h ffn) per token; QK^T and PV (2 s^2 h) per seq
    layers = LAYERS * (2 * tokens * (4 * H * H + 2 * H * FFN) + batch * 2 * 2 * seq * seq * H)
    pooler = 2 * batch * H * H
    assert _matrix_flops(w) == pytest.approx(layers + pooler, rel=1e-9)
    assert w.assumptions == (MASKS_ALL_ONES,)
    assert w.params == _meta_params(f"hf:{bert}")
    assert not w.unsupported_ops


def test_llama_decoder_counts_causal_attention(llama):
    batch, seq = 1, 16
    w = count(load_model(f"hf:{llama}", seq=seq), batch=batch, dtype="bf16")
    kv = H // HEADS * 2  # two key-value heads of head_dim 16
    per_token = 2 * (2 * H * H + 2 * H * kv + 3 * H * FFN)
    expected = LAYERS * batch * seq * per_token + 2 * seq * H * VOCAB
    # transformers 5.17 (the GPU image's) computes the rotary angles as a matmul of the inverse frequencies and
    # the positions (head_dim/2 x seq multiply-adds, once per forward: the positions have batch 1); later
    # versions multiply elementwise: both are what the library runs
    rotary = 2 * (H // HEADS // 2) * seq
    assert _matrix_flops(w, ("matmul",)) in (pytest.approx(expected), pytest.approx(expected + rotary))
    # causal attention counts the query-key pairs the mask keeps, s(s+1)/2, twice (QK^T and PV)
    attention = LAYERS * batch * 2 * 2 * (seq * (seq + 1) // 2) * H
    assert _matrix_flops(w, ("attention",)) == pytest.approx(attention)
    assert w.params == _meta_params(f"hf:{llama}")
    assert w.dtype == "bf16" and w.assumptions


def test_strict_refuses_the_mask_assumption(bert):
    with pytest.raises(CountingError, match="attention-mask check"):
        count(f"hf:{bert}", batch=1, dtype="fp32", strict=True)


def test_seq_and_task_change_the_model(bert):
    short = count(load_model(f"hf:{bert}", seq=8), batch=1)
    long = count(load_model(f"hf:{bert}", seq=16), batch=1)
    assert long.flops > 2 * short.flops * 0.99
    masked = count(load_model(f"hf:{bert}", seq=8, task="masked-lm"), batch=1)
    assert masked.params > short.params  # the prediction head, tied to the embeddings plus its transform


def test_timm_and_torchvision_by_name():
    pytest.importorskip("timm")
    timm_w = count("timm:resnet18", batch=2, dtype="fp16")
    tv_w = count("torchvision:resnet18", batch=2, dtype="fp16")
    assert timm_w.params == tv_w.params == 11_689_512
    assert timm_w.flops == pytest.approx(tv_w.flops, rel=1e-6)
    assert timm_w.flops / 2 == pytest.approx(3.64e9, rel=0.01)  # 1.82 GMACs per image
    small = count(load_model("timm:resnet18", input_shape=(3, 112, 112)), batch=2)
    stem = small.ops[0]  # the 7x7 stride-2 stem convolution: 56x56 outputs of 64 channels from 3x7x7 inputs
    assert stem.kind == "conv" and stem.flops == 2 * 2 * 56 * 56 * 64 * 3 * 7 * 7
    assert any(n.kind == NoteKind.SOURCE and "3x112x112 (given)" in n.text for n in small.notes)


def test_torchvision_segmentation_builds_without_weights():
    pytest.importorskip("torchvision")
    w = count("torchvision:lraspp_mobilenet_v3_large", batch=1, dtype="fp16")
    assert w.flops > 0 and any("weights transforms" in n.text for n in w.notes)


def test_model_file_with_keyword_inputs(tmp_path):
    path = tmp_path / "kw.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.a = nn.Linear(8, 4)\n\n"
        "    def forward(self, x, scale=None):\n        return self.a(x) * scale\n\n"
        "def build_model():\n    return M()\n\n"
        "def example_inputs(batch_size):\n"
        "    return {'x': torch.randn(batch_size, 8), 'scale': torch.ones(batch_size, 4)}\n")
    w = count(path, batch=3)
    assert _matrix_flops(w, ("matmul",)) == 2 * 3 * 8 * 4


def test_bad_specs_get_one_line():
    pytest.importorskip("timm")
    with pytest.raises(ModelFileError, match="timm has no model 'resnet5'") as err:
        load_model("timm:resnet5")
    assert "resnet50" in err.value.hint
    with pytest.raises(ModelFileError, match="no such file"):
        load_model("hf:/nonexistent/config.json")
    with pytest.raises(ModelFileError, match="no model name"):
        load_model("timm:")
    with pytest.raises(ModelFileError, match="apply to library models"):
        load_model(EXAMPLES / "small_cnn.py", task="base", input_shape=(3, 32, 32))
    # --seq reaches a model file only where its example_inputs takes sequence= (test_model_file_sequence.py)
    with pytest.raises(ModelFileError, match="takes no sequence length"):
        load_model(EXAMPLES / "small_cnn.py", seq=8)


def test_missing_library_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "timm", None)  # import timm now raises ImportError
    with pytest.raises(ModelFileError) as err:
        load_model("timm:resnet18")
    assert "not installed" in str(err.value) and "tops-advisor[models]" in err.value.hint


def test_cli_count_json_reports_the_assumption(bert):
    result = CliRunner().invoke(cli, ["count", f"hf:{bert}", "--seq", "8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["assumptions"] == [MASKS_ALL_ONES] and data["name"] == "bert"


def test_cli_input_shape_errors_in_one_line():
    result = CliRunner().invoke(cli, ["count", "timm:resnet18", "--input-shape", "3x2y"])
    assert result.exit_code == 2 and "not a shape" in result.stderr


def test_builder_that_reads_its_own_tensors_builds_with_parameters_on_meta():
    """torchvision's RegNet computes its block widths with torch and calls .tolist(): impossible under
    torch.device("meta"); the builder runs on the CPU with each parameter moved to meta as it is made."""
    import torch

    from tops_advisor.counting.library_models import LibraryModel

    def build():
        widths = torch.round(torch.tensor([8.4, 15.6])).int().tolist()
        return torch.nn.Sequential(torch.nn.Linear(widths[0], widths[1]), torch.nn.BatchNorm1d(widths[1]))

    model = LibraryModel("torchvision:toy", build, lambda b: (torch.empty(b, 8),)).build()
    assert [p.device.type for p in model.parameters()] == ["meta"] * 4
    assert all(b.device.type == "meta" for b in model.buffers())
    assert model[0].weight.shape == (16, 8) and model[0].weight.requires_grad
    assert torch.nn.Module.register_parameter.__name__ == "register_parameter"   # restored


def test_torchvision_regnet_x_counts():
    pytest.importorskip("torchvision")
    w = count(load_model("torchvision:regnet_x_400mf"), batch=1, dtype="fp16")
    assert 0.75e9 < w.flops < 0.9e9     # torchvision's table: 0.41 GFLOPS (multiply-adds) at 224


def test_autocast_region_on_the_meta_device_counts():
    """A model that opens torch.autocast on its tensors' device type (timm's EfficientViT) counts."""
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            with torch.autocast(device_type=x.device.type, enabled=False):
                return self.fc(x.float())

    from tops_advisor.counting import count_module

    w = count_module(Model(), torch.empty(2, 4, device="meta"), "fp16")
    assert w.flops == 2 * 2 * 4 * 4


def test_image_config_notes_its_pixel_size_not_tokens(tmp_path):
    """An image-only transformers config is described by its input image, not by a token count."""
    pytest.importorskip("transformers")
    cfg = {"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": 32, "num_hidden_layers": 1,
           "num_attention_heads": 2, "intermediate_size": 64, "image_size": 32, "patch_size": 16,
           "num_channels": 3}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    notes = load_model(f"hf:{path}").notes
    assert any("pixel values 3x32x32" in n for n in notes) and not any("tokens" in n for n in notes)


def test_autocast_disabled_region_stays_fp32_under_amp():
    """--dtype amp counts autocast's casts, except where the model itself disables autocast."""
    import torch

    from tops_advisor.counting import count_module

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.a(x)
            with torch.autocast(device_type=x.device.type, enabled=False):
                return self.b(y.float())

    ops = [o for o in count_module(Model(), torch.empty(2, 8, device="meta"), "amp").ops if o.kind == "matmul"]
    assert [o.dtype for o in ops] == ["fp16", "fp32"]


# --- hf: specs that look like paths, and the hub when offline --------------------------------------------------

def test_a_missing_path_fails_at_once_and_suggests_the_nearby_directory(tmp_path):
    (tmp_path / "models" / "bert").mkdir(parents=True)
    (tmp_path / "models" / "bert" / "config.json").write_text("{}")
    with pytest.raises(ModelFileError) as info:
        load_model(f"hf:{tmp_path}/modles/bert")
    assert str(info.value) == f"hf:{tmp_path}/modles/bert: no such file or directory"
    assert info.value.hint == f"did you mean: {tmp_path}/models/bert?"


@pytest.mark.parametrize("spec", ["./nope", "nope/config.json", "a/b/c", "~/surely-not-here-xyz"])
def test_specs_that_are_paths_say_no_such_file(spec):
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
