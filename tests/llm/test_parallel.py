"""Tensor parallelism: valid splits, the link, ring all-reduce cost by hand."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.errors import InputError, LLMConfigError
from tops_advisor.llm import load_config
from tops_advisor.llm.parallel import allreduce_time_s, check_tp, link_for, tp_comm_time_s, valid_tp_degrees


def test_valid_degrees():
    # 32 heads, 8 KV heads (or a multiple of them), 14336 intermediate
    assert valid_tp_degrees(load_config("llama3-8b"), 40) == [1, 2, 4, 8, 16, 32]
    assert 6 in valid_tp_degrees(load_config("gpt3-175b"), 16)


def test_bad_tp_names_valid_ones():
    with pytest.raises(LLMConfigError) as exc:
        check_tp(load_config("llama3-8b"), 3)
    assert "does not divide" in str(exc.value) and "1, 2, 4, 8, 16" in exc.value.hint
    with pytest.raises(InputError):
        check_tp(load_config("llama3-8b"), 0)


def test_nvlink_ring_allreduce_by_hand():
    hw = make_hardware(peer_link="NVLink 4", peer_link_bandwidth_gb_s=900,
                       citations={**make_hardware().citations, "peer_link_bandwidth_gb_s": "made-up"})
    link = link_for(hw)
    assert link.kind == "nvlink" and link.bandwidth_bytes_per_s == 450e9  # half of 900 GB/s bidirectional
    # 8 ranks, 1 MB: 3.6 us + 14 x 0.4 us + 14/8 x 1e6 / 450e9 s = 3.6 + 5.6 + 3.888.. us
    assert allreduce_time_s(1e6, 8, link) == pytest.approx(3.6e-6 + 5.6e-6 + 1.75e6 / 450e9)
    assert allreduce_time_s(1e6, 1, link) == 0.0


def test_pcie_fallback_by_hand():
    hw = make_hardware(pcie_gen=4, pcie_lanes=16,
                       citations={**make_hardware().citations, "pcie_gen": "made-up", "pcie_lanes": "made-up"})
    link = link_for(hw)
    # 16 GT/s x 128/130 x 16 lanes / 8 bits = 31.5 GB/s per direction
    assert link.kind == "pcie" and link.bandwidth_bytes_per_s == pytest.approx(16e9 * 128 / 130 * 2)
    # two all-reduces per layer of tokens x hidden x 2 bytes; llama2-7b, 2 ranks, 1 token: 8192 bytes each
    one = 3.6e-6 + 2 * 1.0e-6 + 1 * 8192 / link.bandwidth_bytes_per_s
    assert tp_comm_time_s(load_config("llama2-7b"), 1, 2, link, 2) == pytest.approx(64 * one)


def test_no_link_is_an_error():
    with pytest.raises(InputError, match="neither a peer link nor PCIe"):
        link_for(make_hardware())
