"""Time one `analyze` against one `recommend` over the whole catalog on the same model (end to end, fresh
processes, so imports and counting are included as a user sees them).

    python benchmarks/harness/recommend_speed.py [examples/resnet50.py] [--repeats 3]

The target: recommend takes at most 1.5x one analyze (counting dominates both).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="examples/resnet50.py")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    base = [sys.executable, "-m", "tops_advisor"]
    analyze = timed(base + ["analyze", args.model, "-H", "h200-sxm", "--batch", "32", "--json"], args.repeats)
    recommend = timed(base + ["recommend", args.model, "--latency", "10ms", "--json"], args.repeats)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"analyze   (1 device, batch 32):                 {analyze:.2f} s")
    from tops_advisor.catalog import load_catalog

    n = len(load_catalog())
    print(f"recommend ({n} devices x up to 11 batches):      {recommend:.2f} s")
    print(f"ratio: {recommend / analyze:.2f} (target <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
