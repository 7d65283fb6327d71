#!/bin/bash
# Blind round 12 on the H200 (issue 15, after round 11's post-round changes): graph and eager, fp16 at batches
# 1, 8, 32, 128 and fp32 at 1 and 32, with the launch-time probe before, between and after.
#   bash benchmarks/blind17/measure.sh $OUT
set -u
out=$1
all=$(grep -v '^#' benchmarks/blind17/models.txt | grep -v '^$' | paste -sd,)
launch() { python3 benchmarks/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
launch start
timeout 240 python3 benchmarks/measure_models.py --models "$all" --batches 1,8,32,128 --dtypes fp16 \
  --modes eager,graph --repeats 20 --time-budget 200 --out "$out/fp16.json" 2>> "$out/log.txt"
launch mid
timeout 120 python3 benchmarks/measure_models.py --models "$all" --batches 1,32 --dtypes fp32 \
  --modes eager,graph --repeats 20 --time-budget 90 --out "$out/fp32.json" 2>> "$out/log.txt"
launch end
