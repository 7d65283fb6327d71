#!/bin/bash
# Blind round 16 on the H200 (issue 15: graph/eager fp16 at 1,8,32,128 and fp32 at 1,32; issue 16: AMP
# eager/graph and compiled fp16 at 1,32). Run from the repository root on the GPU machine, in three calls of
# under 10 minutes:
#   bash benchmarks/blind21/measure.sh 1 $OUT   # fp16, then fp32 and AMP: eager pass A and graph
#   bash benchmarks/blind21/measure.sh 2 $OUT   # eager pass B (fp16, fp32, AMP), then compiled in list order
#   bash benchmarks/blind21/measure.sh 3 $OUT   # compiled in reverse list order (a model both reach: part 2's)
# Eager is measured twice per point, minutes apart (passes A and B), with the probe's launch time taken
# between the steps: the host's speed drifts within minutes (results/blind20/host_drift.json), and the score
# pairs the faster pass with the fastest probe (blind_round.py score --eager-best --launch-files).
set -u
part=$1; out=$2
all=$(grep -v '^#' benchmarks/blind21/models.txt | grep -v '^$' | paste -sd,)
reverse=$(grep -v '^#' benchmarks/blind21/models.txt | grep -v '^$' | tac | paste -sd,)
launch() { python3 benchmarks/launch_time.py > "$out/launch_$1.json" 2>> "$out/log.txt"; }
measure() {  # name, models, batches, dtypes, modes, seconds
  timeout "$6" python3 benchmarks/measure_models.py --models "$2" --batches "$3" --dtypes "$4" \
    --modes "$5" --repeats 20 --time-budget $(( $6 - 40 )) --out "$out/$1.json" 2>> "$out/log.txt"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> "$out/log.txt"
if [ "$part" = 1 ]; then
  launch p1_start
  measure fp16 "$all" 1,8,32,128 fp16 eager,graph 250
  launch p1_mid
  measure fp32 "$all" 1,32 fp32 eager,graph 140
  measure amp "$all" 1,32 amp eager,graph 140
  launch p1_end
elif [ "$part" = 2 ]; then
  launch p2_start
  measure fp16_b "$reverse" 1,8,32,128 fp16 eager 150
  measure fp32_b "$reverse" 1,32 fp32 eager 70
  measure amp_b "$reverse" 1,32 amp eager 70
  launch p2_mid
  measure compiled_p2 "$all" 1,32 fp16 graph,compiled 250
else
  launch p3_start
  measure compiled_p3 "$reverse" 1,32 fp16 graph,compiled 540
  launch p3_end
fi
