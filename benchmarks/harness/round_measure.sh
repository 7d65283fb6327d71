#!/bin/bash
# One device call of a blind round, run from the repository root on the GPU machine:
#   bash benchmarks/harness/round_measure.sh benchmarks/rounds/round-NN OUT [PART]
# Reads ROUND/models.txt (one model spec a line) and ROUND/plan.txt, and runs the plan's lines whose first
# field is PART (default 1), in order. A plan line is one of
#   PART launch NAME                 the probe's eager launch time -> OUT/launch_NAME.json
#   PART measure NAME ORDER BATCHES DTYPES MODES SECONDS MARGIN [points]
#                                    measure_models.py over every model (ORDER: list or reverse), killed after
#                                    SECONDS, with a time budget of SECONDS - MARGIN -> OUT/NAME.json; with
#                                    "points", a launch probe right before each point -> OUT/launch_points_NAME.json
#   PART host_cost NAME SECONDS BATCHES MODELS
#                                    host_cost.py on MODELS (comma-separated) -> OUT/NAME.json
# Lines starting with # are comments. Everything the tools print on stderr goes to OUT/log.txt.
set -u
round=$1 out=$2 part=${3:-1}
here=benchmarks/harness
models() { grep -v '^#' "$round/models.txt" | grep -v '^$' | if [ "$1" = reverse ]; then tac; else cat; fi | paste -sd,; }
launch() { python3 $here/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
measure() {  # name, order, batches, dtypes, modes, seconds, margin, [points]
  local extra=()
  [ "${8:-}" = points ] && extra=(--launch-out "$out/launch_points_$1.json")
  timeout "$6" python3 $here/measure_models.py --models "$(models "$2")" --batches "$3" --dtypes "$4" \
    --modes "$5" --repeats 20 --time-budget $(( $6 - $7 )) --out "$out/$1.json" "${extra[@]}" 2>> "$out/log.txt"
}
host_cost() {  # name, seconds, batches, models
  timeout "$2" python3 $here/host_cost.py --models "$4" --batches "$3" --out "$out/$1.json" 2>> "$out/log.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
grep -v '^#' "$round/plan.txt" | while read -r p step args; do
  [ "$p" = "$part" ] || continue
  # shellcheck disable=SC2086  # the plan's fields are words
  $step $args < /dev/null
done
