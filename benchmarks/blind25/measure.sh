#!/bin/bash
# Blind round 20 on the H200 (issue 15: graph and eager, fp16 at 1,8,32,128 and fp32 at 1,32), one device call:
#   bash benchmarks/blind25/measure.sh $OUT
bash benchmarks/blind_measure.sh "$1" benchmarks/blind25/models.txt 300 170
