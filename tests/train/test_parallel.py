"""DDP and FSDP arithmetic on round numbers."""

from __future__ import annotations

import pytest

from tops_advisor.llm.parallel import Link
from tops_advisor.train.parallel import (
    DDP_BUCKET_BYTES,
    DDP_FIRST_BUCKET_BYTES,
    _buckets,
    ddp_comm,
    fsdp_comm,
)

LINK = Link("nvlink", "toy", 100e9, 0.0)   # 100 GB/s, no per-step latency (base latency 3.6 us remains)


def test_buckets_first_one_mb_then_25_mb():
    b = _buckets(DDP_FIRST_BUCKET_BYTES + 2 * DDP_BUCKET_BYTES)
    assert b == [DDP_FIRST_BUCKET_BYTES, DDP_BUCKET_BYTES, DDP_BUCKET_BYTES]
    assert _buckets(1000.0) == [1000.0]


def test_ddp_hides_all_but_the_last_bucket_under_a_long_backward():
    total, exposed = ddp_comm(1e9, 2, LINK, backward_s=10.0)
    # ring all-reduce, 2 ranks: 2(n-1)/n = 1 x bytes / 100 GB/s = 10 ms of traffic, plus latencies
    assert total == pytest.approx(1e9 / 100e9, rel=0.02)
    assert exposed < total / 10         # only the last 25 MB bucket


def test_ddp_exposes_what_a_short_backward_cannot_hide():
    total, exposed = ddp_comm(1e9, 2, LINK, backward_s=0.001)
    assert exposed == pytest.approx(total - 0.001 * (1 - DDP_FIRST_BUCKET_BYTES / 1e9), rel=0.05)


def test_one_gpu_communicates_nothing():
    assert ddp_comm(1e9, 1, LINK, 1.0) == (0.0, 0.0)
    assert fsdp_comm(1e9, 1, LINK, 1.0, 1.0, 12) == (0.0, 0.0)


def test_fsdp_moves_three_halves_of_an_allreduce():
    # forward all-gather + backward all-gather + reduce-scatter = 3 x (n-1)/n x bytes; 4 ranks: 3 x 0.75 x 1 GB
    total, exposed = fsdp_comm(1e9, 4, LINK, forward_s=1.0, backward_s=1.0, units=10)
    assert total == pytest.approx(3 * 0.75 * 1e9 / 100e9, rel=0.01)
    assert exposed == pytest.approx(total / 3 / 10, rel=0.01)   # only the first unit's gather
