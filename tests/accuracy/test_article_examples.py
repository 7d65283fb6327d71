"""The article's workloads as shipped examples (YOLOv7, the Stable Diffusion UNet), and the generated check of
the article's claims (benchmarks/reports/article_check.py -> docs/reports/article-check.md).

Each model is counted once per module (the SD UNet takes seconds); counting is strict, so a fixture that
builds fails on any operator the counter does not know.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from tests.paths import REPO
from tops_advisor.catalog import Catalog, shipped_catalog_dir
from tops_advisor.cli import cli
from tops_advisor.roofline import predict

EXAMPLES = REPO / "examples"
ARTICLE_CARDS = ("rtx-3090", "rtx-3090-ti", "rtx-4090", "a100-sxm4-80gb", "jetson-agx-orin-64gb", "h100-sxm")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def yolov7():
    return _load(EXAMPLES / "yolov7.py", "_test_yolov7")


@pytest.fixture(scope="module")
def sd_unet():
    return _load(EXAMPLES / "sd_unet.py", "_test_sd_unet")


@pytest.fixture(scope="module")
def article_check():
    return _load(REPO / "benchmarks" / "reports" / "article_check.py", "_test_article_check")


@pytest.fixture(scope="module")
def costs(article_check):
    """Every model the check uses, counted once, strictly (CountingError on an unsupported operator)."""
    known = {name: article_check.Costs(path, env, strict=True)
             for name, (path, env) in article_check.MODELS.items()}
    return article_check.count_models(known=known)


@pytest.fixture(scope="module")
def catalog():
    return Catalog.from_dirs([shipped_catalog_dir()])


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ----------------------------------------------------------------------------------------------- YOLOv7

def test_yolov7_parameters_match_published(yolov7):
    # YOLOv7 (base), as deployed (BatchNorm folded, RepConv fused): published 36.9M (paper Table 1, README)
    with torch.device("meta"):
        fused, unfused = yolov7.build_model(fused=True), yolov7.build_model()
    assert abs(n_params(fused) / 36.9e6 - 1) < 0.02
    assert abs(n_params(unfused) / 36.9e6 - 1) < 0.02
    # folding a BN into its conv trades the BN's weight + bias (2 x C) for a conv bias (C): the unfused model
    # has one extra parameter per BatchNorm channel
    bn_channels = sum(m.num_features for m in unfused.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert n_params(unfused) - n_params(fused) == bn_channels


def test_yolov7_head_by_hand(yolov7):
    with torch.device("meta"):
        m = yolov7.build_model()
    # RepConv fused to one 3x3 conv with bias: 128->256, 256->512, 512->1024
    # 128*256*9 + 256 + 256*512*9 + 512 + 512*1024*9 + 1024 = 294,912 + 1,179,648 + 4,718,592 + 1,792
    assert n_params(m.rep) == 6_194_944
    # Detect: 1x1 conv to 3 anchors x (80 classes + 5) = 255 with bias, from 256 / 512 / 1024 channels
    # (256 + 512 + 1024) * 255 + 3 * 255 = 456,960 + 765
    assert n_params(m.detect) == 457_725


def test_yolov7_flops_match_published(costs):
    # published: 104.7 GFLOPs at 640x640 (the repo counts thop's multiply-adds x 2, as we do)
    flops = costs["yolov7_640"].at(1, "fp16").flops
    assert abs(flops / 104.7e9 - 1) < 0.02


def test_yolov7_1080p_costs_scale_with_pixels(costs):
    # every feature map of 1088x1920 is (1088 * 1920) / (640 * 640) = 2,088,960 / 409,600 = 5.1 times the
    # area of 640x640's (both sides divide by the largest stride, 32), so every operator's FLOPs scale by 5.1
    f640 = costs["yolov7_640"].at(1, "fp16").flops
    f1080 = costs["yolov7_1080p"].at(1, "fp16").flops
    assert math.isclose(f1080, 5.1 * f640, rel_tol=1e-9)
    # 384x640 (a 16:9 frame resized to 640 and letterboxed): 384 * 640 / 409,600 = 0.6
    assert math.isclose(costs["yolov7_640lb"].at(1, "fp16").flops, 0.6 * f640, rel_tol=1e-9)


def test_yolov7_input_sizes(yolov7):
    # 1080 is not a multiple of 32: letterboxing pads it to ceil(1080 / 32) * 32 = 34 * 32 = 1088
    assert yolov7.example_inputs_1080p(2)[0].shape == (2, 3, 1088, 1920)
    assert yolov7.example_inputs(1, "640")[0].shape == (1, 3, 640, 640)
    assert yolov7.example_inputs(1, "640-letterbox")[0].shape == (1, 3, 384, 640)
    with pytest.raises(ValueError, match="1080p"):
        yolov7.example_inputs(1, "720p")


@pytest.mark.slow
def test_yolov7_forward_shapes(yolov7):
    # a real forward at the smallest size: three scales, strides 8 / 16 / 32 of 384x640
    model = yolov7.build_model().eval()
    with torch.no_grad():
        outs = model(*yolov7.example_inputs(1, "640-letterbox"))
    assert [tuple(o.shape) for o in outs] == [(1, 255, 48, 80), (1, 255, 24, 40), (1, 255, 12, 20)]


# --------------------------------------------------------------------------------------------- SD UNet

def test_sd_unet_parameters_match_published(sd_unet):
    with torch.device("meta"):
        m = sd_unet.build_model()
    # ldm's log for SD 1.x: "DiffusionWrapper has 859.52 M params."
    assert abs(n_params(m) / 859.52e6 - 1) < 0.02
    assert round(n_params(m) / 1e6, 2) == 859.52


def test_sd_unet_blocks_by_hand(sd_unet):
    with torch.device("meta"):
        res = sd_unet.ResBlock(320, 320, 1280)
        st = sd_unet.SpatialTransformer(320, 8, 768)
    # ResBlock 320 -> 320, 1280-wide embedding: two GroupNorms 2 * 2 * 320 = 1,280; two 3x3 convs
    # 2 * (320 * 320 * 9 + 320) = 1,843,840; embedding Linear 1280 * 320 + 320 = 409,920
    assert n_params(res) == 1_280 + 1_843_840 + 409_920
    # SpatialTransformer 320, context 768: GroupNorm 640; proj_in/out 2 * (320 * 320 + 320) = 205,440;
    # self-attention q, k, v 3 * 320 * 320 + out 320 * 320 + 320 = 409,920; cross-attention q 102,400 +
    # k, v 2 * 768 * 320 = 491,520 + out 102,720 = 696,640; three LayerNorms 3 * 640 = 1,920;
    # GEGLU 320 * 2560 + 2560 = 821,760; FF out 1280 * 320 + 320 = 409,920
    assert n_params(st) == 640 + 205_440 + 409_920 + 696_640 + 1_920 + 821_760 + 409_920


def test_sd_unet_one_step_shapes(sd_unet):
    latents, timesteps, context = sd_unet.example_inputs(2)
    # 512x512 image / 8 = 64x64 latents, 4 channels; CLIP ViT-L/14 context 77 x 768
    assert latents.shape == (2, 4, 64, 64) and timesteps.shape == (2,) and context.shape == (2, 77, 768)
    # one generation = 50 steps at batch 2 (classifier-free guidance)
    assert (sd_unet.STEPS, sd_unet.CFG_BATCH) == (50, 2)


def test_sd_unet_timestep_embedding(sd_unet):
    # sin/cos of t * 10000^(-i/half): at t = 0 every cos is 1 and every sin 0
    e = sd_unet.timestep_embedding(torch.zeros(3), 320)
    assert e.shape == (3, 320)
    assert torch.equal(e[:, :160], torch.ones(3, 160)) and torch.equal(e[:, 160:], torch.zeros(3, 160))


# -------------------------------------------------------------------------------------- counting, analyze

@pytest.mark.parametrize("name", ["yolov7", "sd_unet"])
def test_examples_count_strict_on_the_cli(name):
    result = CliRunner().invoke(cli, ["count", str(EXAMPLES / f"{name}.py"), "--strict", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert not data.get("unsupported_ops")


def test_strict_fixtures_found_no_unsupported_ops(costs):
    assert {name: c.unsupported_ops for name, c in costs.items() if c.unsupported_ops} == {}


@pytest.mark.parametrize("model", ["yolov7_640", "yolov7_1080p", "sd_unet"])
@pytest.mark.parametrize("hw_id", ARTICLE_CARDS)
def test_analyze_on_every_article_card(costs, catalog, model, hw_id):
    w = costs[model].at(1, "fp16")
    p = predict(w, catalog.get(hw_id), mode="graph")
    assert p.hardware == hw_id and math.isfinite(p.latency_s) and p.latency_s > 0
    assert p.fits_memory  # both fit in 24 GB (and the Orin's 64) at batch 1
    # no device beats its own roofline: time >= FLOPs / dense fp16 peak
    assert p.latency_s >= w.flops / catalog.get(hw_id).peak_ops_per_s("fp16")


def test_analyze_cli_runs_on_yolov7_1080p(monkeypatch):
    monkeypatch.setenv("YOLOV7_INPUT", "1080p")
    result = CliRunner().invoke(cli, ["analyze", str(EXAMPLES / "yolov7.py"), "-H", "rtx-4090", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["hardware"] == "rtx-4090" and data["latency_ms"] > 0
    # the environment variable reached the model file: 1088x1920 costs 5.1 x the 640x640 104.8 GFLOPs
    assert abs(data["flops"] / (5.1 * 104.7e9) - 1) < 0.02


# ---------------------------------------------------------------------------------------- the article check

@pytest.mark.slow
def test_article_check_doc_is_current(article_check, catalog, costs):
    doc = (REPO / "docs" / "reports" / "article-check.md").read_text(encoding="utf-8")
    assert article_check.render(catalog, costs) == doc, (
        "docs/reports/article-check.md is stale: run python3 benchmarks/reports/article_check.py --write docs/reports/article-check.md")


def test_article_check_verdicts(article_check, catalog, costs):
    doc = article_check.render(catalog, costs)
    verdicts = doc.split("## Verdicts")[1].split("## 1.")[0]
    # GPT-3 175B at int8 on one 24 GB card: weights alone are ~175 GB
    assert "cannot hold on one card (memory" in verdicts
    for claim in ("2.1x faster", "580 samples/s", "15 ms to 7 ms", "65 FPS", "3.2 s", "18 tokens/s"):
        assert claim in verdicts
    # every card the article names appears in the per-card tables
    for hw_id in ARTICLE_CARDS:
        assert catalog.get(hw_id).name in doc
    # the three segments of the selection guide ran as recommend calls
    assert doc.count("tops-advisor recommend ") >= 3


def test_article_check_sd_arithmetic(article_check, catalog, costs):
    # one image = 50 steps x (UNet at batch 2): the 50-step column is 50 x the step column
    c = article_check.Checker(catalog, costs)
    step = c.predict("sd_unet", "rtx-4090", 2, "fp16").latency_s
    doc = article_check.render(catalog, costs)
    row = next(line for line in doc.splitlines()
               if line.startswith("| NVIDIA GeForce RTX 4090 |") and "compute |" in line and "UNet" not in line
               and line.count("|") == 7)
    assert f"| {50 * step:.2f} |" in row


@pytest.mark.slow
def test_article_check_cli_write_and_check(article_check, costs, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(article_check, "count_models", lambda: costs)  # reuse the fixture's counts
    doc = tmp_path / "article-check.md"
    doc.write_text("# stale\n", encoding="utf-8")
    assert article_check.main(["--check", str(doc)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert article_check.main(["--write", str(doc)]) == 0
    assert article_check.main(["--check", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8").startswith("# The article, checked")
