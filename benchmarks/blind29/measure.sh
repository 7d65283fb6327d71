#!/bin/bash
# Blind round 24 on the H200 (issue 15: graph and eager, fp16 at 1,8,32,128 and fp32 at 1,32), one device call:
#   bash benchmarks/blind29/measure.sh $OUT
bash benchmarks/blind_measure.sh "$1" benchmarks/blind29/models.txt 320 230
