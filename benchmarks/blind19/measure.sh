#!/bin/bash
# Blind round 14 on the H200 (issue 16): torch.compile fp16 at batches 1 and 32 (with graph mode beside it),
# then autocast (AMP) in graph mode at 1 and 32 while time lasts. One device call of under 8 minutes:
#   bash benchmarks/blind19/measure.sh $OUT
set -u
out=$1
all=$(grep -v '^#' benchmarks/blind19/models.txt | grep -v '^$' | paste -sd,)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
timeout 390 python3 benchmarks/measure_models.py --models "$all" --batches 32,1 --dtypes fp16 \
  --modes graph,compiled --repeats 20 --time-budget 370 --out "$out/compiled.json" 2>> "$out/log.txt"
timeout 60 python3 benchmarks/measure_models.py --models "$all" --batches 1,32 --dtypes amp \
  --modes graph --repeats 20 --time-budget 50 --out "$out/amp.json" 2>> "$out/log.txt"
