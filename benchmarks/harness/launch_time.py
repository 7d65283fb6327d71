"""The probe's eager launch time on this machine (``probe.overhead.eager_kernel_s``), median of 5, in us.

Run beside a measurement of eager latency so that eager predictions can use the same host's speed:
    python benchmarks/harness/launch_time.py > launch.json
"""

from __future__ import annotations

import json
import statistics

from tops_advisor.probe.kit import CudaBackend
from tops_advisor.probe.overhead import eager_kernel_s, module_call_s


def probe(samples: int = 5) -> dict:
    """The launch time now: the median of ``samples`` probes, in us, and the samples; and the host time per
    module call of the probe's module stack (``module_call_us``, one median of 30 forwards)."""
    backend = CudaBackend()
    times = [eager_kernel_s(backend) * 1e6 for _ in range(samples)]
    return {"kernel_eager_us": statistics.median(times), "samples_us": times,
            "module_call_us": module_call_s(backend) * 1e6}


if __name__ == "__main__":
    print(json.dumps(probe()))
