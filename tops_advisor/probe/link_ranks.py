"""The child side of the links probe: one spawned process per rank (``worker``), which joins the group, checks
a sum, times the collectives of its plan, and on rank 0 the peer copies, writing how far it got, its error or
rank 0's result as files in the directory the parent reads (``distributed.run_links``)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path

from ..errors import ProbeError
from ..formatting import size_name
from .collectives import CHILD_TIMEOUT_MARGIN_S, PLANS, SAFE_ENV, LinkPlan, nccl_one_line


def _write(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


class _Steps:
    """Each rank records how far it got, so a timeout can say which rank stopped where."""

    def __init__(self, out_dir: Path, rank: int):
        self.path, self.n = out_dir / f"rank{rank}.step", 0

    def __call__(self, what: str, advance: bool = True) -> None:
        self.n += advance
        _write(self.path, {"n": self.n, "what": what})


def _fault_for(fault: str | None, rank: int) -> str | None:
    if not fault:
        return None
    kind, _, which = fault.partition(":")
    if kind not in ("fail", "hang") or not which.strip().isdigit():
        return None
    return kind if int(which) == rank else None


def worker(rank: int, world_size: int, device: str, mode: str, port: int, out_dir: str, timeout_s: float,
            fault: str | None, verbose: bool) -> None:
    """One rank (runs in a spawned process)."""
    out = Path(out_dir)
    step = _Steps(out, rank)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size),
                      LOCAL_RANK=str(rank))
    _write(out / f"rank{rank}.env.json", {k: os.environ.get(k) for k in SAFE_ENV})
    try:
        step("start")
        _run_rank(rank, world_size, device, mode, timeout_s, out, step, verbose, _fault_for(fault, rank))
        step("done")
    except BaseException as exc:
        _write(out / f"rank{rank}.error", {"t": time.time(), "message": nccl_one_line(exc)})
        raise


def _run_rank(rank, n, device, mode, timeout_s, out: Path, step, verbose, fault: str | None = None) -> None:
    r = _Rank(rank, n, device, PLANS[(device, mode)], step, verbose)
    r.join(timeout_s, fault)
    r.check_sum()
    result: dict = {"all_reduce": [], "all_gather": [], "small_all_reduce": [], "notes": []}
    result["small_all_reduce"] = r.small_all_reduces()
    result["all_reduce"], result["all_gather"] = r.large_collectives()
    if device == "cuda":
        result["small_all_reduce_graph"] = []
        try:
            r.small_all_reduces_in_graph(result["small_all_reduce_graph"])
        except Exception as exc:  # noqa: BLE001 - optional: an NCCL too old for graph capture
            result["notes"].append(f"all-reduce in a CUDA graph failed: {nccl_one_line(exc)}")
    step("destroy_process_group")
    r.dist.destroy_process_group()
    if rank == 0:
        if device == "cuda" and r.plan.p2p_bytes:
            step("p2p copies")
            result["p2p"] = _p2p(n, r.plan, r.say)
        else:
            result["notes"].append("peer-to-peer copies are GPU-only: skipped on the CPU")
        result["environment"] = r.environment()
        _write(out / "result.json", result)


class _Rank:
    """One rank's collectives. Timing here is not the kit's per-call timer: a collective ends when its last
    rank does, so each rank times a run of back-to-back calls between two synchronisations (a barrier first)
    and the slowest rank's mean counts."""

    def __init__(self, rank: int, n: int, device: str, plan: LinkPlan, step, verbose: bool):
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.rank, self.n, self.device, self.plan, self.step = \
            torch, dist, rank, n, device, plan, step
        self.say = (lambda m: sys.stderr.write(f"probe links: {m}\n")) if verbose and rank == 0 else (lambda m: None)
        if device == "cuda":
            torch.cuda.set_device(rank)
            self.dev, self.dtype = torch.device("cuda", rank), torch.bfloat16  # what tensor parallelism sends
            self.sync = torch.cuda.synchronize
        else:
            torch.set_num_threads(1)
            self.dev, self.dtype = torch.device("cpu"), torch.float32
            self.sync = lambda: None  # gloo collectives return when done
        self.el = torch.empty((), dtype=self.dtype).element_size()

    def join(self, timeout_s: float, fault: str | None) -> None:
        self.step("init_process_group")
        kwargs = {"device_id": self.dev} if self.device == "cuda" else {}
        self.dist.init_process_group("nccl" if self.device == "cuda" else "gloo", rank=self.rank,
                                     world_size=self.n,
                                     timeout=_dt.timedelta(seconds=timeout_s + CHILD_TIMEOUT_MARGIN_S), **kwargs)
        if fault == "hang":  # test hook: joined the group, then never takes part in a collective
            self.step("hang (test hook)", advance=False)
            time.sleep(3600)
        if fault == "fail":
            raise RuntimeError("injected failure (test hook)")

    def slowest(self, t: float) -> float:
        x = self.torch.tensor([t], dtype=self.torch.float64, device=self.dev)
        self.dist.all_reduce(x, op=self.dist.ReduceOp.MAX)
        return float(x.item())

    def timed(self, fn, iters: int, warmup: int) -> float:
        """Seconds per call of ``fn`` on the slowest rank."""
        for _ in range(warmup):
            fn()
        self.sync()
        self.slowest(0.0)  # a barrier
        self.sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        self.sync()
        return self.slowest((time.perf_counter() - t0) / iters)

    def iters_for(self, nbytes: int) -> int:
        plan = self.plan
        return max(plan.min_iters, min(plan.max_iters, plan.iter_bytes // max(nbytes, 1)))

    def check_sum(self) -> None:
        self.step("check the sum")
        check = self.torch.full((4,), float(self.rank + 1), dtype=self.torch.float32, device=self.dev)
        self.dist.all_reduce(check)
        want = self.n * (self.n + 1) / 2  # 1 + 2 + ... + n
        if not bool((check == want).all()):
            raise ProbeError(f"all-reduce gave {check.tolist()}, not {want:g} on every element: the links are "
                             "not trustworthy")

    def small_all_reduces(self) -> list[tuple[int, float]]:
        out = []
        for nbytes in self.plan.small_bytes:
            numel = max(1, nbytes // self.el)
            self.step(f"all_reduce {size_name(numel * self.el)}")
            x = self.torch.ones(numel, dtype=self.dtype, device=self.dev)
            out.append((numel * self.el, self.timed(lambda x=x: self.dist.all_reduce(x), self.plan.small_iters,
                                                    self.plan.warmup * 4)))
        return out

    def large_collectives(self) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """(all-reduce, all-gather) (bytes, seconds) over the plan's sizes."""
        torch, dist, el, n = self.torch, self.dist, self.el, self.n
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        reduces, gathers = [], []
        for nbytes in self.plan.sizes_bytes:
            numel = nbytes // el
            self.step(f"all_reduce {size_name(numel * el)}")
            x = torch.ones(numel, dtype=self.dtype, device=self.dev)
            reduces.append((numel * el, self.timed(lambda x=x: dist.all_reduce(x), self.iters_for(nbytes),
                                                   self.plan.warmup)))
            del x
            per_rank = nbytes // (el * n)
            self.step(f"all_gather {size_name(per_rank * el * n)}")
            inp = torch.ones(per_rank, dtype=self.dtype, device=self.dev)
            outp = torch.empty(per_rank * n, dtype=self.dtype, device=self.dev)
            t = self.timed(lambda o=outp, i=inp: gather(o, i), self.iters_for(nbytes), self.plan.warmup)
            gathers.append((per_rank * el * n, t))
            del inp, outp
            self.say(f"{size_name(nbytes)}: all-reduce {reduces[-1][1] * 1e6:.1f} us, all-gather {t * 1e6:.1f} us")
        return reduces, gathers

    def small_all_reduces_in_graph(self, out: list) -> None:
        """Appends (bytes, seconds) per small size to ``out`` (so what ran before a failure is kept)."""
        for nbytes in self.plan.small_bytes:
            numel = max(1, nbytes // self.el)
            self.step(f"all_reduce {size_name(numel * self.el)} in a CUDA graph")
            x = self.torch.ones(numel, dtype=self.dtype, device=self.dev)
            out.append((numel * self.el, _graph_all_reduce_s(self.torch, self.dist, x, self.timed)))

    def environment(self) -> dict[str, str]:
        torch = self.torch
        env = {"torch": torch.__version__, "backend": "nccl" if self.device == "cuda" else "gloo",
               "dtype": "bf16" if self.dtype == torch.bfloat16 else "fp32"}
        if self.device == "cuda":
            try:
                env["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
            except Exception:  # noqa: BLE001 - a version string is optional
                pass
            env["gpu"] = torch.cuda.get_device_name(0)  # the kit's environment() name for it
        return env


GRAPH_CALLS = 20


def _graph_all_reduce_s(torch, dist, x, timed) -> float:
    """Seconds per all-reduce of ``x`` with ``GRAPH_CALLS`` of them captured in a CUDA graph and replayed (the
    cost a CUDA-graph decode step pays: no Python or launch cost per call)."""
    from .kit import capture_graph

    g = capture_graph(lambda: dist.all_reduce(x), calls=GRAPH_CALLS)
    return timed(g.replay, 20, 3) / GRAPH_CALLS


def _p2p(n: int, plan: LinkPlan, say) -> list[dict]:
    """Rank 0 copies ``p2p_bytes`` from GPU i to GPU j for every ordered pair; bytes / time per direction."""
    import torch

    out = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            src = torch.empty(plan.p2p_bytes, dtype=torch.uint8, device=f"cuda:{i}")
            dst = torch.empty(plan.p2p_bytes, dtype=torch.uint8, device=f"cuda:{j}")

            def both(i=i, j=j):
                torch.cuda.synchronize(i)
                torch.cuda.synchronize(j)

            for _ in range(2):
                dst.copy_(src)
            both()
            t0 = time.perf_counter()
            for _ in range(plan.p2p_iters):
                dst.copy_(src)
            both()
            t = (time.perf_counter() - t0) / plan.p2p_iters
            out.append({"src": i, "dst": j, "bytes": plan.p2p_bytes, "gb_s": plan.p2p_bytes / t / 1e9,
                        "peer_access": bool(torch.cuda.can_device_access_peer(i, j))})
            del src, dst
    if out:
        say("p2p copies: " + ", ".join(f"{c['src']}->{c['dst']} {c['gb_s']:.0f} GB/s" for c in out[:8]))
    return out
