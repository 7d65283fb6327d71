"""The module-stack time at which the eager host costs hold (``defaults.eager_module_call_reference_s``).

Reads ``host_drift.py`` outputs (each eager batch-1 fp16 timing beside a launch probe and a module-stack probe),
predicts each model's eager latency at the reference host (datasheet defaults, no calibration) and prints
measured / predicted against the stack time: the reference stack time is the median of stack / ratio.

    python benchmarks/studies/host-stack-fit/host_stack_fit.py benchmarks/rounds/round-15/measured/host_drift.json \
        benchmarks/rounds/round-23/measured/host_drift.json
"""

from __future__ import annotations

import json
import statistics
import sys
import warnings
from pathlib import Path

from tops_advisor.api import load_catalog, predict
from tops_advisor.counting import count


def ratios(path: Path, hw) -> list[tuple[str, float, float]]:
    """(model, measured / predicted at the reference host, stack us per module) per timing in one file."""
    timings = json.loads(path.read_text())
    reference = {}
    for spec in sorted({t["model"] for t in timings}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference[spec] = predict(count(spec, 1, "fp16"), hw, mode="eager").latency_s
    return [(t["model"], t["eager_s"] / reference[t["model"]], t["stack_us_per_module"]) for t in timings]


def main(paths: list[str]) -> int:
    hw = load_catalog().get("h200-sxm")
    every = []
    for p in map(Path, paths):
        rows = ratios(p, hw)
        every += rows
        print(f"{p}: {len(rows)} timings of {len({r[0] for r in rows})} models, reference stack time "
              f"{statistics.median(s / r for _, r, s in rows):.1f} us")
    print(f"all: {len(every)} timings of {len({r[0] for r in every})} models, reference stack time "
          f"{statistics.median(s / r for _, r, s in every):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
