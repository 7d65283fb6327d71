"""The optimizer step's formulas: multi_tensor_apply's launches on hand-made size lists (the arithmetic beside
each), against PyTorch's C++ loop transcribed as it is written, and against the H200 profiles' launch counts;
the foreach, fused and GradScaler operators' bytes and operations."""

from __future__ import annotations

import json
import random

import pytest
import torch
from torch import nn

from tests.counting.backward_step import count_step
from tests.paths import EXAMPLES, REPO
from tests.train.launch_reference import reference_launches
from tops_advisor.counting.handles import OpCall, TensorInfo, lookup
from tops_advisor.counting.handles.optimizer import CHUNK_ELEMENTS, multi_tensor_launches
from tops_advisor.counting.sources import load_model
from tops_advisor.workload import MULTI_TENSOR_FAMILY

C = CHUNK_ELEMENTS  # 65536 elements per chunk, one thread block each


@pytest.mark.parametrize("numels, depth, scalar_list, launches", [
    ([], 1, False, 0),
    ([0, 0], 1, False, 0),                     # empty tensors are skipped
    ([1], 1, False, 1),
    ([320 * C], 1, False, 1),                  # 320 chunks fill the block list at the tensor's last chunk
    ([320 * C + 1], 1, False, 2),              # 321 chunks: 320, then 1
    ([1] * 110, 1, False, 1),                  # 110 tensors fill the depth-1 tensor list exactly
    ([1] * 111, 1, False, 2),
    ([1] * 110, 1, True, 2),                   # with one scalar per tensor the depth-1 list holds 96
    ([1] * 100, 3, False, 3),                  # depth 3 holds 48: 48 + 48 + 4
    ([319 * C, 2 * C], 1, False, 2),           # the second tensor's first chunk fills the blocks, its second
                                               # chunk starts the next launch
    ([100 * C] * 7, 2, False, 3),              # 700 chunks: 320 + 320 + 60
])
def test_multi_tensor_launches_by_hand(numels, depth, scalar_list, launches):
    assert multi_tensor_launches(numels, depth, scalar_list) == launches


def test_multi_tensor_launches_follow_the_cuda_loop():
    rng = random.Random(0)
    for _ in range(300):
        numels = [rng.choice([0, 1, 5000, C, C + 1, 3 * C, 40 * C, 319 * C, 700 * C + 7])
                  for _ in range(rng.randint(0, 260))]
        depth, scalar_list = rng.randint(1, 5), rng.random() < 0.5
        assert multi_tensor_launches(numels, depth, scalar_list) == reference_launches(numels, depth, scalar_list)


# Depth of each foreach pass of AdamW (torch/optim/adam.py, _multi_tensor_adam) and GradScaler, with whether
# the operator carries one scalar per tensor: the lists it walks, the output list of sqrt included.
ADAMW_PASSES = {"aten::_foreach_add_": (1, False), "aten::_foreach_mul_": (1, False),
                "aten::_foreach_lerp_": (2, False), "aten::_foreach_addcmul_": (3, False),
                "aten::_foreach_sqrt": (2, False), "aten::_foreach_div_": (1, True),
                "aten::_foreach_addcdiv_": (3, True), "aten::_amp_foreach_non_finite_check_and_unscale_": (1, False)}
PASSES_PER_STEP = {"aten::_foreach_mul_": 2}   # weight decay and exp_avg_sq's beta2


def profiled_launches(model: str) -> dict[str, float]:
    data = json.loads((REPO / "benchmarks/studies/training-step/h200_train_profiles.json").read_text())
    (profile,) = [p for p in data["profiles"] if p["model"] == model]
    return {r["op"]: r["calls_per_step"] for r in profile["kernels"]
            if r["part"] == "optimizer" and r["op"] in ADAMW_PASSES}


@pytest.mark.parametrize("model", ["examples/small_cnn.py", "examples/resnet50.py",
                                   pytest.param("examples/tinyllama_prefill.py", marks=pytest.mark.slow)])
def test_launches_equal_the_h200_profiles(model):
    """The foreach AdamW of each profiled model (fp32 parameters under amp, torch 2.11, H200): TinyLlama-1.1B's
    201 tensors launched 53 kernels per pass, ResNet-50's 161 tensors 3 (4 at depth 3)."""
    params = [p for p in load_model(REPO / model).build(meta=True).parameters() if p.requires_grad]
    numels = [p.numel() for p in params]
    measured = profiled_launches(model)
    assert measured.keys() == ADAMW_PASSES.keys()
    for op, (depth, scalar_list) in ADAMW_PASSES.items():
        per_pass = measured[op] / PASSES_PER_STEP.get(op, 1)
        assert multi_tensor_launches(numels, depth, scalar_list) == per_pass, op


def test_foreach_adamw_step_counts():
    model = nn.Linear(3, 4)                    # weight (4, 3) and bias (4,): 16 elements, 64 bytes
    x = torch.randn(2, 3)
    step = count_step(model, x, optimizer=lambda ps: torch.optim.AdamW(ps, foreach=True))
    assert step.unsupported == {}
    assert not any(r.name.startswith("profiler.") for r in step.optimizer)   # record_function: no kernel
    (lerp,) = [r for r in step.optimizer if r.name == "aten._foreach_lerp_"]
    # exp_avg.lerp_(grad, 1 - beta1): exp_avg and grad read (2 x 64 bytes), exp_avg written; 3 ops an element
    assert (lerp.flops, lerp.bytes_read, lerp.bytes_written, lerp.kernels) == (48, 128, 64, 1)
    assert lerp.family == MULTI_TENSOR_FAMILY
    (addcdiv,) = [r for r in step.optimizer if r.name == "aten._foreach_addcdiv_"]
    assert (addcdiv.bytes_read, addcdiv.bytes_written) == (3 * 64, 64)      # param, exp_avg, denom; param
    (sqrt,) = [r for r in step.optimizer if r.name == "aten._foreach_sqrt"]
    assert (sqrt.bytes_read, sqrt.bytes_written, sqrt.flops) == (64, 64, 16)  # out of place: a new list


def test_foreach_slow_path_is_one_kernel_per_tensor():
    half, full = TensorInfo((4, 3), 2.0), TensorInfo((4,), 4.0)
    call = OpCall("aten._foreach_mul_", ([half, full], 0.5))
    assert lookup(call.name)(call).kernels == 2    # two element sizes in one list: no multi_tensor_apply


def _lists(*shapes, n=2, itemsize=4.0):
    return [[TensorInfo(s, itemsize, is_param=i == 0) for s in shapes] for i in range(n)]


def test_fused_adamw():
    params, grads, m, v = (lst for lst in _lists((1000, 100), (100,), n=4))   # 100100 elements, 400400 bytes
    steps = [TensorInfo(()), TensorInfo(())]
    kwargs = dict(lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False)
    cost = lookup("aten._fused_adamw_")(OpCall("aten._fused_adamw_", (params, grads, m, v, [], steps), kwargs))
    # depth 4; chunks: ceil(100000 / 65536) = 2 and 1: one launch
    assert cost.kernels == 1 and cost.family == MULTI_TENSOR_FAMILY
    assert cost.flops == (13 + 2) * 100100                        # the update and AdamW's weight decay
    assert cost.bytes_read == 4 * 400400 + 8                      # four lists and two 4-byte steps
    assert cost.bytes_written == 3 * 400400                       # params, exp_avg, exp_avg_sq
    scaled = dict(kwargs, amsgrad=True, grad_scale=TensorInfo(()))
    mx = _lists((1000, 100), (100,), n=1)[0]
    cost = lookup("aten._fused_adamw_")(OpCall("aten._fused_adamw_", (params, grads, m, v, mx, steps), scaled))
    assert cost.flops == (13 + 2 + 1 + 1) * 100100                # + amsgrad's max, + the unscale
    assert cost.bytes_written == 5 * 400400                       # + max_exp_avg_sq, + the unscaled grads
    many = _lists(*[(10,)] * 31, n=5)                             # depth 5 holds 30 tensors: 2 launches
    call = OpCall("aten._fused_adam_", (*many[:4], many[4], [TensorInfo(())] * 31), scaled)
    assert lookup(call.name)(call).kernels == 2


def test_fused_sgd():
    params, grads, bufs = _lists((1000,), (10,), n=3)             # 1010 elements, 4040 bytes a list
    kwargs = dict(weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                  is_first_step=False)
    cost = lookup("aten._fused_sgd_")(OpCall("aten._fused_sgd_", (params, grads, bufs), kwargs))
    assert cost.flops == (2 + 3) * 1010 and cost.kernels == 1     # the step and the momentum buffer
    assert (cost.bytes_read, cost.bytes_written) == (3 * 4040, 2 * 4040)
    plain = lookup("aten._fused_sgd_")(OpCall("aten._fused_sgd_", (params, grads, []), dict(kwargs, momentum=0.0)))
    assert (plain.flops, plain.bytes_read, plain.bytes_written) == (2 * 1010, 2 * 4040, 4040)


def test_grad_scaler_ops_through_the_counter():
    grads = [torch.empty(4, 3), torch.empty(4)]
    found_inf, inv_scale = torch.zeros(1), torch.ones(1)

    def unscale(t):
        gs = [g.to("meta") for g in grads]
        torch._amp_foreach_non_finite_check_and_unscale_(gs, found_inf.to("meta"), inv_scale.to("meta"))
        return t * 1.0

    step = count_step(nn.Identity(), torch.randn(2, requires_grad=True), loss=lambda o: unscale(o).sum())
    (op,) = step.named("aten._amp_foreach_non_finite_check_and_unscale_", "forward")
    assert (op.flops, op.bytes_read, op.bytes_written, op.kernels) == (2 * 16, 64 + 8, 64, 1)
    assert step.unsupported == {}


def test_amp_update_scale_is_one_small_kernel():
    scalars = (TensorInfo((1,)), TensorInfo((1,), 4.0), TensorInfo((1,)))
    cost = lookup("aten._amp_update_scale_")(OpCall("aten._amp_update_scale_", (*scalars, 2.0, 0.5, 2000)))
    assert cost.kernels == 1 and cost.flops == 4 and cost.bytes_read is None   # default bytes: 12 read


def test_foreach_norm_and_zero():
    tensors = [TensorInfo((100,)), TensorInfo((50,))]
    norm = lookup("aten._foreach_norm")(OpCall("aten._foreach_norm", (tensors, 2)))
    assert (norm.flops, norm.kernels) == (2 * 150, 1 + 2)          # the pass, the zeroed partials, the cleanup
    zero = lookup("aten._foreach_zero_")(OpCall("aten._foreach_zero_", (tensors,)))
    assert (zero.bytes_read, zero.bytes_written, zero.kernels) == (0, 600, 1)


def test_sgd_and_adam_training_steps_count_fully():
    source = load_model(EXAMPLES / "small_cnn.py")
    model, inputs = source.build(meta=False), source.inputs(2, meta=False)
    for optimizer in (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
                      lambda ps: torch.optim.Adam(ps, amsgrad=True, foreach=True),
                      lambda ps: torch.optim.AdamW(ps, foreach=False)):
        assert count_step(model, inputs, optimizer=optimizer).unsupported == {}


def test_fused_optimizers_through_the_counter(monkeypatch):
    """Fused optimizers refuse meta parameters by device name; allowed, their calls reach the handles with the
    arguments PyTorch passes (``_fused_sgd_`` through its stand-in, ``meta_kernels.fused_sgd_``)."""
    import torch.optim.optimizer as optimizer_module
    import torch.utils._foreach_utils as foreach_utils

    devices = foreach_utils._get_fused_kernels_supported_devices() + ["meta"]
    for module in (foreach_utils, optimizer_module):
        monkeypatch.setattr(module, "_get_fused_kernels_supported_devices", lambda: devices)
    model, x = nn.Linear(3, 4), torch.randn(2, 3)     # 16 parameter elements, 64 bytes a list
    step = count_step(model, x, optimizer=lambda ps: torch.optim.AdamW(ps, fused=True))
    (adamw,) = step.named("aten._fused_adamw_", "optimizer")
    # (13 + 2 weight decay) x 16; four lists and two 4-byte steps read; params and both moments written
    assert (adamw.flops, adamw.bytes_read, adamw.bytes_written, adamw.kernels) == (240, 4 * 64 + 8, 3 * 64, 1)
    step = count_step(model, x, optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, fused=True))
    (sgd,) = step.named("aten._fused_sgd_", "optimizer")
    assert (sgd.flops, sgd.bytes_read, sgd.bytes_written) == ((2 + 3) * 16, 3 * 64, 2 * 64)
    assert step.unsupported == {}
