"""The long exhaustive GEMM shape sweep: the reference the probe's short search must come within 5% of.

Every (m, n, k) on a grid (default 1024..16384 in steps of 1024 for each of the three, 4096 shapes) is timed
like the probe times (random operands, L2 flush before each run, CUDA events, median of repeats). Prints
the best shapes per precision and writes every result as JSON. Ctrl-C or --budget-s stops a precision early
and keeps what was measured (mamf-finder's habit).

    python benchmarks/studies/gemm-sweep/gemm_sweep.py --precision bf16 --output sweep.json
    python benchmarks/studies/gemm-sweep/gemm_sweep.py --precision bf16 fp8 --step 1024 --precision-step fp32=2048
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", nargs="+", default=["bf16"])
    ap.add_argument("--start", type=int, default=1024)
    ap.add_argument("--stop", type=int, default=16384)
    ap.add_argument("--step", type=int, default=1024)
    ap.add_argument("--precision-step", nargs="*", default=[], metavar="P=STEP",
                    help="A coarser step for some precisions, e.g. fp32=2048.")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=None, help="Stop each precision after this many seconds.")
    ap.add_argument("--precision-budget", nargs="*", default=[], metavar="P=SECONDS",
                    help="Another time budget for some precisions, e.g. fp32=20.")
    ap.add_argument("--descending", action="store_true",
                    help="Walk m from the largest down (checks that the order of the sweep does not matter).")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--output", default=None)
    return ap.parse_args(argv)


def time_shape(backend, precision: str, m: int, n: int, k: int, device, repeats: int) -> float | None:
    """TOPS of one (m, n, k) product, timed as the probe times it; None where the shape is unsupported or
    does not fit in memory."""
    import torch

    from tops_advisor.errors import ShapeUnsupported
    from tops_advisor.probe.gemm import make_gemm

    try:
        fn = make_gemm(precision, m, n, k, device)
        t = backend.time(fn, warmup=1, repeats=repeats, flush=True)
    except ShapeUnsupported:
        return None
    except RuntimeError as exc:
        if "out of memory" not in str(exc).lower():
            raise
        torch.cuda.empty_cache()
        return None
    finally:
        fn = None
    return 2.0 * m * n * k / t.median_s / 1e12


def sweep_precision(backend, precision: str, sizes: range, m_sizes: range, budget_s: float | None, device,
                    repeats: int) -> tuple[list[tuple], bool]:
    """(m, n, k, TOPS) of every shape of the grid, and whether the grid was completed (not stopped by the
    budget or Ctrl-C)."""
    rows, t_start = [], time.perf_counter()
    try:
        for m in m_sizes:
            for n in sizes:
                for k in sizes:
                    if budget_s and time.perf_counter() - t_start > budget_s:
                        raise TimeoutError
                    tops = time_shape(backend, precision, m, n, k, device, repeats)
                    if tops is not None:
                        rows.append((m, n, k, tops))
            print(f"{precision} m={m}: {len(rows)} shapes, best so far {max(r[3] for r in rows):.1f} TOPS",
                  file=sys.stderr, flush=True)
    except (KeyboardInterrupt, TimeoutError):
        return rows, False
    return rows, True


def precision_summary(rows: list[tuple], step: int, complete: bool, seconds: float) -> dict:
    best = sorted(rows, key=lambda r: -r[3])[:10]
    by_shape = {(r[0], r[1], r[2]): r[3] for r in rows}
    return {
        "step": step, "shapes": len(rows), "complete": complete, "seconds": round(seconds, 1),
        "best": [{"m": m, "n": n, "k": k, "tops": tops} for m, n, k, tops in best],
        "article_8192_tops": by_shape.get((8192, 8192, 8192)),
        "all": [list(r) for r in rows],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import torch

    from tops_advisor.probe.gemm import make_gemm
    from tops_advisor.probe.kit import make_backend

    backend = make_backend(args.device)
    device = getattr(backend, "device", "cpu")
    steps = {p: int(s) for p, s in (x.split("=") for x in args.precision_step)}
    budgets = {p: float(s) for p, s in (x.split("=") for x in args.precision_budget)}
    out = {"command": " ".join(["python", "benchmarks/studies/gemm-sweep/gemm_sweep.py", *(argv or sys.argv[1:])]),
           "torch": torch.__version__, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu", "precisions": {}}
    # Spin up the clocks before the first timing.
    warm = make_gemm("bf16" if args.device == "cuda" else "fp32", 4096, 4096, 4096, device)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        warm()
        backend.synchronize()
    for p in args.precision:
        step, budget_s = steps.get(p, args.step), budgets.get(p, args.budget_s)
        sizes = range(args.start, args.stop + 1, step)
        t_start = time.perf_counter()
        rows, complete = sweep_precision(backend, p, sizes, sizes[::-1] if args.descending else sizes, budget_s,
                                         device, args.repeats)
        out["precisions"][p] = summary = precision_summary(rows, step, complete, time.perf_counter() - t_start)
        if rows:
            best = summary["best"][0]
            print(f"{p}: best {best['tops']:.1f} TOPS at {best['m']}x{best['n']}x{best['k']} over "
                  f"{len(rows)} shapes{'' if complete else ' (stopped early)'}", flush=True)
        if args.output:  # after each precision, so a kill keeps the finished ones
            with open(args.output, "w", encoding="utf-8") as fh:
                json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
