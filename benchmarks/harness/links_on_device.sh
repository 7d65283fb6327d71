#!/bin/bash
# The multi-GPU runs of docs/probe.md "Several GPUs": topology, `probe --all-gpus`, tensor-parallel
# decode of a LLaMA-3-8B-shaped model against the prediction, and an injected hang on real GPUs.
# Usage (on a machine with 2 or more GPUs, repository root): OUT=dir [TP="1 2 4"] bash benchmarks/harness/links_on_device.sh
# Writes everything under ${OUT:-out}. Each step has its own time limit; a failing step does not stop the rest.
OUT=${OUT:-out}
mkdir -p "$OUT"
# NVLink multicast stays off (shared machines); tops_advisor sets these again before it spawns ranks.
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
log() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
n=$(python3 -c 'import torch; print(torch.cuda.device_count())')
log "GPUs: $n; $(python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())')"
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
nvidia-smi nvlink --status >>"$OUT/topo.txt" 2>&1
head -20 "$OUT/topo.txt" | tee -a "$OUT/log.txt"

log "probe --all-gpus --full"
t0=$SECONDS
timeout 330 python3 -m tops_advisor probe --all-gpus --full --json --output "$OUT/h200-sxm-links.json" \
  >"$OUT/links.json" 2>>"$OUT/log.txt"
log "probe --all-gpus: rc $? in $((SECONDS-t0)) s"

for tp in ${TP:-1 2 4}; do
  [ "$tp" -le "$n" ] || { log "tp $tp skipped: only $n GPUs"; continue; }
  log "tensor-parallel decode, tp $tp"
  timeout 300 torchrun --standalone --nproc-per-node "$tp" benchmarks/harness/llm_tp_measure.py \
    --calibration "$OUT/h200-sxm-links.json" --batches 1,8,32 --contexts 1024,4096 \
    --out "$OUT/llm_tp${tp}.json" 2>>"$OUT/log.txt" | tee -a "$OUT/log.txt"
done

log "injected hang on rank 1 over NCCL (expect exit 2, one line naming rank 1, no process left)"
TOPS_ADVISOR_PROBE_FAULT=hang:1 timeout 90 python3 -m tops_advisor probe --all-gpus --links-only --timeout 20 \
  2>&1 | tail -3 | tee -a "$OUT/log.txt"
log "hang: rc ${PIPESTATUS[0]}; spawned ranks left: $(pgrep -c -f multiprocessing.spawn || true)"

python3 - "$OUT" <<'PY' | tee -a "$OUT/log.txt"
import json, pathlib, sys
o = pathlib.Path(sys.argv[1])
try:
    d = json.loads((o / "links.json").read_text())
    l = d["links"] or {}
    print("links", {k: l.get(k) for k in ("world_size", "link_kind", "topology", "all_reduce_busbw_gb_s",
                                            "all_gather_busbw_gb_s", "all_reduce_latency_us")})
    for c in l.get("collectives", []):
        print(f"  {c['collective']:10s} {c['size']:>8s} {c['time_us']:10.1f} us  algbw {c['algbw_gb_s']:8.1f}"
              f"  busbw {c['busbw_gb_s']:8.1f} GB/s")
    for c in l.get("p2p", []):
        print(f"  p2p {c['src']}->{c['dst']} {c['gb_s']:.0f} GB/s peer_access={c['peer_access']}")
    print("  notes", l.get("notes"), "skipped", d.get("links_skipped"))
except Exception as exc:
    print("links missing", exc)
for f in sorted(o.glob("llm_tp*.json")):
    r = json.loads(f.read_text())
    for row in r["results"]:
        print(f.name, row["mode"], row["batch"], row["context"], round(row["median_ms"], 3),
              {k: round(v, 1) for k, v in row.items() if k.startswith("error_pct")})
PY
