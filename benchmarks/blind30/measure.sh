#!/bin/bash
# Blind round 25 on the H200 (issue 15: graph and eager, fp16 at 1,8,32,128 and fp32 at 1,32), one device call
# sized to the session's remaining device time:
#   bash benchmarks/blind30/measure.sh $OUT
bash benchmarks/blind_measure.sh "$1" benchmarks/blind30/models.txt 150 80
