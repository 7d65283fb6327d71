"""The analytic training step (llm.training) against the counted one (counting.training) of the same
architecture: a tiny made-up LlamaForCausalLM config counted through transformers on meta tensors, and a
2-layer TinyLlama model file. Operations and memory agree within 3%."""

from __future__ import annotations

import importlib.util
import json
import warnings
from collections import defaultdict

import pytest

from tests.paths import EXAMPLES, FIXTURES
from tops_advisor.kinds import Phase
from tops_advisor.llm import build_training, config_from_dict
from tops_advisor.train import LoraSpec, TrainSetup

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
        "intermediate_size": 704, "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 2,
        "vocab_size": 1000, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
        "hidden_act": "silu"}
BATCH, SEQ, HEADS, Q = 4, 256, 8, 256
SETUPS = {
    "fp32": TrainSetup("fp32"), "bf16": TrainSetup("bf16"), "bf16-lora": TrainSetup("bf16", lora=LoraSpec(8)),
    "fp32-ckpt": TrainSetup("fp32", checkpointing=True),
    "bf16-lora-ckpt": TrainSetup("bf16", lora=LoraSpec(8), checkpointing=True),
    "amp": TrainSetup("amp"),
}


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    (d / "config.json").write_text(json.dumps(TINY))
    return d


def _flops(tw) -> dict[tuple[Phase, str], float]:
    out = defaultdict(float)
    for op in tw.workload.ops:
        out[(op.phase, str(op.kind))] += op.flops
    return out


def _count(config_dir, setup):
    pytest.importorskip("transformers")
    from tops_advisor.counting.sources import load_model
    from tops_advisor.counting.training import count_training

    with warnings.catch_warnings():   # operators without a counting formula yet (the optimizer's)
        warnings.simplefilter("ignore")
        return count_training(load_model(f"hf:{config_dir}", seq=SEQ), BATCH, setup)


def _meta_only_bytes(setup: TrainSetup) -> float:
    """What the counted timeline holds that a GPU does not, less what it misses. On the meta device Hugging
    Face's ``attn_output.transpose(1, 2).contiguous()`` copies the attention output, which o_proj then saves;
    on a GPU flash attention already writes (batch, seq, heads, dim), so the copy is a view (the eager lowering
    drops its kernel; counting/attention_choice.py) but the counted timeline keeps its bytes. The counted
    attention keeps no log-sum-exp (4 bytes per head per token), which the analytic step does. At the peak
    every layer's are alive, or one recomputed layer's under checkpointing."""
    layers = 1 if setup.checkpointing else TINY["num_hidden_layers"]
    t = BATCH * SEQ
    stream = 4 if setup.precision == "fp32" else 2
    return layers * (t * Q * stream - t * HEADS * 4)


@pytest.mark.parametrize("name", SETUPS)
def test_operations_agree_with_the_counted_model(config_dir, name):
    setup = SETUPS[name]
    counted = _flops(_count(config_dir, setup))
    built = _flops(build_training(config_from_dict(TINY, name="tiny", use_transformers=False), BATCH, SEQ, setup))
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        assert built[(phase, "matmul")] == pytest.approx(counted[(phase, "matmul")], rel=0.03)
    assert built[(Phase.FORWARD, "attention")] == pytest.approx(counted[(Phase.FORWARD, "attention")], rel=0.03)
    recompute = counted[(Phase.FORWARD, "attention")] if setup.checkpointing else 0.0
    if counted[(Phase.BACKWARD, "attention")] > recompute:   # once counting has the flash-backward formula
        assert built[(Phase.BACKWARD, "attention")] == pytest.approx(counted[(Phase.BACKWARD, "attention")],
                                                                     rel=0.03)


@pytest.mark.parametrize("name", SETUPS)
def test_memory_agrees_with_the_counted_model(config_dir, name):
    setup = SETUPS[name]
    counted = _count(config_dir, setup).memory
    built = build_training(config_from_dict(TINY, name="tiny", use_transformers=False), BATCH, SEQ, setup).memory
    assert built.peak_phase == counted.peak_phase
    for part in ("weights", "optimizer_state", "gradients", "inputs"):
        assert getattr(built, part) == pytest.approx(getattr(counted, part), rel=0.001, abs=1024)
    meta = _meta_only_bytes(setup)
    assert built.activations + built.temporaries + meta == pytest.approx(
        counted.activations + counted.temporaries, rel=0.03)
    assert built.peak_bytes + meta == pytest.approx(counted.peak_bytes, rel=0.03)


@pytest.fixture(scope="module")
def tinyllama_pair():
    """(counted, built, the example module): the two-layer TinyLlama model file counted for one bf16 step, and
    the same shape built from a config (examples/tinyllama_prefill.py's constants)."""
    from tops_advisor.counting.training import count_training

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counted = count_training(FIXTURES / "models" / "tinyllama_two_layers.py", 1, TrainSetup("bf16"))
    spec = importlib.util.spec_from_file_location("tinyllama_prefill", EXAMPLES / "tinyllama_prefill.py")
    T = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(T)
    raw = {"model_type": "llama", "hidden_size": T.HIDDEN, "intermediate_size": T.INTERMEDIATE,
           "num_attention_heads": T.HEADS, "num_key_value_heads": T.KV_HEADS, "num_hidden_layers": 2,
           "vocab_size": T.VOCAB, "tie_word_embeddings": False}
    cfg = config_from_dict(raw, name="tinyllama-2", use_transformers=False)
    return counted, build_training(cfg, 1, T.SEQUENCE, TrainSetup("bf16")), T


def test_tinyllama_model_file_matrix_products_agree(tinyllama_pair):
    """examples/tinyllama_prefill.py (plain torch, its loss the sum of the logits) and a config of its shape:
    every GEMM of the forward and the backward, and the forward's attention."""
    counted, built_step, T = tinyllama_pair
    built = _flops(built_step)
    flops = _flops(counted)
    for key in ((Phase.FORWARD, "matmul"), (Phase.BACKWARD, "matmul"), (Phase.FORWARD, "attention")):
        assert built[key] == pytest.approx(flops[key], rel=0.03)
    # per token 2 x (2 x 44,040,192 + 65,536,000) forward multiply-adds x 2 (the model file's docstring)
    assert built[(Phase.FORWARD, "matmul")] == 2 * T.SEQUENCE * (2 * 44_040_192 + 65_536_000)


def test_tinyllama_host_parts_agree_with_the_counted_model(tinyllama_pair):
    """The eager host model prices the builder's backward operators as autograd-engine work (not as a
    checkpointed recompute), as it prices the counted model's: each part's host time agrees within 5%."""
    from tops_advisor.catalog import load_catalog
    from tops_advisor.train.predict import predict_training

    counted, built, _ = tinyllama_pair
    assert not built.in_module[built.phase_index == 1].any()   # no checkpointing: nothing recomputed
    hw = load_catalog().get("h200-sxm")
    a, b = predict_training(counted, hw), predict_training(built, hw)
    for phase in (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER):
        assert b.part(phase).host_s == pytest.approx(a.part(phase).host_s, rel=0.05)
