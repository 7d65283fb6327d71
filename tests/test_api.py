"""The library's entry points (tops_advisor/api.py): a batch below 1 fails at once with one line that says
what was wrong, and the largest batch that fits follows the memory model."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tests.paths import EXAMPLES
from tops_advisor.api import largest_fitting_batch
from tops_advisor.errors import InputError, check_batch
from tops_advisor.roofline import predict
from tops_advisor.workload import OpRecord, Workload

SMALL = str(EXAMPLES / "small_cnn.py")
BATCH_LINE = "--batch must be a positive integer, got"
HW = make_hardware()   # 100 TOPS fp16, 1000 GB/s, 16 GB


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


# --- a workload that does not fit ---------------------------------------------------------------------------

def test_the_largest_fitting_batch_follows_the_memory_model():
    # batch 8: weights 4 GB, activations 8 GB + inputs 0.8 GB = 1.1 GB per sample; 16 GB less the weights and
    # the runtime's reserve R leaves 12 GB - R: floor((12e9 - R) / 1.1e9) samples
    w = Workload("w", 8, "fp16", (OpRecord("aten.mm", "matmul", "", 1e9, 1e6, 1e6, 0, "fp16", 1),),
                 param_bytes=4e9, activation_peak_bytes=8e9, input_bytes=0.8e9)
    p = predict(w, HW)
    reserve = p.memory_required_bytes - 12.8e9
    assert largest_fitting_batch(w, p) == int((16e9 - 4e9 - reserve) // 1.1e9)


def test_fsdp_plan_of_an_llm_config_wraps_each_layer():
    from tops_advisor.api import analyze_training, load_catalog
    from tops_advisor.train import LoraSpec, TrainSetup

    hw = load_catalog().get("h100-sxm")
    r = analyze_training("llama3-8b", hw, batch=1, seq=512, setup=TrainSetup("bf16", lora=LoraSpec(16, 32.0)),
                         devices=8, strategy="fsdp")
    plan = r.plan
    # the step's compute hides every gather but the first of llama3-8b's 32 layers: a third of the traffic / 32
    assert plan.exposed_comm_s == pytest.approx(plan.comm_s / 3 / 32, rel=1e-6)


# --- channels-last inference ----------------------------------------------------------------------------------

def test_channels_last_runs_the_eager_convolutions_nhwc_and_leaves_compiled_kernels_alone():
    from tops_advisor.api import ModelCosts
    from tops_advisor.kinds import OpKind
    from tops_advisor.workload import CHANNELS_LAST_FAMILY

    nchw = ModelCosts(SMALL, base_dtype="fp16")
    nhwc = ModelCosts(SMALL, base_dtype="fp16", channels_last=True)
    convs = [o for o in nhwc.at(8).ops if o.kind == OpKind.CONV]
    assert convs and all(o.family == CHANNELS_LAST_FAMILY for o in convs)
    assert not any(o.family == CHANNELS_LAST_FAMILY for o in nchw.at(8).ops if o.kind == OpKind.CONV)
    # the same operators otherwise: the layout changes kernels, not what is counted
    assert [o.name for o in nhwc.at(8).ops] == [o.name for o in nchw.at(8).ops]
    # inductor picks its own layout: compiled workloads are the same with or without the flag
    assert nhwc.at(8, mode="compiled").ops == nchw.at(8, mode="compiled").ops
