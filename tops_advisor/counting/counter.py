"""Count a PyTorch model: run it once and turn every ATen operator call into an :class:`OpRecord`.

The engine is a ``TorchDispatchMode`` (it sees each ATen operator with its real shapes after autograd and
composite decomposition) on meta tensors, or on fake tensors when the model is real: no weight is ever
materialised or computed on, so a 70B-parameter model counts in seconds and little memory. A thin
``TorchFunctionMode`` catches ``F.scaled_dot_product_attention`` and ``F.rms_norm`` before they decompose
(on meta/CPU tensors SDPA runs its math path: matmul, softmax, matmul) and counts each as the one fused
kernel it is on a GPU. Forward hooks give each operator the path of the module it ran in.

The counter records what the model computes, plus the facts (``lowering.OpFacts``) a lowering needs;
``count_module`` then applies a lowering (``lowering.lower_pytorch_cuda`` by default) as its own step.

This module holds the two entry points, ``count`` and ``count_module``; the steps live beside it:
``forward.py`` runs the pass, ``dispatch.py`` routes each call, ``recording.py`` costs and records it (with
``layout.py``, ``attention_choice.py``, ``precision.py`` and ``dataflow.py``), ``state.py`` holds the run,
``notes.py`` says what the workload's notes report, ``lowering/`` makes the kernels.

Why not fvcore's JIT trace: in this torch version ``torch.jit.trace`` of a convolution on the meta device
fails (``TypeError: cond must be a bool``), and a trace on real tensors needs the model's memory.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace
from pathlib import Path

import torch

from ..errors import CountingError, ForwardFailed, InputError, ModelFileError
from ..kinds import Lowering
from ..units import AMP, parse_precision
from ..workload import Note, NoteKind, Workload
from .forward import leading_batch, prepare, run_forward
from .library_models import LibraryModel
from .lowering import lower
from .model_file import ModelFile
from .notes import BUILT_ON_CPU_NOTE, count_notes, source_notes
from .precision import COUNT_DTYPES, NARROW, resolve_dtype
from .reuse import annotate_reuse
from .sources import ModelSource, load_model
from .state import CountingRun
from .tensors import flat_tensors, itemsize

__all__ = ["COUNT_DTYPES", "UnsupportedOpWarning", "count", "count_module", "resolve_dtype"]


class UnsupportedOpWarning(UserWarning):
    """Some operators have no counting formula and were counted as zero operations."""


def report_unsupported(label: str, unsupported: dict[str, int], strict: bool) -> None:
    """Warn about operators counted as zero operations (``strict``: raise CountingError)."""
    if not unsupported:
        return
    listing = ", ".join(f"{op} ({n} call{'s' if n > 1 else ''})" for op, n in unsupported.items())
    if strict:
        raise CountingError(
            f"{label}: {len(unsupported)} operator(s) have no counting formula: {listing}",
            hint="drop --strict to count them as zero operations (their bytes are still counted), or "
                 "add a handle in tops_advisor/counting/handles/")
    warnings.warn(f"{label}: no counting formula for {listing}; counted as zero operations",
                  UnsupportedOpWarning, stacklevel=3)


def count_module(module: torch.nn.Module, inputs, dtype: str | None = None, *, name: str | None = None,
                 batch: int | None = None, strict: bool = False, source: str = "",
                 lowering: str = Lowering.PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Count one forward pass of ``module`` on ``inputs`` (a tensor, a tuple, or a dict of keyword inputs).

    ``dtype`` (fp32, tf32, fp16, bf16, fp8, int8; None: the module's own) casts the module's floating-point
    parameters and buffers *in place* (like ``module.half()``) and the floating-point inputs. Meta tensors
    are counted as they are; real tensors are replaced by fake ones, so nothing is computed either way.
    Unsupported operators are listed in ``unsupported_ops`` and warned about (``strict``: CountingError).
    ``lowering`` (``lowering.LOWERINGS``) turns the counted operators into the kernels a stack launches:
    "pytorch-cuda" (eager PyTorch on a CUDA GPU) or "none" (the operators as counted). ``captured``: the
    forward as it runs under CUDA-graph capture or torch.compile (``capture.py``; ``capture.captured_for``).
    Every operator is counted in the forward phase (``OpRecord.phase``).
    """
    label = source or type(module).__name__
    dtype = resolve_dtype(dtype, module)
    if dtype in NARROW:
        from ..scaling import retype

        base = count_module(module, inputs, "fp16", name=name, batch=batch, strict=strict, source=source,
                            lowering=lowering, captured=captured)
        return retype(base, dtype)
    args, kwargs, tensors, on_meta = prepare(module, inputs, dtype)
    input_bytes = float(sum(a.numel() * itemsize(a) for a in flat_tensors((args, kwargs))))
    # dtype amp: an fp32 model under autocast (counting/amp.py)
    run = CountingRun("fp32" if dtype == AMP else dtype, tensors, strict, input_bytes, autocast=dtype == AMP)
    asked = run_forward(module, args, kwargs, run, on_meta, label, captured)
    records = run.recorder.records
    if lowering == Lowering.PYTORCH_CUDA:   # which activations an L2 may still hold (roofline/l2.py)
        records = annotate_reuse(records)
    ops = lower(lowering, records)

    params = {id(p): p for p in module.parameters()}.values()
    unsupported = dict(sorted(run.recorder.unsupported.items()))
    report_unsupported(label, unsupported, strict)
    return Workload(
        name=name or type(module).__name__, batch=leading_batch((args, kwargs)) if batch is None else batch,
        dtype=dtype, ops=ops, params=int(sum(p.numel() for p in params)),
        param_bytes=float(sum(p.numel() * itemsize(p) for p in params)), input_bytes=input_bytes,
        activation_peak_bytes=float(run.memory.peak_bytes), unsupported_ops=unsupported, source=source,
        lowering=lowering, assumptions=tuple(run.host.assumptions), module_calls=run.modules.calls,
        python_calls=run.python.calls, empty_module_calls=run.modules.empty_calls, captured=captured,
        capture_sensitive=asked, notes=count_notes(run.found, run.host.reads, captured, asked))


def _count_source(source: ModelSource, batch: int, dtype: str, strict: bool, label: str, meta: bool,
                  lowering: str = Lowering.PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Build and count; a model whose forward cannot run on the meta device (it makes a CPU tensor and mixes
    it with its weights: wav2vec2's positional convolution) is built again on the CPU and counted through
    fake tensors, which allocates its weights once."""
    module = source.build(meta=meta)
    on_meta = all(t.is_meta for t in module.parameters())
    importable = getattr(source, "importable", contextlib.nullcontext)  # a model file's neighbours, in forward()
    try:
        with importable():
            return count_module(module, source.inputs(batch, meta=on_meta), dtype, name=source.stem,
                                batch=batch, strict=strict, source=label, lowering=lowering, captured=captured)
    except ForwardFailed as exc:
        if not meta or "meta" not in exc.detail:  # only a meta-device mismatch is worth a second build
            raise
    del module
    w = _count_source(source, batch, dtype, strict, label, meta=False, lowering=lowering, captured=captured)
    return replace(w, notes=w.notes + (Note(NoteKind.COUNTED_ON_CPU, BUILT_ON_CPU_NOTE),))


def count(model: str | Path | ModelSource, batch: int = 1, dtype: str = "fp32",
          strict: bool = False, lowering: str = Lowering.PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Count one forward pass of a model file (``build_model()``, ``example_inputs(batch_size)``) or a library
    model (``timm:NAME``, ``torchvision:NAME``, ``hf:PATH_OR_ID``).

    ``model`` is a path or spec, or a model already loaded (``sources.load_model``: imported once, counted at
    several batches or also measured). The model is built on the meta device when its code allows (no
    weight memory, no initialisation time), else on the CPU and counted through fake tensors. ``lowering``:
    see ``count_module`` ("inductor-cuda" for torch.compile); ``captured``: as it runs under CUDA-graph capture
    (``capture.captured_for(mode)``).
    """
    label = model.label if isinstance(model, (ModelFile, LibraryModel)) else str(model)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise ModelFileError(f"{label}: batch must be a positive integer, got {batch!r}")
    try:
        dtype = parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise ModelFileError(f"{label}: {exc}", hint=exc.hint) from None
    source = load_model(model)
    try:
        w = _count_source(source, batch, dtype, strict, label, meta=True, lowering=lowering, captured=captured)
    except ForwardFailed as exc:
        on = f"example_inputs({batch})" if isinstance(source, ModelFile) else f"its inputs at batch {batch}"
        raise ModelFileError(f"{label}: the forward pass failed on {on}: {exc.detail}") from None
    return replace(w, notes=w.notes + source_notes(source.notes)) if source.notes else w
