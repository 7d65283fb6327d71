"""Peer links between the devices of one machine: collectives through torch.distributed, one process each.

``run_links`` starts ``world_size`` processes with ``torch.multiprocessing.start_processes`` (spawn), set up
as torchrun would (MASTER_ADDR=127.0.0.1, a free MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK): NCCL on CUDA
GPUs (rank r on GPU r), gloo on CPU processes (the path CI runs). Each rank times, after warm-up, a run of
back-to-back collectives between two synchronisations; the slowest rank's time counts (a collective ends
when its last rank does). Conventions are nccl-tests' (``doc/PERFORMANCE.md``):

    all-reduce of S bytes:  algbw = S / t,  busbw = algbw x 2(n-1)/n
    all-gather to S bytes (each rank gives S/n):  algbw = S / t,  busbw = algbw x (n-1)/n

Bus bandwidth is what each link carries and is comparable across rank counts; it is also what the ring
all-reduce model in ``tops_advisor.llm.parallel`` divides by. Rank 0 then copies a buffer between every
ordered pair of GPUs (``tensor.copy_``, peer-to-peer where the driver allows it).

Safety: NVLink multicast (NVLS) stays off on shared machines: the parent sets NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 in its own environment before spawning, so
every child inherits them, and each child reports what it saw. A rank that fails ends the run with its
error on one line; a rank that hangs is caught by the ``timeout_s`` deadline; either way every child is
terminated (SIGTERM, then SIGKILL after a grace period) and joined before ``run_links`` returns or raises,
so no process is left behind. Ctrl-C does the same and re-raises.

Test hook: ``fault="fail:R"`` or ``"hang:R"`` (or the TOPS_ADVISOR_PROBE_FAULT environment variable) makes
rank R raise, or sleep, right after it joined the group (the other ranks then wait in their first collective).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..calibration import CollectiveSample, Links, PeerCopy, Topology
from ..errors import InputError, ProbeError
from ..formatting import size_name

SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
FAULT_ENV = "TOPS_ADVISOR_PROBE_FAULT"
KIB, MIB, GIB = 2**10, 2**20, 2**30
KILL_GRACE_S = 3.0
# The children's own collective timeout: past the parent's deadline, so the parent always acts first.
CHILD_TIMEOUT_MARGIN_S = 30.0


@dataclass(frozen=True)
class LinkPlan:
    """Message sizes and repetitions for one device kind and mode."""

    sizes_bytes: tuple[int, ...]
    small_bytes: tuple[int, ...]
    iter_bytes: int        # timed iterations per size: iter_bytes / size, clamped to [min_iters, max_iters]
    min_iters: int
    max_iters: int
    warmup: int
    small_iters: int
    p2p_bytes: int
    p2p_iters: int


def _powers(lo: int, hi: int, step: int) -> tuple[int, ...]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= step
    return tuple(out)


PLANS: dict[tuple[str, str], LinkPlan] = {
    ("cuda", "quick"): LinkPlan(_powers(MIB, GIB, 4), (8, KIB), 8 * GIB, 5, 50, 5, 200, 256 * MIB, 5),
    ("cuda", "full"): LinkPlan(_powers(MIB, GIB, 2), (8, KIB), 32 * GIB, 20, 200, 10, 1000, GIB, 10),
    ("cpu", "quick"): LinkPlan((64 * KIB, MIB), (8, KIB), 16 * MIB, 3, 20, 1, 20, 0, 0),
    ("cpu", "full"): LinkPlan(_powers(64 * KIB, 8 * MIB, 2), (8, KIB), 64 * MIB, 5, 50, 2, 100, 0, 0),
}


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for all-gather."""
    if n < 1:
        raise InputError(f"world size must be at least 1, got {n}")
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective == "all_gather":
        return (n - 1) / n
    raise InputError(f"unknown collective {collective!r}; expected all_reduce or all_gather")


def collective_sample(collective: str, nbytes: int, time_s: float, n: int) -> CollectiveSample:
    """One timed collective in the nccl-tests convention (``bytes``: the reduced buffer / gathered output)."""
    algbw = nbytes / time_s
    return CollectiveSample(bytes=nbytes, time_us=time_s * 1e6, algbw_gb_s=algbw / 1e9,
                            busbw_gb_s=algbw * bus_factor(collective, n) / 1e9)


def nccl_one_line(exc: BaseException) -> str:
    """An exception as one line: NCCL's own 'NCCL error ...' line (and its 'Last error') when there is one."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    low = [ln.lower() for ln in lines]
    pick = next((i for i, ln in enumerate(low) if "nccl error" in ln), None)
    if pick is None:
        pick = next((i for i, ln in enumerate(low) if "nccl" in ln and
                     any(w in ln for w in ("failed", "timeout", "timed out", "watchdog"))), 0)
    text = lines[pick] if lines else ""
    last = next((i for i, ln in enumerate(low) if ln.startswith("last error")), None)
    if last is not None and last + 1 < len(lines) and last + 1 != pick:
        text += f" (last error: {lines[last + 1]})"
    return f"{type(exc).__name__}: {text}"[:300].rstrip(": ")


def apply_safe_env(environ=None) -> list[str]:
    """Set the NVLink-multicast switches in ``environ`` (os.environ); notes for values that were overridden."""
    environ = os.environ if environ is None else environ
    notes = []
    for key, value in SAFE_ENV.items():
        old = environ.get(key)
        if old is not None and old != value:
            notes.append(f"{key} was {old!r}; set to {value!r} (NVLink multicast stays off on shared machines)")
        environ[key] = value
    return notes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def device_count(device: str) -> int:
    """CUDA GPUs visible to torch (0 on a CPU build); for 'cpu' there is no limit (returns a large number)."""
    if device == "cpu":
        return 1 << 16
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# --- the child side ---------------------------------------------------------------------------------------
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


def _worker(rank: int, world_size: int, device: str, mode: str, port: int, out_dir: str, timeout_s: float,
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


# --- the parent side --------------------------------------------------------------------------------------
@dataclass
class LinksResult:
    """What ``run_links`` measured, the NVLink-multicast switches every rank saw, and the child process ids."""

    links: Links
    child_env: dict[int, dict[str, str | None]] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)


def _terminate(processes) -> None:
    """SIGTERM every live child, SIGKILL what is still alive after the grace period, join them all."""
    for p in processes:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + KILL_GRACE_S
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join(5)


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _failure_message(out: Path, n: int, first_index: int | None, exit_code) -> str:
    errors = {r: e for r in range(n) if (e := _read(out / f"rank{r}.error"))}
    if errors:
        rank = min(errors, key=lambda r: errors[r]["t"])
        others = sorted(r for r in errors if r != rank)
        also = f" (then rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))} too)" if others else ""
        return f"rank {rank} failed: {errors[rank]['message']}{also}"
    rank = first_index if first_index is not None else "?"
    return f"rank {rank} exited with code {exit_code} without an error message (killed, or out of memory?)"


def _timeout_message(out: Path, n: int, timeout_s: float) -> str:
    steps = {r: _read(out / f"rank{r}.step") or {"n": 0, "what": "not started"} for r in range(n)}
    behind = min(s["n"] for s in steps.values())
    stuck = [r for r in range(n) if steps[r]["n"] == behind]
    waiting = [r for r in range(n) if r not in stuck]
    msg = (f"timed out after {timeout_s:g} s: rank{'s' if len(stuck) > 1 else ''} "
           f"{', '.join(map(str, stuck))} stopped at '{steps[stuck[0]]['what']}'")
    if waiting:
        msg += f"; rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} waited at " + \
            ", ".join(f"'{steps[r]['what']}'" for r in waiting[:3])
    return msg


def _world_size(device: str, mode: str, world_size: int | None, timeout_s: float) -> int:
    """The ranks to run; InputError or ProbeError (one line) for a request that cannot run."""
    if device not in ("cuda", "cpu"):
        raise InputError(f"unknown device {device!r}; expected cuda or cpu")
    if mode not in ("quick", "full"):
        raise InputError(f"unknown probe mode {mode!r}; expected quick or full")
    if not timeout_s or timeout_s <= 0:
        raise InputError(f"--timeout {timeout_s}: give a positive number of seconds")
    available = device_count(device)
    n = world_size if world_size is not None else (available if device == "cuda" else 2)
    if n < 2:
        raise ProbeError(f"peer links need at least 2 devices; {n} {'GPU is' if n == 1 else 'GPUs are'} visible")
    if n > available:
        raise ProbeError(f"--world-size {n}, but only {available} CUDA GPU{'s are' if available != 1 else ' is'} "
                         "visible")
    return n


def run_links(device: str = "cuda", mode: str = "quick", world_size: int | None = None, *,
              timeout_s: float = 120.0, progress: Callable[[str], None] | None = None,
              fault: str | None = None, topology: Topology | None = None,
              on_spawn: Callable[[list[int]], None] | None = None) -> LinksResult:
    """Measure collectives (and, on GPUs, peer copies) across ``world_size`` ranks; see the module doc.

    Raises ProbeError (one line) when fewer than 2 devices are available, a rank fails or the deadline
    passes; every child has been terminated and joined by then.
    """
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessExitedException, ProcessRaisedException

    say = progress or (lambda _m: None)
    n = _world_size(device, mode, world_size, timeout_s)
    notes = apply_safe_env()
    fault = fault if fault is not None else os.environ.get(FAULT_ENV)
    say(f"{n} ranks over {'NCCL' if device == 'cuda' else 'gloo'} ({device}, {mode} mode), timeout {timeout_s:g} s")
    with tempfile.TemporaryDirectory(prefix="tops-advisor-links-") as tmp:
        out = Path(tmp)
        ctx = mp.start_processes(_worker, args=(n, device, mode, free_port(), tmp, timeout_s, fault,
                                                progress is not None),
                                 nprocs=n, join=False, start_method="spawn")
        pids = [p.pid for p in ctx.processes]
        if on_spawn:
            on_spawn(pids)
        deadline = time.monotonic() + timeout_s
        spawn_log = logging.getLogger("torch.multiprocessing.spawn")
        level = spawn_log.level
        spawn_log.setLevel(logging.ERROR)  # its 'Terminating process ...' warnings: the one line below says it
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProbeError(_timeout_message(out, n, timeout_s),
                                     hint="every rank was stopped; raise --timeout if the machine is just slow")
                if ctx.join(timeout=min(left, 0.5), grace_period=1.0):
                    break
        except (ProcessRaisedException, ProcessExitedException) as exc:
            code = getattr(exc, "exit_code", None)
            msg = _failure_message(out, n, exc.error_index, code)
            hint = "rerun with NCCL_DEBUG=WARN for NCCL's own log" if device == "cuda" else None
            raise ProbeError(msg, hint=hint) from None
        finally:
            _terminate(ctx.processes)
            spawn_log.setLevel(level)
        raw = _read(out / "result.json")
        child_env = {r: (_read(out / f"rank{r}.env.json") or {}) for r in range(n)}
    if raw is None:
        raise ProbeError("the ranks finished but rank 0 wrote no result")
    links = build_links(raw, n, device, topology, notes, child_env)
    return LinksResult(links=links, child_env=child_env, pids=pids)


def build_links(raw: dict, n: int, device: str, topology: Topology | None, notes: list[str],
                child_env: dict[int, dict]) -> Links:
    """The calibration's ``links`` from rank 0's raw (bytes, seconds) pairs."""
    from .topology import link_kind

    ar = tuple(collective_sample("all_reduce", b, t, n) for b, t in raw["all_reduce"])
    ag = tuple(collective_sample("all_gather", b, t, n) for b, t in raw["all_gather"])
    small = tuple(collective_sample("all_reduce", b, t, n) for b, t in raw["small_all_reduce"])
    graph = tuple(collective_sample("all_reduce", b, t, n) for b, t in raw.get("small_all_reduce_graph", []))
    env = dict(raw.get("environment", {}))
    for key, value in SAFE_ENV.items():
        seen = {r: e.get(key) for r, e in child_env.items()}
        env[key] = value if all(v == value for v in seen.values()) else f"mismatch: {seen}"
        if env[key] != value:
            notes.append(f"{key} was not {value!r} in every rank: {seen}")
    return Links(
        world_size=n, backend="nccl" if device == "cuda" else "gloo", device=device,
        dtype=env.get("dtype", "fp32"), link_kind=link_kind(topology) if device == "cuda" else "",
        all_reduce=ar, all_gather=ag,
        all_reduce_busbw_gb_s=max(s.busbw_gb_s for s in ar),
        all_gather_busbw_gb_s=max((s.busbw_gb_s for s in ag), default=None) or None,
        small_all_reduce=small,
        all_reduce_latency_us=min(s.time_us for s in (small or ar)),  # the floor: tiny messages are noisy
        small_all_reduce_graph=graph,
        all_reduce_graph_latency_us=min(s.time_us for s in graph) if graph else None,
        p2p=tuple(PeerCopy(**c) for c in raw.get("p2p", [])), topology=topology, environment=env,
        notes=tuple(notes) + tuple(raw.get("notes", [])) + (topology.notes if topology else ()))
