#!/bin/bash
# The H200 runs recorded in docs/probe.md: quick probe, full probe, the exhaustive sweep, a sustained run.
# Usage (on the GPU machine, repository root): OUT=dir [SWEEP_ARGS="..."] [GPU_TESTS=1] bash benchmarks/harness/probe_on_device.sh
# Writes everything under ${OUT:-out}. Each step has its own time limit and failing steps don't stop the rest.
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
log() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
log state
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,temperature.gpu,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,clocks_event_reasons.active --format=csv 2>&1 | tee -a "$OUT/log.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$OUT/log.txt"
log quick
t0=$SECONDS; timeout 60 python3 -m tops_advisor probe --quick --json >"$OUT/quick.json" 2>>"$OUT/log.txt"; log "quick: rc $? in $((SECONDS-t0)) s"
log full
t0=$SECONDS; timeout 200 python3 -m tops_advisor probe --full --sustained 30 --json --output "$OUT/h200-sxm.json" >"$OUT/full.json" 2>>"$OUT/log.txt"; log "full: rc $? in $((SECONDS-t0)) s"
log sweep
SWEEP_ARGS=${SWEEP_ARGS:---precision bf16 fp8 fp16 tf32 int8 fp32 --precision-step fp8=2048 fp16=2048 tf32=4096 int8=4096 fp32=4096 --budget-s 100 --precision-budget fp8=30 fp16=20 tf32=20 int8=15 fp32=25}
timeout 260 python3 benchmarks/studies/gemm-sweep/gemm_sweep.py $SWEEP_ARGS --output "$OUT/sweep.json" 2>>"$OUT/log.txt" | tee -a "$OUT/log.txt"
if [ -n "$GPU_TESTS" ]; then
  log gpu-tests
  timeout 60 python3 -m pytest -q -p no:cacheprovider tests/probe/test_gpu.py 2>&1 | tail -15 | tee -a "$OUT/log.txt"
fi
log done
python3 - "$OUT" <<'PY'
import json, sys, pathlib
o = pathlib.Path(sys.argv[1])
for name in ("quick", "full"):
    try:
        d = json.loads((o / f"{name}.json").read_text())
    except Exception as exc:
        print(name, "missing", exc); continue
    c = d["calibration"] or {}
    print(name, {p["precision"]: (round(p["measured_tops"], 1), p["best_shape"], p["article_8192_tops"] and round(p["article_8192_tops"], 1)) for p in d["precisions"]})
    print("  bw", {b["what"]: round(b["gb_s"]) for b in d["bandwidth"]}, "eager", d["kernel_eager_us"], "graph", d["kernel_graph_us"])
    print("  warnings", d["warnings"]); print("  notes", d["notes"][:8])
    if d.get("sustained"): print("  sustained", d["sustained"])
try:
    s = json.loads((o / "sweep.json").read_text())
    for p, v in s["precisions"].items():
        print("sweep", p, v["shapes"], v["complete"], v["seconds"], v["best"][:2], v["article_8192_tops"])
except Exception as exc:
    print("sweep missing", exc)
PY
