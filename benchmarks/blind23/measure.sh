#!/bin/bash
# Blind round 18 on the H200 (issue 15: graph and eager, fp16 at 1,8,32,128 and fp32 at 1,32), one device call:
#   bash benchmarks/blind23/measure.sh $OUT
# Eager in one pass beside graph, with the probe's launch time before, between and after (round 16 showed a
# second pass does not help; the score takes the mean of the probes of the pass, as rounds 13 and 15 did).
set -u
out=$1
all=$(grep -v '^#' benchmarks/blind23/models.txt | grep -v '^$' | paste -sd,)
launch() { python3 benchmarks/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
measure() {  # name, batches, dtypes, seconds
  timeout "$4" python3 benchmarks/measure_models.py --models "$all" --batches "$2" --dtypes "$3" \
    --modes eager,graph --repeats 20 --time-budget $(( $4 - 30 )) --out "$out/$1.json" 2>> "$out/log.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
launch start
measure fp16 1,8,32,128 fp16 280
launch mid
measure fp32 1,32 fp32 140
launch end
