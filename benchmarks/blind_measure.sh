#!/bin/bash
# One device call of a library blind round (issue 15): graph and eager for every model of MODELS_FILE, fp16 at
# batches 1, 8, 32 and 128 and fp32 at 1 and 32, with the probe's eager launch time before, between and after
# (the score takes the mean of the three), and one right before each point (launch_points_*.json; added after
# round 19 ran). Each round's measure.sh calls this with its own models and budgets:
#   bash benchmarks/blind_measure.sh OUT MODELS_FILE FP16_SECONDS FP32_SECONDS
set -u
out=$1 models=$2 fp16_s=$3 fp32_s=$4
all=$(grep -v '^#' "$models" | grep -v '^$' | paste -sd,)
launch() { python3 benchmarks/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
measure() {  # name, batches, dtypes, seconds
  timeout "$4" python3 benchmarks/measure_models.py --models "$all" --batches "$2" --dtypes "$3" \
    --modes eager,graph --repeats 20 --time-budget $(( $4 - 30 )) --out "$out/$1.json" \
    --launch-out "$out/launch_points_$1.json" 2>> "$out/log.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
launch start
measure fp16 1,8,32,128 fp16 "$fp16_s"
launch mid
measure fp32 1,32 fp32 "$fp32_s"
launch end
