"""Counting speed and memory: time to count each shipped example and a LLaMA-2-70B-shaped transformer.

Each model is counted in a fresh Python process (so peak resident memory is its own): the time to import
torch and tops_advisor.counting, the first count (includes torch's one-off lazy imports), a second count of
the same file, and the process's peak RSS. Targets: ResNet-50 under 2 s after import; the 70B
model under 10 s and under 2 GB resident.

    python3 benchmarks/harness/count_speed.py [--batch 1] [--dtype fp16] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["small_cnn", "resnet50", "mobilenet_v2", "vit_b16", "bert_large", "gpt2", "llama2_70b"]

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import torch
from tops_advisor.counting import count
t1 = time.perf_counter()
w = count(sys.argv[1], batch=int(sys.argv[2]), dtype=sys.argv[3])
t2 = time.perf_counter()
count(sys.argv[1], batch=int(sys.argv[2]), dtype=sys.argv[3])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_count_s": t2 - t1, "second_count_s": t3 - t2,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "ops": len(w.ops), "params": w.params, "flops": w.flops, "bytes": w.bytes,
                  "torch": torch.__version__}))
"""


def measure(name: str, batch: int, dtype: str) -> dict:
    path = ROOT / "examples" / f"{name}.py"
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(batch), dtype], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return {"model": name, **json.loads(out.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--models", nargs="*", default=MODELS)
    args = ap.parse_args(argv)
    rows = [measure(m, args.batch, args.dtype) for m in args.models]
    if args.json:
        print(json.dumps({"command": " ".join(sys.argv), "python": platform.python_version(),
                          "machine": platform.machine(), "rows": rows}, indent=2))
        return 0
    print(f"# count speed: batch {args.batch}, {args.dtype}; python {platform.python_version()}, "
          f"torch {rows[0]['torch']}, {platform.machine()}")
    print(f"{'model':<14}{'params':>16}{'ops':>6}{'import s':>10}{'first s':>9}{'second s':>10}{'peak RSS':>11}")
    for r in rows:
        print(f"{r['model']:<14}{r['params']:>16,}{r['ops']:>6}{r['import_s']:>10.2f}{r['first_count_s']:>9.2f}"
              f"{r['second_count_s']:>10.2f}{r['peak_rss_bytes'] / 1e9:>9.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
