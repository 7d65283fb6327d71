"""Hand-derived counts of a training step's backward operators on tiny modules: the arithmetic is written beside
every expected number (one multiply-add = 2 operations; bytes at 4 bytes per fp32 element)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.counting.backward_step import count_step
from tests.counting.modules import as_module
from tops_advisor.counting import count_module
from tops_advisor.counting.handles import OpCall, TensorInfo, lookup
from tops_advisor.counting.handles.backward_vector import embedding_sort_kernels
from tops_advisor.counting.lowering import lower_inductor_cuda, lower_pytorch_cuda
from tops_advisor.kinds import OpKind
from tops_advisor.workload import (
    CONV_BGRAD_FAMILY,
    CONV_DGRAD_FAMILY,
    CONV_WGRAD_FAMILY,
    DEPTHWISE_DGRAD_FAMILY,
    DEPTHWISE_WGRAD_FAMILY,
    GemmShape,
)


def conv_parts(step):
    return step.named("aten.convolution_backward")


def test_conv_backward_is_one_record_per_gradient():
    conv = nn.Conv2d(3, 8, 3, padding=1)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    step = count_step(conv, x)
    dgrad, wgrad, bgrad = conv_parts(step)
    assert (dgrad.family, wgrad.family, bgrad.family) == (CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY, CONV_BGRAD_FAMILY)
    # the forward: out (2, 8, 8, 8), each element 3 * 3*3 = 27 multiply-adds: 2 * 128 * 8 * 27 = 55296
    forward = 2 * (2 * 8 * 8 * 8) * 27
    assert dgrad.flops == wgrad.flops == forward == 55296
    assert (dgrad.kind, wgrad.kind, bgrad.kind) == (OpKind.CONV, OpKind.CONV, OpKind.REDUCTION)
    # dgrad writes the input's gradient: m = N*H_in*W_in = 128, n = C_in = 3, k = C_out*3*3 = 72
    assert dgrad.gemm == GemmShape(m=128, n=3, k=72, batch=1)
    # wgrad: m = C_out = 8, n = C_in*3*3 = 27, k = N*H_out*W_out = 128
    assert wgrad.gemm == GemmShape(m=8, n=27, k=128, batch=1)
    assert (dgrad.gemm.window, dgrad.gemm.spatial_dims, wgrad.gemm.window, wgrad.gemm.plane) == (9, 2, 9, 64)
    # bytes: dy 2*8*64*4 = 4096, x 2*3*64*4 = 1536, w 8*3*9*4 = 864
    assert (dgrad.bytes_read, dgrad.bytes_written, dgrad.param_bytes) == (4096 + 864, 1536, 864)
    assert (wgrad.bytes_read, wgrad.bytes_written, wgrad.param_bytes) == (4096 + 1536, 864, 0)
    # the bias gradient sums dy over the batch and the plane: 1024 adds, 8 floats written
    assert (bgrad.flops, bgrad.bytes_read, bgrad.bytes_written) == (1024, 4096, 32)
    # one call: the first record carries the host dispatch, the others run inside it
    assert (dgrad.internal, wgrad.internal, bgrad.internal) == (False, True, True)
    assert all(r.kernels == 1 for r in (dgrad, wgrad, bgrad))


def test_first_layer_and_frozen_weight_skip_their_gradients():
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    x = torch.randn(2, 3, 8, 8)                                 # an input: no gradient wanted
    assert [r.family for r in conv_parts(count_step(conv, x))] == [CONV_WGRAD_FAMILY]
    frozen = nn.Sequential(nn.Conv2d(3, 3, 1), nn.Conv2d(3, 8, 3))
    frozen[1].requires_grad_(False)                             # a frozen layer after a trained one
    parts = conv_parts(count_step(frozen, x))
    # two calls: the frozen layer's data gradient alone, then the first layer's weight and bias gradients
    assert [r.family for r in parts] == [CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY, CONV_BGRAD_FAMILY]
    assert [r.internal for r in parts] == [False, False, True]


def test_strided_conv_dgrad_runs_over_the_input():
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
    dgrad, wgrad = conv_parts(count_step(conv, torch.randn(2, 3, 8, 8, requires_grad=True)))
    # out (2, 4, 4, 4): 2 * 32 * 4 * 27 = 6912 operations each way
    assert dgrad.flops == wgrad.flops == 2 * (2 * 4 * 16) * 27 == 6912
    # dgrad's rows are the input's 2*8*8 = 128 positions: m*n*k = 128*3*36 = 13824, stride^2 = 4x the 3456 MACs
    assert dgrad.gemm == GemmShape(128, 3, 36) and dgrad.gemm.stride == 2 and dgrad.gemm.plane == 64
    assert wgrad.gemm == GemmShape(4, 27, 32) and wgrad.gemm.plane == 16     # k = N*H_out*W_out = 2*16


def test_grouped_and_depthwise_conv_backward():
    grouped = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
    dgrad, wgrad = conv_parts(count_step(grouped, torch.randn(2, 8, 6, 6, requires_grad=True)))
    # each output element: 2 * 9 = 18 multiply-adds over 2*8*36 = 576 outputs: 2 * 576 * 18 = 20736
    assert dgrad.flops == wgrad.flops == 20736
    assert dgrad.gemm == GemmShape(m=72, n=2, k=18, batch=4)   # N*H*W, C_in/g, C_out/g*9
    assert wgrad.gemm == GemmShape(m=2, n=18, k=72, batch=4)   # C_out/g, C_in/g*9, N*H_out*W_out
    assert (dgrad.family, wgrad.family) == (CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY)
    # 8 channels: a depthwise convolution PyTorch keeps from cuDNN (fewer than 32 channels)
    depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
    parts = conv_parts(count_step(depthwise, torch.randn(2, 8, 6, 6, requires_grad=True)))
    assert [r.family for r in parts] == [DEPTHWISE_DGRAD_FAMILY, DEPTHWISE_WGRAD_FAMILY]
    assert parts[0].flops == 2 * (2 * 8 * 36) * 9               # 10368


def test_transposed_conv_backward():
    up = nn.ConvTranspose2d(4, 2, 2, stride=2, bias=False)     # (1, 4, 3, 3) -> (1, 2, 6, 6)
    dgrad, wgrad = conv_parts(count_step(up, torch.randn(1, 4, 3, 3, requires_grad=True)))
    # the forward: each of the 9 input positions scatters into 2 channels x 2x2 taps from 4 channels: 288 MACs
    assert dgrad.flops == wgrad.flops == 2 * 9 * 4 * 2 * 4 == 576
    assert dgrad.gemm == GemmShape(m=9, n=4, k=8)              # a direct convolution writing the 3x3 input
    assert wgrad.gemm == GemmShape(m=4, n=8, k=9)              # w0 = C_in, w1 * 2*2, N * 3*3


def test_conv1d_backward():
    conv = nn.Conv1d(4, 6, 5, padding=2, bias=False)
    dgrad, wgrad = conv_parts(count_step(conv, torch.randn(2, 4, 10, requires_grad=True)))
    assert dgrad.flops == 2 * (2 * 6 * 10) * 4 * 5 == 4800     # out (2, 6, 10), 4*5 multiply-adds each
    assert dgrad.gemm == GemmShape(20, 4, 30) and dgrad.gemm.spatial_dims == 1


def test_layer_norm_backward():
    step = count_step(nn.LayerNorm(16), torch.randn(4, 16, requires_grad=True))
    (op,) = step.named("aten.native_layer_norm_backward")
    assert op.flops == (10 + 5) * 64                            # input gradient 10/elem, weight and bias 5: 960
    assert op.kernels == 2 and op.family == "layer_norm_backward"
    # input-gradient kernel: dy 256 + x 256 + mean 16 + rstd 16 + weight 64; weight kernel: dy, x, mean, rstd
    assert op.bytes_read == (256 + 256 + 32 + 64) + (256 + 256 + 32) == 1152
    assert op.bytes_written == 256 + 64 + 64                    # dx, dweight, dbias
    assert op.gemm == GemmShape(4, 16, 1)                       # 4 rows of 16


def test_batch_norm_backward_training():
    step = count_step(nn.BatchNorm2d(4), torch.randn(2, 4, 3, 3, requires_grad=True))
    (op,) = step.named("aten.native_batch_norm_backward")
    assert op.flops == 9 * 72 and op.kernels == 1               # 2*4*3*3 = 72 elements, 9 operations each
    # dy 288 + x 288, each read twice (the channel sums, then dx), + weight, running mean and var, saved mean
    # and invstd (5 x 16)
    assert op.bytes_read == 2 * (288 + 288) + 80
    assert op.bytes_written == 288 + 16 + 16 and op.family == "batch_norm_backward"


def test_group_norm_backward():
    step = count_step(nn.GroupNorm(2, 4), torch.randn(2, 4, 3, 3, requires_grad=True))
    (op,) = step.named("aten.native_group_norm_backward")
    # sums (3/elem) then c1 dy + c2 x + c3 (4/elem) over 72 elements; kernels: sums, weight x rstd, fused
    # params, apply, weight and bias gradients
    assert op.flops == 7 * 72 and op.kernels == 5
    assert op.gemm == GemmShape(4, 18, 1)                       # 2 samples x 2 groups of 2*9


def test_rms_norm_backward():
    # the fused RMS norm's backward (CUDA; on meta tensors F.rms_norm decomposes): 4 rows of 16
    dy, x, rstd, w = TensorInfo((4, 16)), TensorInfo((4, 16)), TensorInfo((4, 1)), TensorInfo((16,), is_param=True)
    call = OpCall("aten._fused_rms_norm_backward", (dy, x, [16], rstd, w, [True, True]))
    cost = lookup(call.name)(call)
    assert cost.flops == (7 + 3) * 64 and cost.kernels == 2     # input gradient 7/elem, weight gradient 3
    assert cost.bytes_read == 2 * (256 + 256 + 16) + 64         # each kernel reads dy, x, rstd; the first w
    assert cost.bytes_written == 256 + 64 and cost.gemm == GemmShape(4, 16, 1)


@pytest.mark.parametrize("act, name, per", [
    (nn.ReLU(), "aten.threshold_backward", 2), (nn.GELU(), "aten.gelu_backward", 11),
    (nn.GELU(approximate="tanh"), "aten.gelu_backward", 18), (nn.SiLU(), "aten.silu_backward", 9),
    (nn.Sigmoid(), "aten.sigmoid_backward", 3), (nn.Tanh(), "aten.tanh_backward", 3),
    (nn.Hardswish(), "aten.hardswish_backward", 6), (nn.Hardsigmoid(), "aten.hardsigmoid_backward", 4),
    (nn.ReLU6(), "aten.hardtanh_backward", 3), (nn.LeakyReLU(), "aten.leaky_relu_backward", 3),
    (nn.ELU(), "aten.elu_backward", 6), (nn.Softplus(), "aten.softplus_backward", 7),
])
def test_activation_backward(act, name, per):
    (op,) = count_step(act, torch.randn(4, 8, requires_grad=True)).named(name)
    assert op.flops == per * 32 and op.kind == OpKind.ELEMENTWISE
    assert op.bytes_read == 2 * 128 and op.bytes_written == 128  # dy and the saved tensor read, dx written


def test_glu_dropout_and_softmax_backward():
    (glu,) = count_step(nn.GLU(), torch.randn(4, 8, requires_grad=True)).named("aten.glu_backward")
    assert glu.flops == 9 * 16 and glu.bytes_written == 4 * 8 * 4   # 16 output-gradient elements; dx (4, 8)
    # on a GPU F.dropout runs the fused native_dropout (on meta tensors it decomposes): call it directly
    dropout = as_module(lambda t: torch.native_dropout(t, 0.1, True)[0])
    (drop,) = count_step(dropout, torch.randn(4, 8, requires_grad=True)).named("aten.native_dropout_backward")
    assert drop.flops == 2 * 32 and drop.bytes_read == 128 + 32      # dy and the boolean mask
    soft = count_step(nn.Softmax(-1), torch.randn(4, 8, requires_grad=True)).named("aten._softmax_backward_data")
    assert soft[0].flops == 4 * 32 and soft[0].kind == OpKind.SOFTMAX


def test_cross_entropy_backward():
    logits = torch.randn(4, 10, requires_grad=True)
    target = torch.zeros(4, dtype=torch.long)
    step = count_step(as_module(lambda x: x), logits, loss=lambda out: F.cross_entropy(out, target.to("meta")))
    (fwd,) = step.named("aten.nll_loss_forward", "forward")
    assert fwd.flops == 4 and fwd.bytes_read == 4 * 8 + 4 * 4    # the int64 targets and one float per row
    (nll,) = step.named("aten.nll_loss_backward")
    assert nll.kernels == 2                                      # the zero fill and the scatter
    assert nll.bytes_written == 4 * 10 * 4 + 4 * 4               # the whole gradient filled, 4 rows written
    (soft,) = step.named("aten._log_softmax_backward_data")
    assert soft.flops == 4 * 40
    assert step.unsupported == {}


def test_pixelwise_cross_entropy_backward():
    logits = torch.randn(2, 3, 4, 4, requires_grad=True)
    target = torch.zeros(2, 4, 4, dtype=torch.long).to("meta")
    step = count_step(as_module(lambda x: x), logits, loss=lambda out: F.cross_entropy(out, target))
    (fwd,) = step.named("aten.nll_loss2d_forward", "forward")
    assert fwd.kernels == 4 and fwd.flops == 32                   # two fills, the kernel, the mean; 32 pixels
    (bwd,) = step.named("aten.nll_loss2d_backward")
    assert bwd.kernels == 2 and step.unsupported == {}


def test_mse_and_bce_losses():
    x = torch.randn(4, 8, requires_grad=True)
    zeros = torch.zeros(4, 8).to("meta")
    mse = count_step(as_module(lambda x: x), x, loss=lambda o: F.mse_loss(o, zeros))
    assert mse.named("aten.mse_loss", "forward")[0].flops == 3 * 32
    assert mse.named("aten.mse_loss_backward")[0].flops == 3 * 32 and mse.unsupported == {}
    bce = count_step(as_module(lambda x: x), x, loss=lambda o: F.binary_cross_entropy_with_logits(o, zeros))
    (op,) = bce.named("aten.binary_cross_entropy_with_logits", "forward")
    assert op.flops == 10 * 32 and op.kernels == 5 and bce.unsupported == {}


def test_pooling_backward():
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    (mp,) = count_step(nn.MaxPool2d(2), x).named("aten.max_pool2d_with_indices_backward")
    # 8 output-gradient elements x a 2x2 window; the fill and the scatter both write dx (2*16 floats)
    assert mp.flops == 8 * 4 and mp.kernels == 2 and mp.bytes_written == 2 * 128
    assert mp.bytes_read == 8 * 4 + 8 * 8                        # dy and the int64 indices, not the input
    (ap,) = count_step(nn.AvgPool2d(2), x).named("aten.avg_pool2d_backward")
    assert (ap.flops, ap.kernels, ap.bytes_read, ap.bytes_written) == (32, 1, 32, 128)
    # (a 1x1 output is a mean, on the GPU too: adaptive_avg_pool2d's fast path)
    (ad,) = count_step(nn.AdaptiveAvgPool2d(3), x).named("aten._adaptive_avg_pool2d_backward")
    assert (ad.flops, ad.kernels, ad.bytes_written) == (32, 2, 2 * 128)   # zeros_like, then atomic adds


def test_upsample_backward():
    x = torch.randn(1, 2, 3, 3, requires_grad=True)
    (near,) = count_step(nn.Upsample(scale_factor=2), x).named("aten.upsample_nearest2d_backward")
    assert (near.flops, near.kernels, near.bytes_read, near.bytes_written) == (72, 1, 72 * 4, 18 * 4)
    bil = nn.Upsample(scale_factor=2, mode="bilinear")
    (op,) = count_step(bil, x).named("aten.upsample_bilinear2d_backward")
    assert (op.flops, op.kernels, op.bytes_written) == (8 * 72, 2, 2 * 18 * 4)  # 4 taps x (multiply, add)


def test_embedding_backward():
    emb = nn.Embedding(100, 8)
    ids = torch.zeros(2, 5, dtype=torch.long)
    (op,) = count_step(emb, ids).named("aten.embedding_dense_backward")
    # the whole table's gradient zeroed (100*8*4 = 3200) and the 10 rows used written (320)
    assert (op.kernels, op.bytes_written, op.bytes_read) == (2, 3200 + 320, 320 + 80)
    # past 3072 indices PyTorch sorts them: a 32000-row table has 15-bit indices, two 8-bit radix passes
    assert embedding_sort_kernels(32000) == 1 + 1 + (2 + 2) + 9 == 15
    call = OpCall("aten.embedding_dense_backward", (TensorInfo((4096, 8)), TensorInfo((4096,), 8.0), 32000, -1, False))
    assert lookup(call.name)(call).kernels == 15


def test_view_gradients():
    x = torch.randn(3, 4, requires_grad=True)
    step = count_step(as_module(lambda t: t[1] * 2), x)
    (sel,) = step.named("aten.select_backward")
    assert (sel.kernels, sel.bytes_read, sel.bytes_written) == (2, 16, 48 + 16)   # zeros (3, 4), the row copied
    (sl,) = count_step(as_module(lambda t: t[:, 1:3] * 2), x).named("aten.slice_backward")
    assert (sl.kernels, sl.bytes_written) == (2, 48 + 24)


def _attention_call(name: str, causal: bool) -> OpCall:
    q = k = v = out = dout = TensorInfo((1, 2, 8, 4), 2.0)
    lse = TensorInfo((1, 2, 8), 4.0)
    if name.endswith("flash_attention_backward"):
        args = (dout, q, k, v, out, lse, None, None, 8, 8, 0.0, causal)
    elif name.endswith("cudnn_attention_backward"):
        args = (dout, q, k, v, out, lse, None, None, None, None, None, 8, 8, 0.0, causal)
    else:
        args = (dout, q, k, v, None, out, lse, None, None, 0.0, [True, True, True, False], causal)
    return OpCall(name, args)


@pytest.mark.parametrize("name, kernels", [("aten._scaled_dot_product_flash_attention_backward", 3),
                                           ("aten._scaled_dot_product_cudnn_attention_backward", 4),
                                           ("aten._scaled_dot_product_efficient_attention_backward", 1)])
def test_attention_backward(name, kernels):
    from torch.utils.flop_counter import sdpa_backward_flop_count

    cost = lookup(name)(_attention_call(name, causal=False))
    # five products over 2 heads x 8 x 8 pairs, head dim 4: 5 * 2 * 2*64*4 = 5120, 2.5x the forward's 2048
    assert cost.flops == 5 * 2 * (2 * 64 * 4) == 5120
    assert cost.flops == sdpa_backward_flop_count((1, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 4))
    assert cost.kernels == kernels and cost.kind == OpKind.ATTENTION and cost.gemm == GemmShape(8, 8, 4, 2)
    # q, k, v, out, dout 64 halves each, lse 16 floats, and the fp32 dQ accumulator written and read
    assert cost.bytes_read == 5 * 128 + 64 + 256 and cost.bytes_written == 3 * 128 + 256
    causal = lookup(name)(_attention_call(name, causal=True))
    assert causal.flops == 5 * 2 * (2 * 36 * 4)                 # the 8*9/2 = 36 pairs a causal mask keeps


def test_every_backward_operator_of_the_small_cnn_has_a_formula():
    from tests.paths import EXAMPLES
    from tops_advisor.counting.sources import load_model

    source = load_model(EXAMPLES / "small_cnn.py")
    model = source.build(meta=False)
    step = count_step(model, source.inputs(4, meta=False),
                      loss=lambda out: F.cross_entropy(out, torch.zeros(4, dtype=torch.long, device="meta")))
    assert step.unsupported == {}
    assert sum(r.kind == OpKind.CONV for r in step.backward) > 0


def test_parts_survive_both_lowerings():
    conv = nn.Conv2d(3, 8, 3, padding=1)
    step = count_step(conv, torch.randn(2, 3, 8, 8, requires_grad=True))
    counted = step.run.recorder.records
    parts = [c for c in counted if c.record.name == "aten.convolution_backward"]
    assert parts[0].flow is not None and all(c.flow is None and c.facts is None for c in parts[1:])
    for lowered in (lower_pytorch_cuda(counted), lower_inductor_cuda(counted)):
        families = [r.family for r in lowered if r.name == "aten.convolution_backward"]
        assert families == [CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY, CONV_BGRAD_FAMILY]


def _meta(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype, device="meta")


FUNCTIONAL_STEPS = {
    "index": lambda t: t[torch.tensor([0, 2, 2]).to("meta")] * 2,
    "gather": lambda t: torch.gather(t, 1, _meta(4, 3, dtype=torch.long)),
    "masked_fill": lambda t: t.masked_fill(_meta(4, 8, dtype=torch.bool), 0.0),
    "cumsum": lambda t: t.cumsum(1),
    "bicubic": lambda t: F.interpolate(t.view(1, 1, 4, 8), scale_factor=2, mode="bicubic"),
    "grid_sample": lambda t: F.grid_sample(t.view(1, 1, 4, 8), _meta(1, 2, 2, 2)),
    "reflection_pad": lambda t: F.pad(t.view(1, 4, 8), (1, 1), mode="reflect"),
    "tensor_unfold": lambda t: t.unfold(1, 2, 2) * 1.0,
    "fold": lambda t: F.fold(t.view(1, 8, 4), (3, 3), 2),
    "normalize": lambda t: F.normalize(t, dim=1),
    "std": lambda t: t.std(1),
    "layer_norm_plain": lambda t: F.layer_norm(t, (8,)),
    "group_norm_plain": lambda t: F.group_norm(t.view(2, 4, 4), 2),
    "smooth_l1": lambda t: F.smooth_l1_loss(t, _meta(4, 8)),
    "l1": lambda t: F.l1_loss(t, _meta(4, 8)),
    "huber": lambda t: F.huber_loss(t, _meta(4, 8)),
    "kl_div": lambda t: F.kl_div(F.log_softmax(t, 1), _meta(4, 8), reduction="batchmean"),
    "prelu": lambda t: F.prelu(t, torch.ones(1, device="meta")),
    "logsigmoid": F.logsigmoid,
    "selu": F.selu,
    "max_pool1d": lambda t: F.max_pool1d(t.view(1, 4, 8), 2),
    "avg_pool1d": lambda t: F.avg_pool1d(t.view(1, 4, 8), 2),
    "adaptive_max_pool": lambda t: F.adaptive_max_pool2d(t.view(1, 1, 4, 8), 2),
    "pixel_shuffle": lambda t: F.pixel_shuffle(t.view(1, 4, 2, 4), 2),
    "roll": lambda t: torch.roll(t, 1, 1),
    "masked_attention": lambda t: F.scaled_dot_product_attention(*(t.view(1, 1, 4, 8),) * 3, attn_mask=_meta(4, 4)),
    "repeat_interleave": lambda t: t.repeat_interleave(2, dim=0),
    "topk_sort": lambda t: t.topk(2, 1).values + t.sort(1).values[:, :2],
    "norms": lambda t: torch.linalg.vector_norm(t, dim=1) + t.logsumexp(1) + t.amax(1),
}


@pytest.mark.parametrize("name", FUNCTIONAL_STEPS)
def test_every_backward_operator_of_common_functions_has_a_formula(name):
    step = count_step(as_module(FUNCTIONAL_STEPS[name]), torch.randn(4, 8, requires_grad=True))
    assert step.unsupported == {} and step.backward


def test_training_batch_norm_records_its_channels_as_rows():
    """Training batch norm reduces each channel over N x H x W in one thread block (forward statistics and the
    backward): both records carry m = channels, n = N*H*W; eval batch norm (elementwise) carries none."""
    bn = nn.BatchNorm2d(4)
    step = count_step(bn, torch.randn(2, 4, 3, 5, requires_grad=True))
    forward = next(r for r in step.forward if r.name == "aten.native_batch_norm")
    backward = next(r for r in step.backward if r.family == "batch_norm_backward")
    assert forward.gemm == backward.gemm == GemmShape(m=4, n=2 * 3 * 5, k=1)   # 4 channels of 30 elements
    inference = count_module(bn.eval(), torch.randn(2, 4, 3, 5), "fp32")
    assert [r.gemm for r in inference.ops if r.kind == OpKind.NORM] == [None]


@pytest.mark.parametrize(("dtype", "expected"), [
    (torch.float32, [DEPTHWISE_DGRAD_FAMILY, DEPTHWISE_WGRAD_FAMILY]),    # fp32: PyTorch's own kernels always
    (torch.bfloat16, [DEPTHWISE_DGRAD_FAMILY, DEPTHWISE_WGRAD_FAMILY]),   # bf16: likewise
    (torch.float16, [CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY]),              # fp16, 32 channels, 3x3 stride 1: cuDNN
])
def test_depthwise_gradients_run_pytorchs_kernels_unless_fp16_goes_to_cudnn(dtype, expected):
    """``use_cudnn_depthwise`` (aten/src/ATen/native/Convolution.cpp) takes only kHalf inputs: a 32-channel
    3x3 stride-1 depthwise convolution's gradients are cuDNN's in fp16 and PyTorch's in bf16 and fp32."""
    depthwise = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False).to(dtype)
    parts = conv_parts(count_step(depthwise, torch.randn(2, 32, 8, 8, dtype=dtype, requires_grad=True)))
    assert [r.family for r in parts] == expected
