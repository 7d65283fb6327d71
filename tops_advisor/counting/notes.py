"""The notes a count adds to its workload (:class:`tops_advisor.workload.Note`), and what the forward did that
they report.

What a count can see of a CUDA-graph capture failure: a copy from a CPU tensor to the device, or a host read
while captured (Marian's fp16 ``torch.isfinite(h).all()`` check: measured on the H200, capture failed with
cudaErrorStreamCaptureUnsupported). Also: an output a CUDA kernel refuses by size, whether the captured path
differs from the eager one, and a model that had to be built on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..workload import Note, NoteKind

CPU_COPY_NOTE = ("its forward copies a tensor made on the CPU to the device ({n}x): CUDA-graph capture fails "
                 "on such a copy, so graph and compiled (CUDA-graph) latencies need the model changed first")
OVERSIZED_NOTE = ("its forward runs PyTorch's channels-last {op} on an output of {n:,} elements (module "
                  "'{module}'): the CUDA kernel refuses outputs of 2^31 - 1 elements or more, so this batch fails on "
                  "the GPU (measured: UperNet-ConvNeXt-S at batch 128, 512x512, on the H200); use a smaller batch")
CAPTURE_READ_NOTE = ("its forward reads a tensor's value on the host while captured ({n}x, first in module "
                     "'{module}'): CUDA-graph capture fails on that synchronisation, so graph and compiled "
                     "(CUDA-graph) latencies need the model changed first")
CAPTURED_NOTE = ("counted as its forward runs under CUDA-graph capture or torch.compile: it asks, and takes "
                 "another path there (transformers materialises the attention mask)")
BUILT_ON_CPU_NOTE = ("built on the CPU and counted through fake tensors: its forward does not run on the meta "
                     "device")


class Oversized(NamedTuple):
    """An operator whose output a CUDA kernel refuses by size."""

    op: str
    elements: int
    module: str


@dataclass
class Findings:
    """What the forward did that a note reports (the host reads are ``HostReads.reads``)."""

    cpu_copies: int = 0                                    # copies of CPU-made tensors to the device
    oversized: list[Oversized] = field(default_factory=list)


def count_notes(found: Findings, host_reads: dict[str, int], captured: bool, asked: bool) -> tuple[Note, ...]:
    """The capture failures the count can see, an output the GPU refuses, then whether the captured path
    differs from the eager one. ``host_reads``: module path -> reads of a value on the host in it; ``asked``:
    the forward asked whether it was captured (a forward that never asks runs the same path when captured)."""
    on_capture_path = captured or not asked
    notes: list[Note] = []
    if found.cpu_copies and on_capture_path:
        notes.append(Note(NoteKind.CAPTURE_FAILS, CPU_COPY_NOTE.format(n=found.cpu_copies)))
    if found.oversized:
        op, n, module = max(found.oversized, key=lambda o: o.elements)
        notes.append(Note(NoteKind.GPU_REFUSES, OVERSIZED_NOTE.format(op=op.removeprefix("aten."), n=n,
                                                                      module=module or "(root)")))
    if host_reads and on_capture_path:
        first = next(iter(host_reads)) or "(root)"
        notes.append(Note(NoteKind.CAPTURE_FAILS, CAPTURE_READ_NOTE.format(n=sum(host_reads.values()), module=first)))
    if captured and asked:
        notes.append(Note(NoteKind.CAPTURED_PATH, CAPTURED_NOTE))
    return tuple(notes)


def source_notes(texts: tuple[str, ...]) -> tuple[Note, ...]:
    """A model source's own notes (how a library model was built and fed)."""
    return tuple(Note(NoteKind.SOURCE, t) for t in texts)
