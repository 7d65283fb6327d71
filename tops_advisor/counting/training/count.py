"""``count_training``: a model (file, ``timm:``, ``torchvision:``, ``hf:``) counted for one optimizer step."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from ...errors import InputError, ModelFileError
from ...kinds import Lowering, Phase
from ...train import MemoryParts, TrainingWorkload, TrainSetup
from ...workload import Note, NoteKind, Workload
from ..counter import report_unsupported
from ..library_models import LibraryModel
from ..lowering import channels_last_step, lower, saved_bytes
from ..model_file import ModelFile
from ..notes import count_notes, source_notes
from ..sources import ModelSource, load_model
from ..tensors import flat_tensors, itemsize
from .checkpointing import enable_checkpointing
from .lora import add_lora
from .step import COUNT_AS, UNSCALE, prepare_step, run_step


def _memory(module: torch.nn.Module, found, input_bytes: float) -> MemoryParts:
    tensors = list(module.parameters()) + list(module.buffers())
    peak = found.peak
    return MemoryParts(
        weights=float(sum(t.numel() * itemsize(t) for t in tensors)), gradients=peak.gradients,
        optimizer_state=found.state_bytes, activations=peak.activations, temporaries=peak.temporaries,
        inputs=input_bytes, rounding=peak.rounding, peak_op=peak.index, peak_phase=peak.phase,
        all_gradients=float(sum(p.numel() * itemsize(p) for p in module.parameters() if p.requires_grad)))


def _sync_op(ops) -> int:
    """The first operator after GradScaler's found-inf check (the host reads found_inf there), -1: none."""
    idx = [i for i, op in enumerate(ops) if op.name == UNSCALE]
    return idx[-1] + 1 if idx else -1


def _configure(module: torch.nn.Module, setup: TrainSetup, label: str) -> list[str]:
    notes = []
    if setup.lora is not None:
        n = add_lora(module, setup.lora, label)
        notes.append(f"{setup.lora.describe()}: {n} layers adapted, every other weight frozen")
    if setup.checkpointing:
        notes.append("gradient checkpointing: " + enable_checkpointing(module, label))
    return notes


def count_training(model: str | Path | ModelSource, batch: int = 1, setup: TrainSetup | None = None, *,
                   strict: bool = False, lowering: str = Lowering.PYTORCH_CUDA) -> TrainingWorkload:
    """Count one steady-state optimizer step of ``model`` at ``batch``: forward, loss, backward, optimizer
    (the state already made by an earlier step), each operator with its phase, and the step's memory."""
    setup = setup or TrainSetup()
    label = model.label if isinstance(model, (ModelFile, LibraryModel)) else str(model)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise ModelFileError(f"{label}: batch must be a positive integer, got {batch!r}")
    source = load_model(model)
    module = source.build(meta=True)
    if not all(t.is_meta for t in module.parameters()):
        raise InputError(f"{label}: the model cannot be built on the meta device, which training counting needs",
                         hint="build it without reading weights or values in build_model()")
    notes = _configure(module, setup, label)
    args, kwargs, run, input_bytes = prepare_step(module, source.inputs(batch, meta=True), setup, strict)
    user_loss = getattr(source.module, "loss", None) if isinstance(source, ModelFile) else None
    found = run_step(module, args, kwargs, run, setup, label, user_loss, isinstance(source, LibraryModel))
    ops = lower(lowering, run.recorder.records)
    if setup.channels_last and lowering == Lowering.PYTORCH_CUDA:   # inductor picks its own layout
        ops = channels_last_step(ops)
    unsupported = dict(sorted(run.recorder.unsupported.items()))
    report_unsupported(label, unsupported, strict)
    params = list(module.parameters())
    trainable = sum(p.numel() for p in params if p.requires_grad)
    w = Workload(
        name=source.stem, batch=batch, dtype=COUNT_AS[setup.precision][0], ops=ops, params=sum(p.numel() for p in params),
        param_bytes=float(sum(p.numel() * itemsize(p) for p in params)), input_bytes=input_bytes, activation_peak_bytes=found.peak.activations, unsupported_ops=unsupported,
        source=label, lowering=lowering, assumptions=tuple(run.host.assumptions), module_calls=run.modules.calls,
        python_calls=run.python.calls, empty_module_calls=run.modules.empty_calls,
        notes=count_notes(run.found, run.host.reads, False, False) + tuple(Note(NoteKind.INFO, n) for n in notes))
    if source.notes:
        w = replace(w, notes=w.notes + source_notes(source.notes))
    memory = _memory(module, found, input_bytes)
    if lowering == Lowering.INDUCTOR_CUDA:
        memory, note = _compiled_memory(memory, run.recorder.records)
        w = replace(w, notes=w.notes + (Note(NoteKind.INFO, note),))
    return TrainingWorkload(
        workload=w, setup=setup, memory=memory, trainable_params=int(trainable),
        frozen_params=int(sum(p.numel() for p in params) - trainable), loss=found.loss.what,
        autograd_nodes=found.nodes, optimizer_tensors=found.optimizer_tensors,
        host_syncs=int(setup.grad_scaler), sync_op=_sync_op(ops), tokens=_tokens(args, kwargs),
        recomputed_ops=_recomputed(ops))


def _compiled_memory(memory: MemoryParts, records) -> tuple[MemoryParts, str]:
    """The step's memory under ``torch.compile``: the activations held at the peak scaled by what the min-cut
    partitioner saves over what eager autograd saves (``lowering.remat``); the rest as eager's timeline."""
    eager, compiled = saved_bytes(list(records))
    if eager <= 0:
        return memory, "torch.compile: the backward reads no forward value; memory as eager's"
    share = compiled / eager
    note = (f"torch.compile saves {share:.0%} of the activation bytes eager autograd saves (AOTAutograd's min-cut "
            "recomputes fused operators in the backward)")
    return replace(memory, activations=memory.activations * share), note


def _recomputed(ops) -> int:
    """Operators checkpointing ran again: backward operators issued inside a module's forward (the autograd
    engine's own run outside every module), each launching a kernel."""
    return sum(1 for op in ops if op.phase == Phase.BACKWARD and op.module and op.kernels >= 1 and not op.internal)


def _tokens(args: tuple, kwargs: dict) -> int:
    """Tokens per step of a sequence model (integer token ids of shape (batch, seq)), else 0."""
    ids = [t for t in flat_tensors((args, kwargs)) if not t.is_floating_point() and t.dim() == 2]
    return int(ids[0].numel()) if ids else 0
