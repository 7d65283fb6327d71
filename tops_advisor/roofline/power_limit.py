"""The clock a power-limited card runs each operator at: busy datapaths throttle, light work does not.

A card such as the T4 (70 W) cannot hold its rated boost clock under a sustained compute-bound load: the firmware
lowers the clock until board power is back at the limit. Its catalog file gives the clock a published
measurement shows under a large GEMM at the limit (``sustained_tensor_clock_mhz``; for a large FP32 GEMM on the
CUDA cores ``sustained_simt_clock_mhz`` where it differs), beside the rated boost (``boost_clock_mhz``, f_b).
Dynamic power is modelled as activity x f^n (``dynamic_power_clock_exponent``, n = 3: a*C*V^2*f with V ~ f),
activity being the share of its datapath's peak operation rate an operator keeps busy; static and
memory-interface power are taken as the same for every operator. The reference load of a datapath, a large GEMM
at the card's large-GEMM fraction e_t of its peak at clock f_t, sets the budget: e_t x f_t^n.

An operator that reaches the share e of its datapath's peak when compute-bound (its compute time c at boost,
memory time m, rho = c / m) has activity e while compute-bound and e x rho x f_b / f while memory-bound at clock f.
Setting activity x f^n = e_t x f_t^n:

- compute-bound: f = f_t x (e_t / e)^(1/n)   (a large GEMM: f_t; a kernel at a third of the peak: higher);
- memory-bound:  f = (e_t x f_t^n / (e x rho x f_b))^(1/(n-1));

the first where the operator is still compute-bound at that clock (rho x f_b >= f), else the second; never above
f_b. Both meet where rho x f_b = f.

Why it holds on a card nobody here measured: the only per-card inputs are the clocks under a large GEMM at the
card's own limit (measurements, in the card's file); the rest is the shape of CMOS power and the roofline's own
rates. A calibrated card (``tops-advisor probe``) keeps its measured rates instead.
"""

from __future__ import annotations

import numpy as np

from ..catalog import Hardware
from .defaults import RooflineDefaults


def operator_clock_mhz(compute_s: np.ndarray, memory_s: np.ndarray, efficiency: np.ndarray,
                       reference_mhz: np.ndarray, reference_efficiency: np.ndarray, hw: Hardware,
                       d: RooflineDefaults) -> np.ndarray:
    """Each operator's clock on ``hw`` (MHz) from its compute time at the rated boost clock, its memory time, the
    share of its datapath's peak it reaches (``efficiency``) and its datapath's reference load (the clock under
    a large GEMM at the limit and that GEMM's share of the peak); the boost clock on a card without a limit."""
    compute_s = np.asarray(compute_s, dtype=np.float64)
    f_b = float(hw.boost_clock_mhz or 0.0)
    if not hw.power_limited:
        return np.full(compute_s.shape, f_b)
    n = d.dynamic_power_clock_exponent.value
    f_t, e_t = np.asarray(reference_mhz, dtype=np.float64), np.asarray(reference_efficiency, dtype=np.float64)
    e = np.clip(np.asarray(efficiency, dtype=np.float64), 1e-9, 1.0)
    memory_s = np.asarray(memory_s, dtype=np.float64)
    rho = np.divide(compute_s, memory_s, out=np.full(compute_s.shape, np.inf), where=memory_s > 0)
    busy = f_t * (e_t / e) ** (1.0 / n)
    light = np.divide(e_t * f_t ** n, e * rho * f_b, out=np.full(compute_s.shape, np.inf), where=rho > 0)
    clock = np.where(rho * f_b >= busy, busy, light ** (1.0 / (n - 1.0)))
    return np.where(compute_s <= 0, f_b, np.minimum(f_b, clock))


def reference_clocks_mhz(simt: np.ndarray, hw: Hardware) -> np.ndarray:
    """Per operator, its datapath's clock under a large GEMM at the limit: the SIMT one for CUDA-core work
    (``simt``) where the card gives one, else the tensor one."""
    tensor = float(hw.sustained_tensor_clock_mhz)
    return np.where(simt, float(hw.sustained_simt_clock_mhz or tensor), tensor)


def power_limit_note(hw: Hardware) -> str:
    """The assumption line of a power-limited card."""
    simt = (f", a large CUDA-core FP32 GEMM at {hw.sustained_simt_clock_mhz:g} MHz"
            if hw.sustained_simt_clock_mhz else "")
    return (f"power limit {hw.tdp_w:g} W: a large tensor-core GEMM at the sustained "
            f"{hw.sustained_tensor_clock_mhz:g} MHz{simt} (rated boost {hw.boost_clock_mhz:g} MHz; "
            f"{hw.citation('sustained_tensor_clock_mhz')}); lighter operators between that and boost "
            "(roofline/power_limit.py)")
