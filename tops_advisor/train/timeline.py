"""The eager timeline of training steps: the host issues operator after operator, the device runs each when it
is issued and the one before it is done, and at a host sync (GradScaler's found-inf read) the host waits for the
device. Pure numpy."""

from __future__ import annotations

import numpy as np


def finish_times(issue: np.ndarray, device: np.ndarray, start: float = 0.0) -> np.ndarray:
    """When each operator ends on the device: f_j = max(f_{j-1}, issue_j) + device_j, with f_{-1} = ``start``
    (a max-plus scan: f_j = D_j + max(start, max_{i<=j}(issue_i - D_{i-1})), D the running device sum)."""
    if not device.size:
        return device.copy()
    total = np.cumsum(device)
    before = total - device
    return total + np.maximum(start, np.maximum.accumulate(issue - before))


def run_steps(host: np.ndarray, device: np.ndarray, sync: int, steps: int = 2) -> np.ndarray:
    """Finish time of every operator over ``steps`` back-to-back steps (shape steps x ops). The host never
    waits except at ``sync`` (index of the first operator after a host read of a device value; -1: none),
    where it resumes when the device has finished everything before it."""
    n = device.size
    out = np.zeros((steps, n))
    host_t, device_t = 0.0, 0.0
    cuts = [0, sync, n] if 0 < sync < n else [0, n]
    for s in range(steps):
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if a == sync:              # the host waits for the device at the sync
                host_t = max(host_t, device_t)
            issue = host_t + np.cumsum(host[a:b])
            out[s, a:b] = finish_times(issue, device[a:b], device_t)
            host_t = float(issue[-1]) if b > a else host_t
            device_t = float(out[s, b - 1]) if b > a else device_t
    return out
