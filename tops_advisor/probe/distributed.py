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

This module is the parent side; each rank runs ``link_ranks.worker``; the plans and the bus-bandwidth
arithmetic are ``collectives.py``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..calibration import Links, PeerCopy, Topology
from ..errors import InputError, ProbeError
from .collectives import FAULT_ENV, SAFE_ENV, collective_sample

KILL_GRACE_S = 3.0  # SIGTERM, then SIGKILL a child still alive after this long


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

    from .link_ranks import worker

    say = progress or (lambda _m: None)
    n = _world_size(device, mode, world_size, timeout_s)
    notes = apply_safe_env()
    fault = fault if fault is not None else os.environ.get(FAULT_ENV)
    say(f"{n} ranks over {'NCCL' if device == 'cuda' else 'gloo'} ({device}, {mode} mode), timeout {timeout_s:g} s")
    with tempfile.TemporaryDirectory(prefix="tops-advisor-links-") as tmp:
        out = Path(tmp)
        ctx = mp.start_processes(worker, args=(n, device, mode, free_port(), tmp, timeout_s, fault,
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
