"""The probe's eager launch time on this machine (``probe.overhead.eager_kernel_s``), median of 5, in us.

Run beside a measurement of eager latency so that eager predictions can use the same host's speed:
    python benchmarks/launch_time.py > launch.json
"""

from __future__ import annotations

import json
import statistics

from tops_advisor.probe.kit import CudaBackend
from tops_advisor.probe.overhead import eager_kernel_s

if __name__ == "__main__":
    backend = CudaBackend()
    samples = [eager_kernel_s(backend) * 1e6 for _ in range(5)]
    print(json.dumps({"kernel_eager_us": statistics.median(samples), "samples_us": samples}))
