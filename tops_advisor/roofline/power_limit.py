"""The clock a power-limited card runs each operator at: compute-bound work throttles, light work does not.

A card such as the T4 (70 W) or L4 (72 W) cannot hold its rated boost clock under a sustained compute-bound
load: the firmware lowers the clock until board power is back at the limit. Its catalog file gives the clock a
published measurement shows under such a load (``sustained_tensor_clock_mhz``, ``f_t``) beside the rated boost
(``boost_clock_mhz``, ``f_b``). Dynamic power is modelled as activity x f^n (``dynamic_power_clock_exponent``,
n = 3: a*C*V^2*f with V ~ f); the static and memory-interface power is taken as the same for every operator,
so the dynamic budget is what a fully busy SM array burns at ``f_t``:

    D = P(u = 1, f_t),  P(u, f) = D x u x (f / f_t)^n,

where u is the share of the operator's time its compute units are busy. At clock f an operator with compute time
c (at boost) and memory time m has u = min(1, c x f_b / f / m). Setting P = D:

- compute-bound at f_t (c x f_b / f_t >= m): f = f_t;
- otherwise f = (f_t^n / (rho x f_b))^(1 / (n - 1)) with rho = c / m, capped at f_b: a memory-bound operator
  whose compute is under (f_t / f_b)^n of its memory time runs at the full boost clock.

Why it holds on a card nobody here measured: the only per-card input is the clock under a compute-bound load at
the card's own limit (a measurement, in the card's file); the rest is the shape of CMOS power. A calibrated card
(``tops-advisor probe``) keeps its measured rates instead.
"""

from __future__ import annotations

import numpy as np

from ..catalog import Hardware
from .defaults import RooflineDefaults


def operator_clock_mhz(compute_s: np.ndarray, memory_s: np.ndarray, hw: Hardware,
                       d: RooflineDefaults) -> np.ndarray:
    """Each operator's clock on ``hw`` (MHz), from its compute time at the rated boost clock and its memory time;
    the boost clock everywhere on a card that is not power-limited."""
    compute_s = np.asarray(compute_s, dtype=np.float64)
    if not hw.power_limited:
        return np.full(compute_s.shape, float(hw.boost_clock_mhz or 0.0))
    f_b, f_t = float(hw.boost_clock_mhz), float(hw.sustained_tensor_clock_mhz)
    n = d.dynamic_power_clock_exponent.value
    memory_s = np.asarray(memory_s, dtype=np.float64)
    rho = np.divide(compute_s, memory_s, out=np.full(compute_s.shape, np.inf), where=memory_s > 0)
    bound = rho * f_b >= f_t                       # compute-bound even at the sustained clock
    light = np.divide(f_t ** n, rho * f_b, out=np.full(compute_s.shape, np.inf), where=rho > 0)
    clock = np.minimum(f_b, light ** (1.0 / (n - 1.0)))
    return np.where(compute_s <= 0, f_b, np.where(bound, f_t, clock))


def compute_slowdown(compute_s: np.ndarray, memory_s: np.ndarray, hw: Hardware,
                     d: RooflineDefaults) -> np.ndarray:
    """How much longer each operator's compute takes than at the rated boost clock (boost / operator clock;
    1 on a card that is not power-limited)."""
    if not hw.power_limited:
        return np.ones(np.shape(compute_s))
    return float(hw.boost_clock_mhz) / operator_clock_mhz(compute_s, memory_s, hw, d)


def power_limit_note(hw: Hardware) -> str:
    """The assumption line of a power-limited card."""
    return (f"power limit {hw.tdp_w:g} W: compute-bound operators at the sustained "
            f"{hw.sustained_tensor_clock_mhz:g} MHz (rated boost {hw.boost_clock_mhz:g} MHz; "
            f"{hw.citation('sustained_tensor_clock_mhz')}), lighter ones between it and boost "
            "(roofline/power_limit.py)")
