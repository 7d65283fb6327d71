"""An LLM's training step from its config or a preset, built analytically (no torch): ``build_training``
gives the same ``TrainingWorkload`` that counting a model file gives (``counting.training.count_training``),
for ``train.predict_training`` to put on any device.

One steady-state optimizer step of ``batch`` sequences of ``seq`` tokens: the forward (the builder's prefill
of ``seq`` tokens without a KV cache, the head over every token, ``train_forward.py``), cross-entropy over the
vocabulary per token, the backward (``train_backward.py``), the optimizer (``train/optimizer.py``), and the
step's memory at its high-water mark. Full fine-tuning trains every parameter; LoRA freezes them and trains
adapters A (r x in) and B (out x r) beside every linear layer of the attention and MLP blocks (or those named
by ``targets``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .. import opcosts as O
from ..errors import InputError
from ..kinds import OpKind, Phase
from ..train import TrainingWorkload, TrainSetup
from ..train.optimizer import UNSCALE, OptimizerStep, optimizer_step
from ..workload import Note, NoteKind, OpRecord, Workload
from .builder import check_sizes
from .config import LLMConfig
from .load import load_config
from .train_backward import TOKEN_ID_BYTES, StepGraph
from .train_forward import CAST, TRAIN_PRECISION, TrainPrecision, check_trainable, forward_ops
from .train_graph import Node, NodeKind, model_nodes
from .train_memory import Live

# Workload.dtype by training precision (as counting/training/step.py's COUNT_AS names them)
WORKLOAD_DTYPE = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "amp": "amp", "amp-bf16": "amp"}
NOT_EMITTED = ("transformers' KV-cache copies (its DynamicCache also runs in training unless use_cache=False)",
               "layout copies in the attention backward", "FlashAttention's dq accumulator (a workspace)")


@dataclass(frozen=True)
class Param:
    name: str
    numel: int
    trainable: bool


def parameters(nodes: list[Node], setup: TrainSetup) -> list[Param]:
    """Every parameter tensor, in the forward's order (a tied head shares the embedding's), LoRA's adapters
    beside the layer they adapt."""
    out = []
    for node in nodes:
        if node.kind == NodeKind.EMBEDDING:
            out.append(Param(node.name, node.rows * node.width, node.trainable))
        elif node.kind == NodeKind.NORM:
            out += [Param(f"{node.name}.{w}", node.width, node.trainable) for w in (("weight",) if node.rms
                                                                                   else ("weight", "bias"))]
        elif node.kind == NodeKind.LINEAR and not node.tied:
            out.append(Param(f"{node.name}.weight", node.n * node.k, node.trainable))
            if node.bias:
                out.append(Param(f"{node.name}.bias", node.n, node.trainable))
        if node.kind == NodeKind.LINEAR and node.adapted:
            r = setup.lora.rank
            out += [Param(f"{node.name}.lora_A", r * node.k, True), Param(f"{node.name}.lora_B", node.n * r, True)]
    return out


def _loss_forward(tp: TrainPrecision, setup: TrainSetup, t: int, vocab: int) -> list[OpRecord]:
    """Cross-entropy over the vocabulary per token: log-softmax and the NLL of each token's label (under
    autocast in fp32: ``cross_entropy`` is on its fp32 list, so the 16-bit logits are cast first), and
    GradScaler's scaling of the loss."""
    logits, logp = tp.lower_bytes, (4.0 if tp.autocast else tp.lower_bytes)
    ops = []
    if tp.autocast:
        ops.append(OpRecord(name=CAST, kind="elementwise", module="loss", flops=0.0, bytes_read=t * vocab * logits,
                            bytes_written=t * vocab * 4.0, dtype=tp.builder.stream))
    ops += [OpRecord(name="aten._log_softmax", kind="softmax", module="loss", flops=O.SOFTMAX * t * vocab,
                     bytes_read=t * vocab * logp, bytes_written=t * vocab * logp, dtype=tp.stream_dtype),
            OpRecord(name="aten.nll_loss_forward", kind="reduction", module="loss", flops=float(t),
                     bytes_read=t * logp + t * TOKEN_ID_BYTES, bytes_written=4.0, dtype=tp.stream_dtype)]
    if setup.grad_scaler:
        ops.append(OpRecord(name="aten.mul", kind="elementwise", module="grad_scaler", flops=1.0, bytes_read=4.0,
                            bytes_written=4.0, dtype="fp32"))
    return ops


def _check_lora(cfg: LLMConfig, setup: TrainSetup, nodes: list[Node]) -> None:
    if setup.lora is not None and not any(n.adapted for n in nodes):
        what = f"matching {', '.join(setup.lora.targets)}" if setup.lora.targets else "outside the output head"
        raise InputError(f"{cfg.name}: --lora found no linear layer {what}",
                         hint="targets are parts of module names: q_proj, k_proj, v_proj, o_proj, gate_proj, "
                              "up_proj, down_proj, self_attn, mlp")


def build_training(cfg: LLMConfig, batch: int, seq: int, setup: TrainSetup | None = None) -> TrainingWorkload:
    """One steady-state optimizer step of ``batch`` sequences of ``seq`` tokens, from ``cfg`` alone."""
    setup = setup or TrainSetup()
    check_trainable(cfg)
    check_sizes(cfg, "prefill", batch, seq)
    tp, t = TRAIN_PRECISION[setup.precision], batch * seq
    nodes = model_nodes(cfg, tp, setup, batch, seq)
    _check_lora(cfg, setup, nodes)
    ops = forward_ops(cfg, tp, setup, batch, seq)
    ops += _loss_forward(tp, setup, t, cfg.vocab_size)
    params = parameters(nodes, setup)
    trainable = [p.numel for p in params if p.trainable]
    opt = optimizer_step(trainable, setup, tp.param_bytes, "fp32" if tp.param_bytes == 4 else tp.builder.stream)
    live = Live(weights=sum(p.numel for p in params) * tp.param_bytes, optimizer_state=opt.state_bytes,
                inputs=2.0 * t * TOKEN_ID_BYTES, all_gradients=sum(trainable) * tp.param_bytes)
    graph = StepGraph(cfg, tp, setup, batch, seq, nodes, live, ops,
                      {op.module: op for op in ops if op.kind == OpKind.ATTENTION})
    graph.forward()
    logits = t * cfg.vocab_size * tp.lower_bytes
    live.alloc("activations", logits)
    live.mark(len(ops) - 1, Phase.FORWARD)
    graph.backward(logits)
    _optimizer(ops, opt, live)
    if setup.precision == "tf32":   # the builder's products are fp32: TF32 runs them
        ops = [replace(op, dtype="tf32") if op.kind == OpKind.MATMUL and op.dtype == "fp32" else op for op in ops]
    return _assemble(cfg, batch, seq, setup, tp, ops, params, live, graph, opt.tensors)


def _optimizer(ops: list[OpRecord], opt: OptimizerStep, live: Live) -> None:
    """The optimizer's operators after the backward; foreach Adam's sqrt(v) list is alive from its pass to
    the last (the high-water mark of a weight-bound step)."""
    start = len(ops)
    ops.extend(opt.ops)
    sqrt = next((i for i, op in enumerate(opt.ops) if op.name == "aten._foreach_sqrt"), None)
    if sqrt is not None:
        live.alloc("temporaries", opt.temporary_bytes)
        live.mark(start + sqrt, Phase.OPTIMIZER)
        live.free("temporaries", opt.temporary_bytes)
    else:
        live.mark(len(ops) - 1, Phase.OPTIMIZER)


def _assemble(cfg: LLMConfig, batch: int, seq: int, setup: TrainSetup, tp: TrainPrecision, ops: list[OpRecord],
              params: list[Param], live: Live, graph: StepGraph, tensors: int) -> TrainingWorkload:
    total = sum(p.numel for p in params)
    trained = sum(p.numel for p in params if p.trainable)
    unscale = [i for i, op in enumerate(ops) if op.name == UNSCALE]
    w = Workload(
        name=f"{cfg.name} training step, batch {batch} x {seq} tokens", batch=batch,
        dtype=WORKLOAD_DTYPE[setup.precision], ops=tuple(ops), params=total, param_bytes=total * tp.param_bytes,
        input_bytes=2.0 * batch * seq * TOKEN_ID_BYTES, activation_peak_bytes=live.peak.activations,
        source=cfg.source, notes=_notes(cfg, setup, tp), module_calls=module_calls(graph.nodes, cfg))
    return TrainingWorkload(
        workload=w, setup=setup, memory=live.peak, trainable_params=trained, frozen_params=total - trained,
        loss=f"cross-entropy over {cfg.vocab_size} classes per token",
        autograd_nodes=autograd_nodes(graph.nodes, graph.rg, tp, sum(p.trainable for p in params)),
        optimizer_tensors=tensors, host_syncs=int(setup.grad_scaler), sync_op=unscale[-1] + 1 if unscale else -1,
        tokens=batch * seq, recomputed_ops=graph.recomputed, recompute=frozenset(graph.recompute))


# autograd nodes behind each forward node in Hugging Face's code: a linear is view, t, mm, view; RMSNorm
# six (eight with its casts at 16 bits); rotary mul, neg, two slices, cat, mul, add; attention the views and
# transposes of q, k, v and of its output around one node; the loss its flatten, log-softmax and NLL.
_NODES = {NodeKind.EMBEDDING: 1, NodeKind.LINEAR: 4, NodeKind.ROTARY: 7, NodeKind.ATTENTION: 9, NodeKind.ACT: 1,
          NodeKind.MUL: 1, NodeKind.ADD: 1, NodeKind.SPLIT: 1, NodeKind.LOSS: 3}
_ADAPTER_NODES = 10   # A and B (four each), the scale and the sum


def autograd_nodes(nodes: list[Node], rg: dict[str, bool], tp: TrainPrecision, trainable_tensors: int) -> int:
    """Nodes the autograd engine runs in one backward (host work per node in eager mode), AccumulateGrad of
    every trainable tensor included."""
    total = trainable_tensors
    for node in nodes:
        if not rg.get(node.parts[0][0] if node.parts else node.name):
            continue
        if node.kind == NodeKind.NORM:
            total += (6 if tp.stream_bytes == 4 else 8) if node.rms else 1
        else:
            total += _NODES.get(node.kind, 1) + (_ADAPTER_NODES if node.adapted else 0)
    return total


def module_calls(nodes: list[Node], cfg: LLMConfig) -> int:
    """nn.Module calls of one forward of Hugging Face's ``...ForCausalLM``: the model, its body, the
    embedding (and rotary table), then per layer the layer, its attention and MLP and each norm, linear and
    activation; a LoRA-adapted linear is four (the wrapper, the base, A, B)."""
    calls = 4 + 3 * cfg.num_layers   # the model, its body, the embedding, the rotary (or position) table
    for node in nodes:
        if node.kind in (NodeKind.NORM, NodeKind.ACT):
            calls += 1
        elif node.kind == NodeKind.LINEAR:
            calls += 4 if node.adapted else 1
    return calls


def _notes(cfg: LLMConfig, setup: TrainSetup, tp: TrainPrecision) -> tuple[Note, ...]:
    notes = [Note(NoteKind.PRECISION, f"training precision {setup.precision}: parameters, gradients and "
                                      f"optimizer state at {int(tp.param_bytes)} bytes, matrix products in "
                                      f"{tp.matmul_dtype}"),
             Note(NoteKind.INFO, "built from the config as Hugging Face's plain PyTorch code runs it (no torch "
                                 "counted): no KV cache, the head over every token, cross-entropy at the "
                                 "logits' dtype (transformers' own loss upcasts them to fp32 first)"),
             Note(NoteKind.INFO, "not emitted: " + "; ".join(NOT_EMITTED))]
    if setup.lora is not None:
        notes.append(Note(NoteKind.INFO, f"{setup.lora.describe()}: base weights frozen (no weight gradient, "
                                         "no optimizer state), adapters trained"))
    if setup.checkpointing:
        notes.append(Note(NoteKind.INFO, "gradient checkpointing: each decoder layer keeps its input and "
                                         "recomputes its forward before its backward"))
    return tuple(notes)


def training_workload(spec: str | Path | LLMConfig, batch: int, seq: int, setup: TrainSetup | None = None, *,
                      strict: bool = False) -> TrainingWorkload:
    """``build_training`` of a preset name or a config.json (``load_config``), or of an ``LLMConfig``."""
    cfg = spec if isinstance(spec, LLMConfig) else load_config(spec, strict=strict)
    return build_training(cfg, batch, seq, setup)
