#!/bin/bash
# Blind round 21 on the H200 (issue 15: graph and eager, fp16 at 1,8,32,128 and fp32 at 1,32), one device call:
#   bash benchmarks/blind26/measure.sh $OUT
bash benchmarks/blind_measure.sh "$1" benchmarks/blind26/models.txt 320 230
