"""The eager timeline: the device runs each operator when issued and after the one before; a host sync waits."""

from __future__ import annotations

import numpy as np

from tops_advisor.train.timeline import finish_times, run_steps


def test_device_bound_finishes_at_the_device_sum():
    # issued at 1, 2, 3; each takes 10 on the device: ends at 11, 21, 31
    np.testing.assert_allclose(finish_times(np.array([1.0, 2, 3]), np.array([10.0, 10, 10])), [11, 21, 31])


def test_host_bound_finishes_behind_each_issue():
    # issued at 10, 20, 30; each takes 1: ends at 11, 21, 31
    np.testing.assert_allclose(finish_times(np.array([10.0, 20, 30]), np.array([1.0, 1, 1])), [11, 21, 31])


def test_start_delays_the_device():
    np.testing.assert_allclose(finish_times(np.array([0.0, 0]), np.array([1.0, 1]), start=5.0), [6, 7])


def test_steps_without_sync_pipeline_to_the_larger_of_host_and_device():
    host, device = np.array([3.0, 3, 3]), np.array([1.0, 1, 1])   # host 9 per step, device 3
    f = run_steps(host, device, sync=-1)
    assert f[1, -1] - f[0, -1] == 9.0
    f = run_steps(device, host, sync=-1)                           # host 3, device 9
    assert f[1, -1] - f[0, -1] == 9.0


def test_a_sync_makes_the_host_wait_for_the_device():
    # host 1 per op, device 5 per op, sync before op 2: the host issues ops 0-1 at 1, 2; waits for the device
    # (ends op 1 at 11), issues op 2 at 12 -> it ends at 17. Without the sync op 2 is issued at 3, ends at 16.
    host, device = np.array([1.0, 1, 1]), np.array([5.0, 5, 5])
    assert run_steps(host, device, sync=2, steps=1)[0, -1] == 17.0
    assert run_steps(host, device, sync=-1, steps=1)[0, -1] == 16.0
