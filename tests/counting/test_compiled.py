"""The inductor lowering (counting/fusion.py) on tiny models whose inductor kernels are known from the
generated code of the same patterns in timm models on an H200 (benchmarks/results/h200_compiled.json):
ResNet-50's conv -> [bn + relu] and [bn + bn + add + relu] kernels, MobileNetV2's [bn + hardtanh + mean]
persistent reduction, ViT's [add + layer_norm] kernels around the extern GEMMs."""

import pytest
import torch
from torch import nn

from tops_advisor.api import ModelCosts
from tops_advisor.catalog import load_catalog
from tops_advisor.counting import count_module
from tops_advisor.counting.lowering import INDUCTOR_CUDA, PYTORCH_CUDA, lowering_for
from tops_advisor.errors import InputError
from tops_advisor.roofline import predict
from tops_advisor.roofline.predict import COMPILED_LOWERING


class TinyResidualCNN(nn.Module):
    """conv3x3(+bias) -> bn -> relu -> conv1x1 -> bn -> + shortcut -> relu -> global mean -> linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 32, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        z = torch.relu(self.bn2(self.conv2(y)) + y)
        return self.fc(z.mean((2, 3)))


def _compiled(module, x, dtype="fp16"):
    return count_module(module, x, dtype, lowering=INDUCTOR_CUDA)


def test_lowering_names_agree():
    assert COMPILED_LOWERING == INDUCTOR_CUDA
    assert lowering_for("compiled") == INDUCTOR_CUDA
    assert lowering_for("graph") == lowering_for("eager") == PYTORCH_CUDA


def test_residual_cnn_kernels_and_bytes():
    w = _compiled(TinyResidualCNN(), torch.randn(2, 16, 8, 8))
    names = [op.name for op in w.ops]
    # channels-last: the input image and the 3x3 weight copied; convolutions extern (no bias: it joins the
    # next kernel); [bias + bn + relu]; [bn + add + relu + mean] (one persistent reduction); the linear.
    assert names == ["triton.weight_to_channels_last", "triton.input_to_channels_last", "aten.convolution",
                     "triton:add+native_batch_norm+relu", "aten.convolution",
                     "triton:native_batch_norm+add+relu+mean", "aten.addmm"]
    assert w.kernels == 7
    act = 2 * 32 * 8 * 8 * 2   # one fp16 activation of conv1/conv2's output: 8192 bytes
    bias_bn = (32 + 4 * 32) * 2   # conv1's bias and bn1's mean, var, weight, bias (fp16)
    first = w.ops[3]
    assert first.bytes_read == act + bias_bn and first.bytes_written == act   # y, read by conv2 and the add
    second = w.ops[5]
    # reads conv2's output, y and bn2's four vectors; writes only the mean (the rest stays in registers)
    assert second.bytes_read == 2 * act + 4 * 32 * 2
    assert second.bytes_written == 2 * 32 * 2
    assert second.flops > 0 and all(op.kind != "norm" for op in w.ops)


def test_eager_lowering_is_unchanged_by_dataflow():
    eager = count_module(TinyResidualCNN(), torch.randn(2, 16, 8, 8), "fp16")
    assert eager.lowering == PYTORCH_CUDA
    assert [op.name for op in eager.ops][:4] == ["aten.convolution", "aten.add", "aten.native_batch_norm",
                                                 "aten.relu"]


class PreNormBlock(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        x = x + self.proj(self.n1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.n2(x))))


def test_transformer_blocks_fuse_add_and_norm_but_not_across_gemms():
    w = _compiled(nn.Sequential(PreNormBlock(), PreNormBlock()), torch.randn(2, 16, 64))
    kinds = [("gemm" if op.kind == "matmul" else op.name) for op in w.ops]
    # block 1: [n1], proj, [add + n2], fc1, [gelu], fc2; block 2 starts with [add + n1] (the residual add
    # waits for fc2, so it cannot join block 1's [add + n2]), and the last add is a kernel of its own.
    assert kinds == ["triton:native_layer_norm", "gemm", "triton:add+native_layer_norm", "gemm", "triton:gelu",
                     "gemm", "triton:add+native_layer_norm", "gemm", "triton:add+native_layer_norm", "gemm",
                     "triton:gelu", "gemm", "triton:add"]
    row = 2 * 16 * 64 * 2
    add_norm = w.ops[2]
    assert add_norm.bytes_written == 2 * row   # the sum (read again by the next residual add) and the norm


def test_layout_stays_nchw_for_a_lone_convolution_in_a_big_graph():
    class PatchEmbedThenMlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, 32, 4, stride=4)
            self.blocks = nn.Sequential(*(PreNormBlock(32) for _ in range(12)))

        def forward(self, x):
            return self.blocks(self.patch(x).flatten(2).transpose(1, 2))

    w = _compiled(PatchEmbedThenMlp(), torch.randn(1, 3, 32, 32))
    assert not any("channels_last" in op.name for op in w.ops)
    assert w.ops[0].kind == "conv"


def test_predict_compiled_needs_the_inductor_workload():
    hw = load_catalog().get("h200-sxm")
    x = torch.randn(2, 16, 8, 8)
    eager = count_module(TinyResidualCNN(), x, "fp16")
    with pytest.raises(InputError, match="inductor"):
        predict(eager, hw, mode="compiled")
    compiled = _compiled(TinyResidualCNN(), x)
    with pytest.raises(InputError):
        predict(compiled, hw, mode="graph")
    p = predict(compiled, hw, mode="compiled")
    g = predict(eager, hw, mode="graph")
    assert p.mode == "compiled" and p.kernels == 7 < g.kernels
    assert p.bytes < g.bytes and p.latency_s < g.latency_s


def test_model_costs_extrapolates_compiled_workloads(tmp_path):
    src = tmp_path / "tiny.py"
    src.write_text("import torch\nfrom torch import nn\n"
                   "def build_model():\n    return nn.Sequential(nn.Conv2d(8, 16, 3), nn.BatchNorm2d(16), nn.ReLU(),"
                   " nn.Conv2d(16, 16, 3))\n"
                   "def example_inputs(b):\n    return torch.randn(b, 8, 16, 16)\n")
    costs = ModelCosts(str(src), mode="compiled")
    extrapolated = costs.at(16)
    direct = count_module(*_load(src), "fp16", lowering=INDUCTOR_CUDA, batch=16)
    assert extrapolated.lowering == INDUCTOR_CUDA
    assert [op.name for op in extrapolated.ops] == [op.name for op in direct.ops]
    assert extrapolated.bytes == pytest.approx(direct.bytes)
    assert costs.at(16, mode="graph").lowering == PYTORCH_CUDA


def _load(path):
    from tops_advisor.counting import load_model

    source = load_model(str(path))
    return source.build(meta=False), source.inputs(16, meta=False)


def test_measurement_records_compiled_latency():
    from tops_advisor.validate.measure import DEFAULT_MODES, Measurement

    m = Measurement(model="m.py", batch=4, dtype="amp", compiled_s=1e-3, compiled_spread_s=(0.9e-3, 1.2e-3))
    rec = m.model_dump()
    assert rec["compiled_s"] == 1e-3 and rec["compiled_spread"] == [0.9e-3, 1.2e-3]
    assert Measurement.from_record(rec) == m
    assert "compiled" not in DEFAULT_MODES   # compiling is asked for, never a default


def test_validate_refuses_compiled_on_the_cpu():
    from tops_advisor.validate.run import check_request

    with pytest.raises(InputError, match="compiled mode replays CUDA graphs"):
        check_request("cpu", "compiled", "h200-sxm")


def test_pad_mm_pads_an_unaligned_compute_bound_gemm_only():
    # intensity m*n*k / (m*k + k*n + m*n) = 2048*1001*512 / (2048*512 + 512*1001 + 2048*1001) = 290 > 103: padded
    w = _compiled(nn.Linear(512, 1001), torch.randn(2048, 512))
    pad, mm = w.ops[0], w.ops[1]
    assert pad.name == "triton.pad_mm" and pad.bytes_read == 512 * 1001 * 2 and pad.bytes_written == 512 * 1008 * 2
    assert (mm.gemm.m, mm.gemm.n, mm.gemm.k) == (2048, 1008, 512)
    # 16 rows: intensity 16*1001*512 / (16*512 + 512*1001 + 16*1001) = 15 (memory-bound): left as it is
    small = _compiled(nn.Linear(512, 1001), torch.randn(16, 512))
    assert [op.name for op in small.ops] == ["aten.addmm"] and small.ops[0].gemm.n == 1001
    # eager keeps the shape
    assert count_module(nn.Linear(512, 1001), torch.randn(2048, 512), "fp16").ops[0].gemm.n == 1001


class Attention(nn.Module):
    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_unaligned_head_dim_pads_each_input_and_slices_the_output():
    q = torch.randn(2, 4, 16, 36)   # head dim 36: padded to 40 in half precision
    w = _compiled(Attention(), (q, q.clone(), q.clone()))
    assert [op.name for op in w.ops] == ["triton.sdpa_pad"] * 3 + ["triton.sdpa_unpad",
                                                                   "aten.scaled_dot_product_attention"]
    assert w.ops[0].bytes_read == 2 * 4 * 16 * 36 * 2 and w.ops[0].bytes_written == 2 * 4 * 16 * 40 * 2
    aligned = _compiled(Attention(), tuple(torch.randn(2, 4, 16, 40) for _ in range(3)))
    assert [op.name for op in aligned.ops] == ["aten.scaled_dot_product_attention"]


def test_a_gather_reads_the_rows_it_takes_not_the_table():
    w = _compiled(nn.Embedding(1000, 64), torch.randint(0, 1000, (2, 16)))
    (gather,) = w.ops
    rows = 2 * 16 * 64 * 2
    assert gather.param_bytes == rows and gather.bytes_read == rows + 2 * 16 * 8   # rows + int64 indices


def test_grouped_convolutions_stay_nchw():
    # decide_layout_opt: grouped convolutions (groups > 1, several input channels per group) weigh 1.358 x
    # their flops in channels-last, so a graph of only those keeps NCHW: no layout copies
    grouped = nn.Sequential(nn.Conv2d(64, 128, 3, groups=2), nn.ReLU(), nn.Conv2d(128, 128, 3, groups=2))
    w = _compiled(grouped, torch.randn(2, 64, 16, 16))
    assert not any("channels_last" in op.name for op in w.ops)
    plain = nn.Sequential(nn.Conv2d(64, 128, 3), nn.ReLU(), nn.Conv2d(128, 128, 3))
    names = [op.name for op in _compiled(plain, torch.randn(2, 64, 16, 16)).ops]
    assert names.count("triton.weight_to_channels_last") == 2 and "triton.input_to_channels_last" in names


class DenseDepthwiseGrouped(nn.Module):
    """A dense 3x3 convolution (it makes inductor pick channels-last), a depthwise 3x3 and a grouped 3x3 with 4
    channels per group, as in MobileNet and ResNeXt."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Conv2d(64, 256, 3, padding=1, bias=False)
        self.dw = nn.Conv2d(256, 256, 3, padding=1, groups=256, bias=False)
        self.grouped = nn.Conv2d(256, 256, 3, padding=1, groups=64, bias=False)

    def forward(self, x):
        return self.grouped(torch.relu(self.dw(torch.relu(self.dense(x)))))


def _conv_predictions(lowering):
    from tops_advisor.counting import count_module
    hw = load_catalog().get("h200-sxm")
    w = count_module(DenseDepthwiseGrouped(), torch.randn(8, 64, 28, 28), "fp16", lowering=lowering)
    mode = "compiled" if lowering == INDUCTOR_CUDA else "graph"
    p = predict(w, hw, mode=mode)
    return {o.module: (o, op) for o, op in zip(w.ops, p.ops, strict=True) if o.kind == "conv"}


def test_channels_last_depthwise_and_grouped_convolutions_get_their_nhwc_rates():
    # H200 compiled traces (docs/compiled.md): cuDNN's NHWC depthwise kernels move their bytes at the copy
    # bandwidth and reach 0.23 of the vector rate (NCHW: 0.25 of the bandwidth, 0.17); grouped NHWC kernels
    # run 64-channel tiles of a block-diagonal weight
    from tops_advisor.kinds import OpKind
    from tops_advisor.roofline import rates
    from tops_advisor.roofline.arrays import OpArrays
    from tops_advisor.roofline.defaults import DEFAULTS as d
    from tops_advisor.roofline.device import device_perf
    from tops_advisor.workload import CHANNELS_LAST_FAMILY
    eager, compiled = _conv_predictions(PYTORCH_CUDA), _conv_predictions(INDUCTOR_CUDA)
    assert all(o.family == "" for o, _ in eager.values())
    assert {m for m, (o, _) in compiled.items() if o.family == CHANNELS_LAST_FAMILY} == {"dw", "grouped"}
    (o_e, dw_e), (o_c, dw_c) = eager["dw"], compiled["dw"]
    bandwidth = (o_c.bytes / dw_c.memory_s) / (o_e.bytes / dw_e.memory_s)
    assert bandwidth == pytest.approx(d.kind_bandwidth_factor_by_width.value["copy"]["16-bit"]
                                         / d.depthwise_bandwidth_factor.value)
    arithmetic = (o_c.flops / dw_c.compute_s) / (o_e.flops / dw_e.compute_s)
    assert arithmetic == pytest.approx(d.depthwise_channels_last_vector_factor.value["16-bit"]
                                       / d.depthwise_vector_factor.value["16-bit"])
    # grouped, 4 channels per group: 16 groups per 64-channel tile, the layer's dense GEMM with K x 16, 1/16 kept
    o, grouped = compiled["grouped"]
    g = o.gemm
    assert (g.batch, g.n) == (64, 4)
    perf = device_perf(load_catalog().get("h200-sxm"))
    dense = OpArrays.build(OpKind.CONV, "fp16", m=[g.m], n=[g.n * g.batch], k=[g.k * 16], groups=[1], window=[1])
    dense_rate = rates.pointwise_conv_rate(dense, perf, "fp16")[0]
    assert o.flops / grouped.compute_s == pytest.approx(dense_rate / 16)
    assert grouped.compute_s < eager["grouped"][1].compute_s


class DilatedDepthwise(nn.Module):
    """DeepLabV3-MobileNetV3's last stage: a dense 3x3 (channels-last), then 5x5 depthwise, plain and dilated."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Conv2d(64, 256, 3, padding=1, bias=False)
        self.dw = nn.Conv2d(256, 256, 5, padding=2, groups=256, bias=False)
        self.dilated = nn.Conv2d(256, 256, 5, padding=4, dilation=2, groups=256, bias=False)

    def forward(self, x):
        return self.dilated(self.dw(self.dense(x)))


def test_dilated_depthwise_channels_last_runs_cudnns_generic_grouped_kernel():
    from tops_advisor.counting import count_module
    from tops_advisor.roofline.defaults import DEFAULTS as d

    hw = load_catalog().get("h200-sxm")
    w = count_module(DilatedDepthwise(), torch.randn(8, 64, 28, 28), "fp16", lowering=INDUCTOR_CUDA)
    p = predict(w, hw, mode="compiled")
    ops = {o.module: op for o, op in zip(w.ops, p.ops, strict=True) if o.kind == "conv"}
    ratio = (ops["dw"].flops / ops["dw"].compute_s) / (ops["dilated"].flops / ops["dilated"].compute_s)
    assert ratio == pytest.approx(d.depthwise_channels_last_vector_factor.value["16-bit"]
                                  / d.depthwise_dilated_channels_last_vector_factor.value)
    # eager (NCHW): PyTorch sends the dilated one to its own depthwise kernel (the 32-bit share), the 3x3 to cuDNN
    e = count_module(DilatedDepthwise(), torch.randn(8, 64, 28, 28), "fp16", lowering=PYTORCH_CUDA)
    pe = {o.module: op for o, op in zip(e.ops, predict(e, hw, mode="graph").ops, strict=True) if o.kind == "conv"}
    assert pe["dilated"].compute_s / pe["dw"].compute_s == pytest.approx(
        d.depthwise_vector_factor.value["16-bit"] / d.depthwise_vector_factor.value["32-bit"])
