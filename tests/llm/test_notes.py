"""The notes an LLM build and a retyped workload carry have kinds (workload.NoteKind), not only words."""

from __future__ import annotations

import pytest

from tops_advisor.llm import build_workload, load_config
from tops_advisor.llm.config import config_from_dict
from tops_advisor.llm.precision import make_precision
from tops_advisor.scaling import retype
from tops_advisor.workload import NoteKind


@pytest.fixture(scope="module")
def mistral():
    return load_config("mistral-7b")   # sliding window of 4096 tokens on every layer


def test_llm_build_notes_have_their_kinds(mistral):
    # int4 weight-only (act bf16), 2 ranks, a decode step at context 5000 > the 4096-token window:
    # the precision, weight-only quantization, the rank's share and the window each give one note
    w = build_workload(mistral, phase="decode", batch=1, context=5000, precision=make_precision("int4"), tp=2)
    assert [n.kind for n in w.notes] == [NoteKind.PRECISION, NoteKind.PRECISION, NoteKind.TENSOR_PARALLEL,
                                         NoteKind.KV_CACHE]
    assert NoteKind.INFO not in {n.kind for n in w.notes}
    assert w.notes[1].text.startswith("weight-only quantization")
    assert w.notes[2].text.startswith("rank 1 of 2")
    assert w.notes[3].text.startswith("sliding window of 4096 tokens")
    assert w.model_dump()["notes"] == [n.text for n in w.notes]   # the JSON keeps a list of the sentences


def test_a_short_context_plain_build_has_only_its_precision_note(mistral):
    # bf16 on one device at context 100 (inside the window): nothing but the precision to say
    w = build_workload(mistral, phase="decode", batch=1, context=100)
    assert [n.kind for n in w.notes] == [NoteKind.PRECISION]


def test_mla_note_is_about_the_kv_cache():
    raw = {"model_type": "deepseek_v2", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
           "intermediate_size": 96, "vocab_size": 100, "n_routed_experts": 1, "q_lora_rank": 24,
           "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16}
    w = build_workload(config_from_dict(raw, use_transformers=False), phase="decode", batch=1, context=8)
    assert [n.kind for n in w.notes] == [NoteKind.PRECISION, NoteKind.KV_CACHE]
    assert w.notes[1].text.startswith("multi-head latent attention")


def test_a_retyped_workload_says_it_was_derived(mistral):
    w = retype(build_workload(mistral, phase="prefill", batch=1, context=16), "fp8")
    assert [n.kind for n in w.notes] == [NoteKind.PRECISION, NoteKind.DERIVED]
    assert w.notes[-1].text == "derived from a count at bf16: bytes scaled by element size"
