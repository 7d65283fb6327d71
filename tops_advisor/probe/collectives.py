"""What the links probe sends and how it counts (pure): the message sizes and repetitions per device kind and
mode (``PLANS``), nccl-tests' bus-bandwidth factors (``bus_factor``, ``collective_sample``) and an NCCL error
in one line. ``distributed.py`` runs the ranks (``link_ranks.py``) and reads their results back."""

from __future__ import annotations

from dataclasses import dataclass

from ..calibration import CollectiveSample
from ..errors import InputError

SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
FAULT_ENV = "TOPS_ADVISOR_PROBE_FAULT"
KIB, MIB, GIB = 2**10, 2**20, 2**30
# The children's own collective timeout: past the parent's deadline, so the parent always acts first.
CHILD_TIMEOUT_MARGIN_S = 30.0


@dataclass(frozen=True)
class LinkPlan:
    """Message sizes and repetitions for one device kind and mode."""

    sizes_bytes: tuple[int, ...]
    small_bytes: tuple[int, ...]
    iter_bytes: int        # timed iterations per size: iter_bytes / size, clamped to [min_iters, max_iters]
    min_iters: int
    max_iters: int
    warmup: int
    small_iters: int
    p2p_bytes: int
    p2p_iters: int


def _powers(lo: int, hi: int, step: int) -> tuple[int, ...]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= step
    return tuple(out)


PLANS: dict[tuple[str, str], LinkPlan] = {
    ("cuda", "quick"): LinkPlan(_powers(MIB, GIB, 4), (8, KIB), 8 * GIB, 5, 50, 5, 200, 256 * MIB, 5),
    ("cuda", "full"): LinkPlan(_powers(MIB, GIB, 2), (8, KIB), 32 * GIB, 20, 200, 10, 1000, GIB, 10),
    ("cpu", "quick"): LinkPlan((64 * KIB, MIB), (8, KIB), 16 * MIB, 3, 20, 1, 20, 0, 0),
    ("cpu", "full"): LinkPlan(_powers(64 * KIB, 8 * MIB, 2), (8, KIB), 64 * MIB, 5, 50, 2, 100, 0, 0),
}


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for all-gather."""
    if n < 1:
        raise InputError(f"world size must be at least 1, got {n}")
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective == "all_gather":
        return (n - 1) / n
    raise InputError(f"unknown collective {collective!r}; expected all_reduce or all_gather")


def collective_sample(collective: str, nbytes: int, time_s: float, n: int) -> CollectiveSample:
    """One timed collective in the nccl-tests convention (``bytes``: the reduced buffer / gathered output)."""
    algbw = nbytes / time_s
    return CollectiveSample(bytes=nbytes, time_us=time_s * 1e6, algbw_gb_s=algbw / 1e9,
                            busbw_gb_s=algbw * bus_factor(collective, n) / 1e9)


def nccl_one_line(exc: BaseException) -> str:
    """An exception as one line: NCCL's own 'NCCL error ...' line (and its 'Last error') when there is one."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    low = [ln.lower() for ln in lines]
    pick = next((i for i, ln in enumerate(low) if "nccl error" in ln), None)
    if pick is None:
        pick = next((i for i, ln in enumerate(low) if "nccl" in ln and
                     any(w in ln for w in ("failed", "timeout", "timed out", "watchdog"))), 0)
    text = lines[pick] if lines else ""
    last = next((i for i, ln in enumerate(low) if ln.startswith("last error")), None)
    if last is not None and last + 1 < len(lines) and last + 1 != pick:
        text += f" (last error: {lines[last + 1]})"
    return f"{type(exc).__name__}: {text}"[:300].rstrip(": ")
