"""Data-parallel training on several GPUs of one kind: a plan of one step per rank, priced with the link model
tensor parallelism uses (``llm.parallel``: NCCL's ring, the catalog's or a calibration's measured links).

* **DDP** (``torch.nn.parallel.DistributedDataParallel``): every rank holds the whole model and its optimizer
  state; gradients are all-reduced in buckets of 25 MB (``bucket_cap_mb=25``; the first bucket 1 MB,
  torch/nn/parallel/distributed.py ``_DEFAULT_FIRST_BUCKET_BYTES``) as the backward produces them, overlapped with
  the rest of the backward. What the backward cannot hide is exposed, and the last bucket always is: it is ready
  only when the backward ends. DDP's buckets hold a copy of the gradients (``gradient_as_bucket_view=False``, the
  default).
* **FSDP** (full sharding, ZeRO-3; ``torch.distributed.fsdp``): each rank holds 1/N of the weights, gradients
  and optimizer state; each wrapped unit's weights are all-gathered before its forward and again before its
  backward, and its gradients reduce-scattered after it, with the next unit's gather prefetched
  (``BackwardPrefetch.BACKWARD_PRE``, forward prefetch off by default); the forward's and the backward's
  communication overlap their compute, the first gather does not. A rank holds the gathered weights of two
  units at a time.

Not modelled: the SMs NCCL kernels take from compute while they overlap it; stragglers; the network between
servers (a plan beyond one NVLink domain of ``NVLINK_NODE_GPUS`` is priced on the same link and says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Hardware
from ..errors import InputError
from ..llm.parallel import NVLINK_NODE_GPUS, Link, allreduce_time_s, link_for
from .predict import TrainingPrediction
from .workload import MemoryParts

STRATEGIES = ("ddp", "fsdp")
DDP_BUCKET_BYTES = 25 * 1024 * 1024        # bucket_cap_mb=25 (MiB), torch/nn/parallel/distributed.py
DDP_FIRST_BUCKET_BYTES = 1024 * 1024       # _DEFAULT_FIRST_BUCKET_BYTES
FSDP_UNITS_DEFAULT = 12                    # wrapped units when the model does not say (a transformer's blocks)


@dataclass(frozen=True)
class ParallelPlan:
    """One data-parallel step on ``devices`` GPUs: each rank's step at its own batch, the communication."""

    strategy: str
    devices: int
    batch_per_device: int
    link: str
    step_s: float                 # one step on every rank (single-GPU step + exposed communication)
    compute_step_s: float         # the single-GPU step at the per-device batch
    comm_s: float                 # all communication of one step
    exposed_comm_s: float         # the part the compute does not hide
    memory_per_device_bytes: float
    memory_capacity_bytes: float
    assumptions: tuple[str, ...] = ()

    @property
    def global_batch(self) -> int:
        return self.batch_per_device * self.devices

    @property
    def samples_per_s(self) -> float:
        return self.global_batch / self.step_s if self.step_s else 0.0

    @property
    def scaling_efficiency(self) -> float:
        """Throughput per GPU against one GPU's."""
        return self.compute_step_s / self.step_s if self.step_s else 0.0

    @property
    def fits_memory(self) -> bool:
        return self.memory_per_device_bytes <= self.memory_capacity_bytes


def _buckets(grad_bytes: float) -> list[float]:
    first = min(grad_bytes, DDP_FIRST_BUCKET_BYTES)
    rest = grad_bytes - first
    n = math.ceil(rest / DDP_BUCKET_BYTES) if rest > 0 else 0
    return [first] + [rest / n] * n if n else [first]


def ddp_comm(grad_bytes: float, n: int, link: Link, backward_s: float) -> tuple[float, float]:
    """(all communication, exposed) of DDP's bucketed all-reduce: buckets leave in order as the backward
    makes them; the backward's time after the first bucket hides what it can, never the last bucket."""
    times = [allreduce_time_s(b, n, link) for b in _buckets(grad_bytes)]
    total = sum(times)
    hidden_window = backward_s * (1 - times[0] / total) if total else 0.0
    return total, max(times[-1], total - hidden_window)


def fsdp_comm(param_bytes: float, n: int, link: Link, forward_s: float, backward_s: float,
              units: int) -> tuple[float, float]:
    """(all communication, exposed) of FSDP: an all-gather of the weights in the forward, another in the
    backward and a reduce-scatter of the gradients; each is half an all-reduce's traffic ((n-1)/n of the bytes)."""
    if n <= 1:
        return 0.0, 0.0
    one = allreduce_time_s(param_bytes, n, link) / 2           # all-gather or reduce-scatter of everything
    fwd, bwd = one, 2 * one
    first = one / max(units, 1)
    return fwd + bwd, first + max(0.0, fwd - forward_s) + max(0.0, bwd - backward_s)


def _memory(m: MemoryParts, strategy: str, n: int, units: int) -> float:
    if strategy == "ddp":
        return m.peak_bytes + m.all_gradients      # the buckets' copy of the gradients
    sharded = (m.weights + m.gradients + m.optimizer_state) / n
    gathered = 2 * m.weights / max(units, 1)
    return sharded + gathered + m.activations + m.temporaries + m.inputs + m.rounding


def plan_data_parallel(pred: TrainingPrediction, hw: Hardware, strategy: str, devices: int, *,
                       calibration=None, units: int = FSDP_UNITS_DEFAULT, reserve_bytes: float = 0.0) -> ParallelPlan:
    """``pred`` (one GPU's step at the per-device batch) on ``devices`` GPUs of ``hw`` with DDP or FSDP."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if devices < 1:
        raise InputError(f"--devices must be at least 1, got {devices}")
    link = link_for(hw, calibration, mode="eager")
    m = pred.memory
    if strategy == "ddp":
        comm, exposed = ddp_comm(m.all_gradients, devices, link, pred.backward_s)
    else:
        comm, exposed = fsdp_comm(m.weights, devices, link, pred.forward_s, pred.backward_s, units)
    notes = (f"{strategy}: {link.name} ({link.source})",)
    if devices > NVLINK_NODE_GPUS:
        notes += (f"more than {NVLINK_NODE_GPUS} GPUs: priced on the same link; the network between servers "
                  "is not modelled",)
    return ParallelPlan(strategy, devices, pred.batch, link.name, pred.step_s + exposed, pred.step_s, comm, exposed,
                        _memory(m, strategy, devices, units) + reserve_bytes, hw.memory_bytes, notes)
