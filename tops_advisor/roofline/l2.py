"""L2 reuse: an activation an earlier operator wrote is read from the L2, not DRAM, while the L2 still holds it.

A GPU's L2 is write-back and sits in front of all of DRAM: an operator's output stays there until later traffic
evicts it. An operator that reads a value an earlier one wrote (``OpRecord.reuse``: its bytes, the traffic of the
operators in between, the producer's own traffic; ``counting/reuse.py``) finds in the L2 the part of it that was
not evicted. Modelled as a least-recently-used cache of the card's usable L2 (``l2_capacity_bytes``): the line at
position x (0-1) of the value was written by the producer, which then moved (1 - x) of its traffic; the operators
in between moved theirs; the consumer has moved x of its own when it reads the line. The line is still there when

    between + producer x (1 - x) + consumer x  <=  capacity

which holds for a contiguous share of the lines (``l2_hit_share``; all of them when the producer, everything
between and the consumer fit together, none when the producer and the operators between already overflow it).
Those bytes are read at the L2's bandwidth (``l2_bandwidth_gb_s`` in the catalog, a microbenchmark's figure) and
the rest, and every write, at DRAM's. A write still costs DRAM: the L2 writes dirty lines back when it evicts
them. The reference card's shares already price the reuse its own L2 gave, at its L2's speed relative to
its DRAM (``l2_reference_speed_ratio``); a line both L2s hold is priced the same on a card whose L2 is
relatively faster (the L4: 5.8x its DRAM, the H200 2.0x) at the reference's time x their ratio
(``l2_speed_ratio``), so the relative speed carries over as the DRAM share does. Cards without an L2 bandwidth
or an architecture in ``RooflineDefaults.l2_usable_share`` get no reuse.
"""

from __future__ import annotations

import numpy as np

from ..catalog import Hardware
from .arrays import OpArrays
from .defaults import RooflineDefaults

MIB = 2**20


def l2_capacity_bytes(hw: Hardware, d: RooflineDefaults) -> float:
    """The L2 a streamed data set can use on this card: the datasheet L2 x its architecture's usable share
    (``l2_usable_share``); 0 where the catalog lacks the L2's size or bandwidth or the share is unknown."""
    share = d.l2_usable_share.value.get(hw.architecture)
    if share is None or not hw.l2_cache_mb or not hw.l2_bandwidth_gb_s:
        return 0.0
    return hw.l2_cache_mb * MIB * share


def l2_speed_ratio(hw: Hardware) -> float:
    """The card's L2 read bandwidth over its DRAM bandwidth, both from the catalog (0 without an L2 figure)."""
    return (hw.l2_bandwidth_gb_s or 0.0) / hw.memory_bandwidth_gb_s


def l2_hit_share(between: np.ndarray, producer: np.ndarray, consumer: np.ndarray, capacity: float) -> np.ndarray:
    """The share of a reused value still in an LRU cache of ``capacity`` bytes when the consumer reads it: the
    lines x in [0, 1] with between + producer x (1 - x) + consumer x <= capacity (all bytes; broadcasts)."""
    first = np.asarray(between, dtype=np.float64) + producer      # the line the producer wrote first (x = 0)
    last = np.asarray(between, dtype=np.float64) + consumer       # the line the consumer reads last (x = 1)
    spread = np.abs(last - first)
    room = capacity - np.minimum(first, last)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(spread > 0, room / np.where(spread > 0, spread, 1.0), np.where(room >= 0, 1.0, 0.0))
    return np.clip(share, 0.0, 1.0)


def l2_read_bytes(a: OpArrays, capacity: float) -> np.ndarray:
    """Per operator: the bytes it reads from the L2 (its reused activations' hit shares, at most its bytes)."""
    if capacity <= 0:
        return np.zeros(len(a))
    hits = a.reuse_bytes * l2_hit_share(a.reuse_between, a.reuse_producer, a.reuse_consumer, capacity)
    return np.minimum(hits.sum(axis=1), a.bytes)
