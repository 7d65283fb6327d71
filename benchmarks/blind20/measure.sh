#!/bin/bash
# Blind round 15 on the H200 (issue 15: graph/eager fp16 at 1,8,32,128 and fp32 at 1,32; issue 16: AMP
# eager/graph at 1,32 and compiled fp16 at 1,32). Run from the repository root on the GPU machine, in two
# calls of under 10 minutes:
#   bash benchmarks/blind20/measure.sh 1 $OUT   # launch time, fp16/fp32/AMP eager and graph, then compiled fp16
#                                               # in list order while time lasts
#   bash benchmarks/blind20/measure.sh 2 $OUT   # compiled fp16 in reverse list order
# The two compiled passes meet in the middle; a model both reach is kept from part 1.
set -u
part=$1; out=$2
all=$(grep -v '^#' benchmarks/blind20/models.txt | grep -v '^$' | paste -sd,)
reverse=$(grep -v '^#' benchmarks/blind20/models.txt | grep -v '^$' | tac | paste -sd,)
launch() { python3 benchmarks/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
measure() {  # name, models, batches, dtypes, modes, seconds
  timeout "$6" python3 benchmarks/measure_models.py --models "$2" --batches "$3" --dtypes "$4" \
    --modes "$5" --repeats 20 --time-budget $(( $6 - 50 )) --out "$out/$1.json" 2>> "$out/log.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
if [ "$part" = 1 ]; then
  launch p1_start
  measure fp16 "$all" 1,8,32,128 fp16 eager,graph 230
  launch p1_mid
  measure fp32 "$all" 1,32 fp32 eager,graph 80
  measure amp "$all" 1,32 amp eager,graph 80
  launch p1_end
  measure compiled_p1 "$all" 1,32 fp16 graph,compiled 110
else
  launch p2_start
  measure compiled_p2 "$reverse" 1,32 fp16 graph,compiled 500
  launch p2_end
fi
