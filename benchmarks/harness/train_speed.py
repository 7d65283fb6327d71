"""How long counting one training step and predicting it takes: `train` on one card and `recommend --train` on
the whole catalog, in one process each (the CLI's own start included), best of ``--repeats``.

    python benchmarks/harness/train_speed.py [--repeats 3] [MODEL ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

MODELS = ("timm:resnet50", "timm:vit_small_patch16_224", "examples/tinyllama_prefill.py", "llama3-8b")


def seconds(args: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tops_advisor", *args, "--json"], check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| model | train -H h200-sxm | recommend --train (whole catalog) | ratio |\n|---|---|---|---|")
    for model in args.models:
        batch = ["--batch", "2", "--seq", "2048", "--lora", "r=16"] if model == "llama3-8b" else ["--batch", "32"]
        one = seconds(["train", model, "-H", "h200-sxm", *batch], args.repeats)
        if model == "llama3-8b":   # recommend --train takes model files and library models
            print(f"| {model} | {one:.2f} s | - | - |")
            continue
        every = seconds(["recommend", model, "--train", *batch], args.repeats)
        print(f"| {model} | {one:.2f} s | {every:.2f} s | {every / one:.2f} |")


if __name__ == "__main__":
    main()
