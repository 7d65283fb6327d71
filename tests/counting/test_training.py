"""Counting a training step: phases, the backward's and optimizer's operators, memory parts, LoRA,
checkpointing, autocast above autograd, the loss rules and bad input."""

from __future__ import annotations

import warnings

import pytest

from tests.paths import FIXTURES
from tops_advisor.counting.training import count_training
from tops_advisor.errors import InputError, ModelFileError
from tops_advisor.kinds import Phase
from tops_advisor.train import LoraSpec, TrainSetup

TRAIN = FIXTURES / "train"
MLP = TRAIN / "tiny_mlp.py"


def step(model=MLP, batch=4, **setup):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return count_training(model, batch, TrainSetup(**setup))


def names(tw, phase):
    return [op.name for op in tw.workload.ops if op.phase == phase]


def test_every_phase_is_counted_in_order():
    tw = step()
    phases = [op.phase for op in tw.workload.ops]
    assert phases == sorted(phases, key=[Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER].index)
    assert "aten.addmm" in names(tw, Phase.FORWARD)
    assert "aten.mm" in names(tw, Phase.BACKWARD)            # the linear layers' gradients
    assert any(n.startswith("aten._foreach_") for n in names(tw, Phase.OPTIMIZER))


def test_linear_backward_matmuls_are_twice_the_forward():
    # forward: 2 x 4 x (64 x 128 + 128 x 10) = 75,776 matmul operations; the backward's dgrad and wgrad of the
    # second layer and the wgrad of the first (its input needs no gradient): 2 x 4 x (128 x 10) x 2 + 2 x 4 x 64 x 128
    tw = step()
    fwd = sum(op.flops for op in tw.workload.ops if op.phase == Phase.FORWARD and op.kind == "matmul")
    bwd = sum(op.flops for op in tw.workload.ops if op.phase == Phase.BACKWARD and op.kind == "matmul")
    assert fwd == 2 * 4 * (64 * 128 + 128 * 10)
    assert bwd == 2 * 4 * 128 * 10 * 2 + 2 * 4 * 64 * 128


def test_memory_parts_hold_weights_state_and_gradients():
    tw = step()
    params = 64 * 128 + 128 + 2 * 128 + 128 * 10 + 10
    m = tw.memory
    assert m.weights == params * 4
    assert m.optimizer_state == pytest.approx(2 * params * 4, abs=64)   # two fp32 moments (+ device step counts)
    assert m.all_gradients == params * 4
    assert m.peak_bytes >= m.weights + m.optimizer_state
    assert tw.trainable_params == params and tw.frozen_params == 0


def test_sgd_state_is_one_buffer_and_bf16_halves_it():
    assert step(optimizer="sgd").memory.optimizer_state == step().memory.optimizer_state / 2
    assert step(precision="bf16").memory.weights == step().memory.weights / 2


def test_grad_scaler_adds_its_check_and_a_host_sync():
    tw = step(precision="amp")
    assert "aten._amp_foreach_non_finite_check_and_unscale_" in names(tw, Phase.OPTIMIZER)
    assert tw.host_syncs == 1 and 0 < tw.sync_op < len(tw.workload.ops)
    assert step(precision="amp-bf16").sync_op == -1


def test_autocast_casts_are_above_autograd():
    tw = step(precision="amp")
    fwd = [op for op in tw.workload.ops if op.phase == Phase.FORWARD]
    assert {op.dtype for op in fwd if op.kind == "matmul"} == {"fp16"}
    # the backward's matmuls run in the dtype of the saved fp16 copies
    assert {op.dtype for op in tw.workload.ops if op.phase == Phase.BACKWARD and op.kind == "matmul"} == {"fp16"}


def test_lora_freezes_the_base_and_trains_adapters():
    tw = step(lora=LoraSpec(4, 8.0))
    # the body's first linear (64 -> 128) is adapted: A 4 x 64, B 128 x 4; the last one (a head, "3") is too,
    # since a Sequential's children have no head names
    assert tw.trainable_params == 4 * 64 + 128 * 4 + 4 * 128 + 10 * 4
    assert tw.frozen_params > 0
    assert tw.memory.all_gradients == tw.trainable_params * 4


def test_lora_without_linear_layers_is_one_clear_error():
    with pytest.raises(InputError, match="found no linear layer"):
        step(TRAIN / "no_linear.py", lora=LoraSpec(4))


def test_checkpointing_needs_a_library_that_offers_it():
    with pytest.raises(InputError, match="no gradient checkpointing"):
        step(checkpointing=True)


def test_losses_the_model_gives():
    assert "forward returns a scalar" in step(TRAIN / "scalar_loss.py").loss
    assert "loss()" in step(TRAIN / "user_loss.py").loss
    assert "sum of the output" in step().loss


def test_an_output_with_nothing_to_train_on():
    with pytest.raises(ModelFileError, match="no floating-point tensor"):
        step(TRAIN / "no_linear.py")


def test_fused_optimizer_is_one_kernel_family():
    tw = step(optimizer="adamw-fused")
    assert "aten._fused_adamw_" in names(tw, Phase.OPTIMIZER)


def test_eight_bit_adamw_keeps_byte_moments():
    tw = step(optimizer="adamw-8bit")
    params = 64 * 128 + 128 + 2 * 128 + 128 * 10 + 10
    assert tw.memory.optimizer_state < params * 4       # two uint8 moments + fp32 block scales
    assert "bnb.optimizer_update_8bit_blockwise" in names(tw, Phase.OPTIMIZER)


@pytest.mark.slow
def test_library_checkpointing_recomputes_in_the_backward():
    plain = step("timm:resnet18", 32, precision="amp")
    ckpt = step("timm:resnet18", 32, precision="amp", checkpointing=True)
    fwd_convs = sum(1 for op in plain.workload.ops if op.phase == Phase.FORWARD and op.kind == "conv")
    ckpt_bwd_convs = sum(1 for op in ckpt.workload.ops if op.phase == Phase.BACKWARD and op.name == "aten.convolution")
    assert ckpt_bwd_convs > 0 and ckpt_bwd_convs <= fwd_convs
    assert ckpt.memory.activations < 0.75 * plain.memory.activations   # only the stages' inputs are held
    assert "cross-entropy over 1000 classes" == plain.loss
