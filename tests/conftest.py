"""Shared fixtures: a synthetic device whose numbers are easy to reason about."""

from __future__ import annotations

import pytest

from tops_advisor.catalog import Hardware

# The blind examples' shared checks assert outside a test module: show their values on failure too.
pytest.register_assert_rewrite("tests.blind_support")


def make_hardware(**over) -> Hardware:
    """A round-numbered device: 100 TOPS fp16, 10 TOPS fp32, 1000 GB/s, 100 units, 16 GB, 200 W."""
    data = {
        "id": "toy-gpu", "name": "Toy GPU", "vendor": "NVIDIA", "architecture": "Toy", "segment": "datacenter",
        "memory_gb": 16, "memory_type": "HBM3", "memory_bandwidth_gb_s": 1000, "compute_units": 100,
        "tdp_w": 200, "dense_tops": {"fp32": 10, "tf32": 50, "fp16": 100, "bf16": 100, "int8": 200},
        "sparse_tops": {"fp16": 200},
        "sources": [{"key": "made-up", "title": "test fixture"}],
        "citations": {"memory_gb": "made-up", "memory_bandwidth_gb_s": "made-up", "compute_units": "made-up",
                      "tdp_w": "made-up", "dense_tops": "made-up", "sparse_tops": "made-up"},
    }
    data.update(over)
    return Hardware.model_validate(data)


@pytest.fixture
def toy_hw() -> Hardware:
    return make_hardware()
